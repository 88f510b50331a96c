"""`offline:lexical`: a deterministic lexical-overlap heuristic. Not an LLM, not a model of meaning.

It exists so the demo and the tests run anywhere, with no key and no network. It reads the
structured pair (the fields the rubric shows on each side) and compares each field the query and
the document share:

- free text (the `text` field, or any value of four or more words): the share of the query's
  distinct content words found in the document (words lowercased, stopwords dropped, lightly
  stemmed: plural and -ing/-ed endings), raised by up to half when the query's adjacent word
  pairs also appear adjacent in the document (phrases), capped at 1.
- numbers (amounts, VAT rates, in any field where both sides parse as numbers):
  1 when equal within 1%, 0.7 within 10%, 0.3 within 50%, else 0.
- short values (supplier, category, VAT code, ...): 1 when equal after normalising case and
  punctuation, the word overlap (Jaccard) otherwise.
- dates (ISO on both sides) are not compared: when something happened says nothing about what it is.

Field scores are averaged with weights (free text 2, short values 2, numbers 1) into a score in
[0, 1], mapped to a grade by fixed thresholds: < 0.2 → 1, < 0.4 → 2, < 0.6 → 3, < 0.8 → 4,
else 5. The thresholds were set in advance as equal fifths, not fitted to any labelled data;
its agreement with human labels is measured and published in the README.
"""

from __future__ import annotations

import re
from typing import Any

from labeller.errors import JudgeError
from labeller.judges.base import Judge, JudgeReply
from labeller.records import Doc, Query, Verdict
from labeller.rubric import JudgePrompt

THRESHOLDS = (0.2, 0.4, 0.6, 0.8)  # score below THRESHOLDS[i] → grade i + 1
WEIGHTS = {"text": 2.0, "value": 2.0, "number": 1.0}
LONG_TEXT_WORDS = 4

STOPWORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being below between both
but by can could did do does doing done down during each few for from further had has have having he her here
hers herself him himself his how i if in into is it its itself just me more most my myself no nor not now of off
on once only or other our ours ourselves out over own same she should so some such than that the their theirs
them themselves then there these they this those through to too under until up very was we were what when where
which while who whom why will with would you your yours yourself yourselves get got also may might must shall
""".split())

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$")
# A number with at most a currency code or symbol around it: "£23.99", "12 EUR", "20%", "1,200".
_NUMBER = re.compile(r"^([A-Za-z]{0,3}|[^\w\s]{0,2})\s*([-+]?\d[\d,]*(?:\.\d+)?)\s*(%|[A-Za-z]{0,3}|[^\w\s]{0,2})$")


def stem(word: str) -> str:
    """A light stemmer: enough to match plural and simple verb forms, never clever."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 5 and word.endswith("ing"):
        return word[:-3]
    if len(word) > 4 and word.endswith("ed"):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def words(text: str) -> list[str]:
    """Content words of a text, lowercased, stopwords removed, stemmed, in order."""
    return [stem(w) for w in _WORD.findall(text.lower()) if w not in STOPWORDS]


def text_overlap(query: str, doc: str) -> float:
    """Weighted share of the query's content words present in the document, plus phrase credit."""
    q, d = words(query), words(doc)
    if not q:
        return 0.0
    d_set = set(d)
    d_pairs = set(zip(d, d[1:]))
    unique = set(q)
    covered = len(unique & d_set) / len(unique)
    q_pairs = list(dict.fromkeys(zip(q, q[1:])))
    if not q_pairs:
        return covered
    phrases = sum(p in d_pairs for p in q_pairs) / len(q_pairs)
    return min(1.0, covered * (1.0 + 0.5 * phrases))


def as_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        match = _NUMBER.match(value.strip())
        if match:
            return float(match.group(2).replace(",", ""))
    return None


def number_closeness(a: float, b: float) -> float:
    scale = max(abs(a), abs(b))
    gap = 0.0 if scale == 0 else abs(a - b) / scale
    for limit, score in ((0.01, 1.0), (0.10, 0.7), (0.50, 0.3)):
        if gap <= limit:
            return score
    return 0.0


