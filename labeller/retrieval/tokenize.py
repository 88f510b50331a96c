"""The tokenizer every lexical retriever shares.

It is written here rather than taken from a library so that an index, and therefore every run and
every regression baseline, does not change when a dependency updates its stopword list or stemmer.
"""

from __future__ import annotations

import re
import unicodedata

_WORD = re.compile(r"[^\W_]+")

STOPWORDS = frozenset("""
a an and are as at be by for from has have in into is it its of on or that the their this to was were
will with w x per via
""".split())


def _fold(token: str) -> str:
    """Fold simple English plurals so 'cartridges' meets 'cartridge'; short tokens and -ss words stay."""
    if len(token) <= 3 or token.isdigit():
        return token
    if token.endswith("ies"):
        return token[:-3] + "y"
    if token.endswith("s") and not token.endswith(("ss", "us", "is")):
        return token[:-1]
    return token


def tokenize(text: str) -> list[str]:
    """Lower-cased, accent-free word tokens of two characters or more, stopwords dropped, plurals folded."""
    text = unicodedata.normalize("NFKD", text.casefold())
    text = "".join(ch for ch in text if not unicodedata.combining(ch))
    return [_fold(tok) for tok in _WORD.findall(text) if len(tok) > 1 and tok not in STOPWORDS]
