"""Metric names as a user types them (`ndcg@10,recall@100,mrr@10,map`) and their ranx names.

ranx counts a judgment as relevant when its gain is >= 1 unless the name carries a level
(`recall@100-l3`). labeller hands ranx gains of grade - 1 (grade 1 = not relevant = gain 0), so:
- NDCG is graded: every grade above 1 is a gain (linear `ndcg`, as trec_eval; or exponential
  `ndcg_burges`, 2^gain - 1). --relevant-from does not change it.
- recall, precision, MRR, hit rate and MAP are binary: relevant means grade >= --relevant-from,
  passed to ranx explicitly as level `relevant_from - 1`.
A metric without `@k` looks at the whole ranking (trec_eval's `map`, `recip_rank`).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from labeller.errors import BadInputError
from labeller.evaluation.trec_names import from_trec_eval
from labeller.records import GRADE_MAX, GRADE_MIN

_KINDS = {
    "ndcg": "ndcg", "recall": "recall", "r": "recall", "precision": "precision", "p": "precision",
    "mrr": "mrr", "rr": "mrr", "hit_rate": "hit_rate", "hitrate": "hit_rate", "success": "hit_rate",
    "map": "map", "ap": "map",
}
_RANX_FUNCTIONS = {"ndcg": "ndcg", "recall": "recall", "precision": "precision", "mrr": "reciprocal_rank",
                   "hit_rate": "hit_rate", "map": "average_precision"}
SUPPORTED = "ndcg@k, recall@k, precision@k, mrr[@k], hit_rate@k, map[@k]"
GAINS = ("linear", "exponential")
_GLUED_CUTOFF = re.compile(r"^(?P<measure>[A-Za-z_]+?)(?P<k>\d+)$")


@dataclass(frozen=True)
class MetricSpec:
    name: str  # exactly as the user wrote it: the key in every output
    kind: str  # ndcg | recall | precision | mrr | hit_rate | map
    k: int  # cutoff; 0 = the whole ranking

    @property
    def graded(self) -> bool:
        return self.kind == "ndcg"

    def level(self, relevant_from: int) -> int:
        """ranx's relevance level: gain >= 1 for NDCG (ranx's default), ours - 1 for binary metrics."""
        return 1 if self.graded else relevant_from - GRADE_MIN

    def ranx_call(self, relevant_from: int, gain: str = "linear") -> tuple[str, int, int]:
        """(ranx.metrics function name, k, level): what ranx.evaluate would call for ranx_name()."""
        name = "ndcg_burges" if self.graded and gain == "exponential" else _RANX_FUNCTIONS[self.kind]
        return name, self.k, self.level(relevant_from)

    def ranx_name(self, relevant_from: int, gain: str = "linear") -> str:
        base = {"ndcg": "ndcg_burges" if gain == "exponential" else "ndcg"}.get(self.kind, self.kind)
        cut = f"@{self.k}" if self.k else ""
        # ranx's default level 1 is exactly "gain >= 1" for NDCG; binary metrics get ours explicitly.
        return f"{base}{cut}" if self.graded else f"{base}{cut}-l{relevant_from - GRADE_MIN}"


def parse_metric(name: str) -> MetricSpec:
    raw = name.strip()
    base, sep, cut = from_trec_eval(raw).partition("@")  # trec_eval's names too: ndcg_cut_10, P_10, recip_rank
    kind = _KINDS.get(base.strip().lower())
    if kind is None or "-l" in raw:
        hint = " (relevance levels come from --relevant-from, not the name)" if "-l" in raw else ""
        glued = _GLUED_CUTOFF.match(raw)  # P10, ndcg10, recall100: the cutoff without its @
        glued_kind = glued and (_KINDS.get(glued["measure"].lower().rstrip("_"))
                                or _KINDS.get(from_trec_eval(glued["measure"].rstrip("_"))))
        close = difflib.get_close_matches(base.strip().lower(), _RANX_FUNCTIONS, n=1, cutoff=0.6)
        if glued_kind and not hint:
            hint = f" (did you mean {glued_kind}@{int(glued['k'])}?)"
        elif close and not hint:
            hint = f" (did you mean {close[0]}{sep}{cut}?)"
        raise BadInputError(f"unknown metric '{raw}'{hint}; expected one of {SUPPORTED}", field="metrics")
    k = 0
    if sep:
        try:
            k = int(cut)
        except ValueError:
            k = -1
        if k < 1:
            raise BadInputError(f"metric '{raw}': cutoff '{cut}' is not a positive integer", field="metrics")
    return MetricSpec(name=raw, kind=kind, k=k)


def parse_metrics(text: str | list[str]) -> list[MetricSpec]:
    """'ndcg@10,recall@100' -> specs, in order, duplicates folded."""
    items = text.split(",") if isinstance(text, str) else [p for t in text for p in t.split(",")]
    specs: dict[str, MetricSpec] = {}
    for item in items:
        if item.strip():
            spec = parse_metric(item)
            specs.setdefault(spec.name, spec)
    if not specs:
        raise BadInputError(f"no metrics given; expected e.g. ndcg@10,recall@100 ({SUPPORTED})", field="metrics")
    return list(specs.values())


def check_relevant_from(relevant_from: int) -> int:
    if not GRADE_MIN < relevant_from <= GRADE_MAX:
        raise BadInputError(f"--relevant-from {relevant_from} is out of range; expected a grade from "
                            f"{GRADE_MIN + 1} to {GRADE_MAX} (grade {GRADE_MIN} means not relevant)",
                            field="relevant_from")
    return relevant_from


def check_gain(gain: str) -> str:
    if gain not in GAINS:
        raise BadInputError(f"gain '{gain}' is unknown; expected linear or exponential", field="gain")
    return gain


def cutoffs(specs: list[MetricSpec]) -> list[int]:
    """The distinct cutoffs among the metrics (for judged@k); 10 when none has one."""
    return sorted({s.k for s in specs if s.k}) or [10]