def value_match(a: str, b: str) -> float:
    wa, wb = _WORD.findall(a.lower()), _WORD.findall(b.lower())
    if wa == wb:
        return 1.0
    sa, sb = set(wa), set(wb)
    return len(sa & sb) / len(sa | sb) if sa | sb else 0.0


def _value(record: Query | Doc, name: str) -> Any:
    value = record.text if name == "text" else record.fields.get(name)
    return None if value is None or value == "" else value


def compare(query: Query, doc: Doc, query_fields: list[str], doc_fields: list[str]) -> list[tuple[str, str, float]]:
    """(field, kind, score) for every field shown on both sides and present on both."""
    out = []
    for name in [f for f in query_fields if f in doc_fields]:
        a, b = _value(query, name), _value(doc, name)
        if a is None or b is None or (_DATE.match(str(a)) and _DATE.match(str(b))):
            continue  # missing, or dates: when something happened says nothing about what it is
        na, nb = as_number(a), as_number(b)
        if na is not None and nb is not None:
            out.append((name, "number", number_closeness(na, nb)))
        elif name == "text" or max(len(str(a).split()), len(str(b).split())) >= LONG_TEXT_WORDS:
            out.append((name, "text", text_overlap(str(a), str(b))))
        else:
            out.append((name, "value", value_match(str(a), str(b))))
    # A rubric that shows different fields on each side still compares the two texts.
    if not out:
        out.append(("text", "text", text_overlap(query.text, doc.text)))
    return out


def grade_for(score: float) -> int:
    return 1 + sum(score >= t for t in THRESHOLDS)


class OfflineLexicalJudge(Judge):
    """Grades by lexical overlap between the fields a rubric shows. Deterministic; no key, no network."""

    provider = "offline"
    model = "lexical"

    def decoding_settings(self) -> dict[str, Any]:
        # The heuristic's version: change the scoring and old cached verdicts no longer match.
        return {"heuristic": "lexical-v1"}

    def grade(self, query: Query, doc: Doc, query_fields: list[str], doc_fields: list[str]) -> Verdict:
        parts = compare(query, doc, query_fields, doc_fields)
        total = sum(WEIGHTS[kind] for _, kind, _ in parts)
        score = sum(WEIGHTS[kind] * s for _, kind, s in parts) / total
        detail = ", ".join(f"{name} {s:.2f}" for name, _, s in parts)
        return Verdict(justification=f"lexical overlap heuristic (not an LLM): score {score:.2f} from {detail}.",
                       grade=grade_for(score))

    def settings_for(self, reply: Any = None) -> dict[str, Any]:
        if reply is None:
            return self.decoding_settings()
        from labeller.judges.offline_claims import HEURISTIC

        return {"heuristic": HEURISTIC, "reply": reply.schema_version}

    async def generate(self, prompt: JudgePrompt) -> JudgeReply:
        if prompt.reply is not None:  # a claim task (labeller.tasks.claims): its structured inputs are the context
            from labeller.judges import offline_claims

            context = prompt.context or {}
            if prompt.reply.name == "claim_split":
                payload = offline_claims.split_reply(context["answer"])
            elif prompt.reply.name == "claim_verdict":
                payload = offline_claims.verdict_reply(context["claim"], context["passage_ids"], context["passages"])
            else:
                raise JudgeError(f"offline:lexical has no heuristic for the {prompt.reply.name} task")
            return JudgeReply(verdict=prompt.reply.parse(payload, context))
        query = prompt.query or Query(query_id="q", text=_between(prompt.user, "query"))
        doc = prompt.doc or Doc(doc_id="d", text=_between(prompt.user, "document"))
        verdict = self.grade(query, doc, prompt.query_fields, prompt.doc_fields)
        return JudgeReply(verdict=verdict)


def _between(user: str, tag: str) -> str:
    start, end = user.find(f"<{tag}>"), user.find(f"</{tag}>")
    return user[start + len(tag) + 2:end].strip() if 0 <= start < end else user
