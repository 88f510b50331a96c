"""The cache key: a hash of everything that changes a verdict and nothing that doesn't.

In: provider, model, base URL (as the judge shows it: credentials masked, see labeller.redaction),
decoding settings actually sent (the output mode's response_format or tools among them), schema
version, the rendered prompt (which carries the rubric text and the query and document text and
fields), and what a local server says it serves under the model name (its /v1/models entry) when it
says anything: another GGUF behind the same URL and name is another judge. Keys without a served
identity are exactly what they were before it existed, so OpenAI's API keeps its cached verdicts.
Out: timeouts, retries, concurrency, rate limits, API keys, passwords and tokens in the base URL.

`sample` (self-consistency, `--samples N`): sample k > 0 of a pair is its own verdict, so k is hashed
too; sample 0 is hashed exactly as before, so caches written without --samples stay valid.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from labeller.judges.base import SCHEMA_VERSION
from labeller.rubric import JudgePrompt


def key_material(*, provider: str, model: str, base_url: str | None, settings: dict[str, Any],
                 prompt: JudgePrompt, schema_version: str = SCHEMA_VERSION, sample: int = 0,
                 served: str | None = None) -> str:
    """The exact text cache_key hashes."""
    material = {
        "schema": schema_version,
        "provider": provider,
        "model": model,
        "base_url": (base_url or "").rstrip("/"),
        "settings": settings,
        "system": prompt.system,
        "user": prompt.user,
    }
    if sample:
        material["sample"] = sample
    if served:
        material["served"] = served
    return json.dumps(material, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def judge_fields(judge: Any, settings: dict[str, Any], served: str | None) -> dict[str, Any]:
    """The judge's part of every cache key: the synchronous path (labelling.planning) and the batch path
    (labelling.batched, `batch export/import`) both key through this, so a verdict bought one way answers
    the other. `served` is judge.served_identity(), asked by both."""
    return {"provider": judge.provider, "model": judge.model, "base_url": judge.base_url, "settings": settings,
            "served": served}


def cache_key(*, provider: str, model: str, base_url: str | None, settings: dict[str, Any],
              prompt: JudgePrompt, schema_version: str = SCHEMA_VERSION, sample: int = 0,
              served: str | None = None) -> str:
    blob = key_material(provider=provider, model=model, base_url=base_url, settings=settings, prompt=prompt,
                        schema_version=schema_version, sample=sample, served=served)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


_HOLE = "\x00labeller:user\x00"  # stands in for the user text; JSON writes it as an escape no real text yields
# Bytes that json.dumps(ensure_ascii=False) writes as an escape, but for the newline (prompts are full of
# them): text without any of these is its own JSON string body once each newline is written as \\n (UTF-8
# never uses these byte values inside a multi-byte character).
_ESCAPED_BUT_NEWLINE = bytes(b for b in range(0x20) if b != 0x0A) + b'"\\'
_quote = json.JSONEncoder(ensure_ascii=False).encode  # json.dumps(text, ensure_ascii=False), built once


def _json_body(text: str) -> bytes:
    """json.dumps(text, ensure_ascii=False) without its quotes, as UTF-8. JSON escapes character by
    character, so the body of a + b is the body of a then the body of b."""
    raw = text.encode("utf-8")
    if len(raw.translate(None, _ESCAPED_BUT_NEWLINE)) == len(raw):  # two C scans instead of json's loop
        return raw.replace(b"\n", b"\\n")
    return _quote(text)[1:-1].encode("utf-8")


class UserKeyer:
    """cache_key(**fields) as a function of the user text alone (fields["prompt"] gives the system text),
    for a run whose prompts share everything else. The same bytes are hashed: the JSON around the user
    text is written once and the hash of its head reused, so a pair costs one string escape and one
    hash update instead of a whole json.dumps of the material.

    keyer(user) is the key of one user text. For many texts that start alike (the pairs of one query),
    keyer.key(keyer.start(head), rest) is keyer(head + rest), with head hashed only once."""

    def __init__(self, **fields: Any) -> None:
        self._system = fields.pop("prompt").system
        self._fields = fields
        blob = key_material(**fields, prompt=JudgePrompt(system=self._system, user=_HOLE))
        hole = json.dumps(_HOLE, ensure_ascii=False)
        # Never expected otherwise (a system prompt holding the placeholder itself): then every key is the
        # whole computation, and the states are the texts so far.
        self._exact = blob.count(hole) == 1
        head, tail = blob.split(hole) if self._exact else ("", "")
        self._head: Any = hashlib.sha256(head.encode("utf-8") + b'"') if self._exact else ""
        self._tail = b'"' + tail.encode("utf-8")  # from the user text's closing quote to the end

    def __call__(self, user: str) -> str:
        return self.key(self._head, user)

    def start(self, head: str) -> Any:
        """The hash state after the first part of user texts (copied, never changed, by key())."""
        if not self._exact:
            return head
        state = self._head.copy()
        state.update(_json_body(head))
        return state

    @property
    def exact(self) -> bool:
        """Whether the states are hash states (key_of_body() needs them)."""
        return self._exact

    def ending(self, after: str) -> bytes:
        """What key_of_body() hashes after a body: `after`, as JSON writes it, then the rest of the material."""
        return _json_body(after) + self._tail

    def key_of_body(self, state: Any, body: bytes, ending: bytes) -> str:
        """key(state, text + after) given `body`, text as JSON writes it without quotes (UTF-8), and ending(after)."""
        digest = state.copy()
        digest.update(body)
        digest.update(ending)
        return digest.hexdigest()

    def key(self, state: Any, rest: str) -> str:
        """The key of the user text whose first part made `state` (start()) and whose rest is `rest`."""
        if not self._exact:
            return cache_key(**self._fields, prompt=JudgePrompt(system=self._system, user=state + rest))
        digest = state.copy()
        digest.update(_json_body(rest))
        digest.update(self._tail)
        return digest.hexdigest()


user_keyer = UserKeyer  # the name callers know
