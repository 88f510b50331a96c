"""Text statistics, query enhancement and lexical re-ranking for the retrieval-test API.

- tokens: the number of whitespace-separated words (not model wordpieces, which depend on a
  tokenizer the caller may not use).
- keywords: the passage's most frequent content words (lowercased, English stopwords and
  one-character words dropped), ties broken by first appearance.
- query enhancement (`enhance`): normalise the query (lowercase, punctuation to spaces, stopwords
  dropped) and expand each remaining word with its singular/plural counterpart
  ("invoices" adds "invoice", "receipt" adds "receipts"). Deterministic and documented, so a
  difference between the original and enhanced variants is explainable.
- re-ranking (`rerank`): a lexical re-ranker over a candidate pool of 3 x top_k. Each passage
  scores the share of the query's distinct content words (singular/plural folded) it contains;
  passages are sorted by that share, ties kept in the retriever's order, and the top_k kept.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from labeller.retrieval.base import Hit

RERANK_POOL = 3

STOPWORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being below between both
but by can could did do does doing done down during each few for from further had has have having he her here
hers him his how i if in into is it its itself just me more most my no nor not now of off on once only or other
our out over own same she should so some such than that the their them then there these they this those through
to too under until up very was we were what when where which while who whom why will with would you your
""".split())

_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def token_count(text: str) -> int:
    return len(text.split())


def content_words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if len(w) > 1 and w not in STOPWORDS]


def keywords(text: str, n: int = 5) -> list[str]:
    counts = Counter(content_words(text))
    first = {w: i for i, w in reversed(list(enumerate(content_words(text))))}
    return sorted(counts, key=lambda w: (-counts[w], first[w]))[:n]


def singular(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def plural(word: str) -> str:
    if word.endswith("y") and len(word) > 2 and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    return word + ("es" if word.endswith(("s", "x", "z", "ch", "sh")) else "s")


def enhance(query: str) -> str:
    """The enhanced query variant: normalised content words, each with its number counterpart."""
    out: list[str] = []
    for word in content_words(query):
        if word.isdigit():
            variants = [word]
        else:
            base = singular(word)
            variants = [word, base if base != word else plural(word)]
        out += [v for v in variants if v not in out]
    return " ".join(out) or query


def rerank(query: str, hits: Sequence[Hit], top_k: int) -> list[tuple[Hit, float]]:
    """Sort candidates by the share of query content words they contain; returns (hit, rerank score)."""
    terms = {singular(w) for w in content_words(query)}
    scored = []
    for rank, hit in enumerate(hits):
        words = {singular(w) for w in content_words(hit.text)}
        share = len(terms & words) / len(terms) if terms else 0.0
        scored.append((-share, rank, hit))
    scored.sort(key=lambda t: (t[0], t[1]))
    return [(hit, -neg) for neg, _, hit in scored[:top_k]]
