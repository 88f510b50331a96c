"""Grade probabilities from one request: the judge's token log-probabilities at the grade's position.

An OpenAI-compatible server asked for `logprobs: true, top_logprobs: N` (OpenAI's models that allow them,
vLLM, llama.cpp's server) returns, for each token of the reply, its log-probability and the N likeliest
tokens that could have stood there. The grade is one token of the structured JSON reply (`"grade": 3`):
found by rebuilding the reply's text from its tokens and locating the value after the `"grade"` key. At
that token the alternatives that would have written another grade (the same text before the digit, whitespace
aside, then "1".."5", then nothing that continues the number) are summed per grade and normalised over 1..5: the
probability mass the top N leave out is not guessed at. A reply whose grade cannot be found among its
tokens, or whose alternatives name no grade, has no distribution (None), never a made-up one.

From the distribution: the expected grade (sum of g * p) and its entropy in bits (0: certain; log2(5) =
2.32: every grade alike). `--samples auto` asks more samples where the entropy is above ENTROPY_SPREAD.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from labeller.records import GRADE_MAX, GRADE_MIN

GRADES = tuple(str(g) for g in range(GRADE_MIN, GRADE_MAX + 1))
DEFAULT_TOP_LOGPROBS = 10  # alternatives asked per token; OpenAI allows 0..20
MAX_TOP_LOGPROBS = 20
# A distribution is "spread" above this entropy (bits): e.g. 0.9/0.1 between two grades is 0.47 bits (settled),
# 0.85/0.15 is 0.61 (spread). --samples auto asks a second sample for a spread pair.
ENTROPY_SPREAD = 0.5
_GRADE_VALUE = re.compile(r'"grade"\s*:\s*(\d)')
DIGITS = 6  # probabilities, expected grades and entropies are rounded to this many decimals


def grade_distribution(tokens: Sequence[Any] | None) -> dict[str, float] | None:
    """{"1": p1, ..., "5": p5} at the grade's token of a reply's logprobs.content (objects with token,
    logprob and top_logprobs), or None when the reply has none or the grade's token cannot be read."""
    if not tokens:
        return None
    texts = [t.token or "" for t in tokens]
    found = None
    for found in _GRADE_VALUE.finditer("".join(texts)):
        pass  # the last "grade" key: the reply's own, after any quoted in the justification
    if found is None:
        return None
    at, start = found.start(1), 0
    for token, text in zip(tokens, texts):
        if start + len(text) > at:
            return _at_token(token, text, at - start)
        start += len(text)
    return None


def _at_token(token: Any, text: str, offset: int) -> dict[str, float] | None:
    """The grade mass among a token's alternatives: those with the chosen token's text before the digit."""
    before = "".join(text[:offset].split())  # whitespace aside: '": 4' and '":4' are the same grade
    mass = dict.fromkeys(GRADES, 0.0)
    for alt in token.top_logprobs or [{"token": text, "logprob": token.logprob}]:
        alt_text = (alt.token if hasattr(alt, "token") else alt["token"]) or ""
        logprob = alt.logprob if hasattr(alt, "logprob") else alt["logprob"]
        stripped = "".join(alt_text.split())
        if not stripped.startswith(before) or logprob is None:
            continue
        rest = stripped[len(before):]
        if rest[:1] in mass and not rest[1:2].isdigit():
            mass[rest[:1]] += math.exp(logprob)
    total = sum(mass.values())
    if total <= 0:
        return None
    return {grade: round(p / total, DIGITS) for grade, p in mass.items()}


def expected_grade(probs: dict[str, float]) -> float:
    return round(sum(int(g) * p for g, p in probs.items()), DIGITS)


def grade_entropy(probs: dict[str, float]) -> float:
    """Shannon entropy in bits (0 for a certain grade)."""
    return round(abs(-sum(p * math.log2(p) for p in probs.values() if p > 0)), DIGITS)


def prob_columns(probs: dict[str, float], source: str = "logprobs") -> dict[str, Any]:
    """The label row's columns for a distribution (records.GRADE_PROB_COLUMNS)."""
    return {"grade_probs": probs, "expected_grade": expected_grade(probs), "grade_entropy": grade_entropy(probs),
            "grade_probs_source": source}


def sample_distribution(grades: Sequence[int]) -> dict[str, float]:
    """{"1": share, ..} of a pair's sample grades: the distribution where the judge gives no log-probabilities."""
    return {grade: round(sum(str(g) == grade for g in grades) / len(grades), DIGITS) for grade in GRADES}
