"""Input-token counts for budgets, rate limits and dry runs: a real tokenizer where one is at hand.

- OpenAI models: tiktoken, with the model family's encoding (o200k_base for gpt-4o/4.1/5/o-series,
  cl100k_base for older ones), but only when that encoding's file is already on disk. tiktoken
  downloads encodings on first use; labeller never triggers that (a budget check must not reach
  the network, and offline machines have no way to): it looks for the file in tiktoken's cache
  (TIKTOKEN_CACHE_DIR, else DATA_GYM_CACHE_DIR, else <tmp>/data-gym-cache) and checks its sha256
  first, exactly as tiktoken would. `python -c "import tiktoken; tiktoken.get_encoding('o200k_base')"`
  once on a machine with network fills that cache.
- Everything else (Anthropic publishes no tokenizer for its current models; OpenAI without the
  encoding file): a conservative count that never undercounts text outside ASCII. ASCII is about
  four characters a token in both families; every other character counts as a whole token (CJK
  runs near one token per character; the old characters/4 rule counted a quarter, which is how a
  --max-cost budget was overrun by 49% on Chinese text).
"""

from __future__ import annotations

import functools
import hashlib
import os
import tempfile
from pathlib import Path

from labeller.rubric import JudgePrompt

ASCII_CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD_TOKENS = 12  # role markers and the response schema around the two messages

# tiktoken's own registry (tiktoken_ext/openai_public.py): where each encoding comes from and its sha256.
# Reading the registry itself would construct the encoding, and so download it.
_ENCODINGS = {
    "o200k_base": ("https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
                   "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"),
    "cl100k_base": ("https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
                    "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"),
}


def conservative_tokens(text: str) -> int:
    """ASCII characters / 4 (rounded up), plus one token for every character outside ASCII."""
    ascii_chars = len(text.encode("ascii", "ignore"))
    return -(-ascii_chars // ASCII_CHARS_PER_TOKEN) + (len(text) - ascii_chars)


def tiktoken_cache_file(encoding: str) -> Path | None:
    """Where tiktoken keeps `encoding`'s file, when it is there and intact; None otherwise."""
    if encoding not in _ENCODINGS:
        return None
    url, sha256 = _ENCODINGS[encoding]
    directory = os.environ.get("TIKTOKEN_CACHE_DIR", os.environ.get("DATA_GYM_CACHE_DIR"))
    if directory == "":  # tiktoken's "no cache": it would download every time
        return None
    path = Path(directory or Path(tempfile.gettempdir()) / "data-gym-cache") / hashlib.sha1(url.encode()).hexdigest()
    try:
        intact = hashlib.sha256(path.read_bytes()).hexdigest() == sha256
    except OSError:
        return None
    return path if intact else None


def encoding_for(provider: str, model: str) -> str | None:
    """The tiktoken encoding of an OpenAI model, when tiktoken knows the family; None otherwise."""
    if provider != "openai":
        return None
    try:
        from tiktoken.model import encoding_name_for_model
    except ImportError:
        return None
    try:
        return encoding_name_for_model(model)
    except KeyError:
        return None


class TokenCounter:
    """Counts a prompt's input tokens for one judge. `method` says how, for reports."""

    def __init__(self, provider: str, model: str) -> None:
        self.encoder = None
        self._system: dict[str, int] = {}  # one rubric's system prompt is the same for every pair
        encoding = encoding_for(provider, model)
        if encoding is not None and tiktoken_cache_file(encoding) is not None:
            self.encoder = _load(encoding)
        self.method = (f"tiktoken {encoding}" if self.encoder is not None else
                       "estimate: ASCII characters / 4 + 1 per other character (no local tokenizer for this model)")

    def text(self, text: str) -> int:
        if self.encoder is not None:
            return len(self.encoder.encode(text, disallowed_special=()))
        return conservative_tokens(text)

    def prompt(self, prompt: JudgePrompt) -> int:
        return self.system(prompt) + self.text(prompt.user) + MESSAGE_OVERHEAD_TOKENS

    def system(self, prompt: JudgePrompt) -> int:
        if prompt.system not in self._system:
            self._system[prompt.system] = self.text(prompt.system)
        return self._system[prompt.system]


@functools.lru_cache(maxsize=4)
def _load(encoding: str):
    import tiktoken

    return tiktoken.get_encoding(encoding)  # reads the verified cache file: no network
