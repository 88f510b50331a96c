"""The offline judge's claim tasks: a deterministic sentence splitter and a lexical claim-support heuristic.

Not an LLM and not a model of meaning; it lets answer evaluation run anywhere with no key and no network.

- claim_split: the answer's sentences (split after . ! ? followed by a space and a capital or digit, and at line
  breaks and list bullets), bracketed citation markers ([d1], [1]) removed, sentences with no content word
  dropped. The answer abstains when it says so in one of a few fixed phrasings ("I don't know", "cannot find",
  "no information", "not able to", "not allowed", "do not have access", ...).
- claim_verdict: per passage, the share of the claim's content words (offline.text_overlap: stemmed, stopwords
  dropped, phrase credit) found in it, numbers compared apart. supported: share >= 0.7 and every number of the
  claim in the passage. contradicted: share (numbers left out) >= 0.6 and a number of the claim missing where
  the passage gives other numbers, or one side negated ("not", "no", "never") and the other not.
  not_supported otherwise.
"""

from __future__ import annotations

import re
from typing import Any

from labeller.judges.offline import text_overlap, words

HEURISTIC = "claims-lexical-v1"
SUPPORTED, WORDS_ONLY = 0.7, 0.6
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])")
_BULLET = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s+")
_CITATION = re.compile(r"\s*\[[^\[\]\s]{1,40}\]")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_NEGATION = re.compile(r"\b(?:not|no|never|none|neither|nor|cannot|can't|isn't|wasn't|aren't|doesn't|didn't|won't)\b",
                       re.IGNORECASE)
_ABSTAIN = re.compile(r"\b(?:i (?:do not|don't) know|(?:can ?not|can't|could not|couldn't|unable to) (?:find|answer|"
                      r"say|tell|determine|share)|no (?:relevant )?information|not able to|not allowed to|"
                      r"(?:do not|don't) have (?:access|permission|enough information)|not (?:in|covered by) the "
                      r"(?:provided |retrieved )?(?:documents|context|passages|sources))", re.IGNORECASE)


def split_sentences(answer: str) -> list[str]:
    """The answer's sentences, in order, citations removed; those with no content word dropped."""
    out = []
    for line in answer.splitlines():
        line = _BULLET.sub("", line).strip()
        for sentence in _SENTENCE_END.split(line):
            sentence = _CITATION.sub("", sentence).strip()
            if sentence and words(sentence):
                out.append(sentence)
    return out


def abstains(answer: str) -> bool:
    return bool(_ABSTAIN.search(answer))


def split_reply(answer: str) -> dict[str, Any]:
    claims = split_sentences(answer)
    abstained = abstains(answer)
    if abstained:  # the sentence that declines is not a factual claim
        claims = [claim for claim in claims if not abstains(claim)]
    return {"justification": f"sentence splitter (not an LLM): {len(claims)} sentence(s)"
                             + ("; the answer abstains" if abstained else ""),
            "abstained": abstained, "claims": claims}


def _numbers(text: str) -> set[str]:
    return {n.replace(",", "") for n in _NUMBER.findall(text)}


def _without_numbers(text: str) -> str:
    return _NUMBER.sub(" ", text)


def verdict_reply(claim: str, passage_ids: list[str], passages: list[str]) -> dict[str, Any]:
    numbers, negated = _numbers(claim), bool(_NEGATION.search(claim))
    supporting, contradicting, best = [], [], 0.0
    for pid, text in zip(passage_ids, passages):
        share = text_overlap(claim, text)
        best = max(best, share)
        other = _numbers(text)
        if share >= SUPPORTED and numbers <= other and negated == bool(_NEGATION.search(text)):
            supporting.append(pid)
        elif text_overlap(_without_numbers(claim), _without_numbers(text)) >= WORDS_ONLY and (
                (numbers and other and not numbers <= other) or negated != bool(_NEGATION.search(text))):
            contradicting.append(pid)
    if supporting:
        verdict, contradicting = "supported", []
    elif contradicting:
        verdict = "contradicted"
    else:
        verdict = "not_supported"
    named = ", ".join(supporting or contradicting) or "no passage"
    return {"justification": f"lexical claim-support heuristic (not an LLM): best word overlap {best:.2f}; "
                             f"{verdict} by {named}.",
            "verdict": verdict, "supporting": supporting, "contradicting": contradicting}
