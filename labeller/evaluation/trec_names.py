"""trec_eval's own measure names, accepted beside labeller's: `ndcg_cut_10` is `ndcg@10`.

trec_eval (and pytrec_eval, ir_measures' trec_eval backend) name a cutoff with an underscore or a
dot: ndcg_cut_10 / ndcg_cut.10, P_10 / P.10, recall_100, map_cut_10, success_10, and the whole
ranking without one: ndcg, map, recip_rank. Output keys stay exactly as the user typed them.
"""

from __future__ import annotations

import re

# trec_eval measure -> labeller's metric kind (see labeller.evaluation.metrics)
_TREC_MEASURES = {"ndcg_cut": "ndcg", "ndcg": "ndcg", "p": "precision", "recall": "recall", "map_cut": "map",
                  "map": "map", "recip_rank": "mrr", "success": "hit_rate"}
_PATTERN = re.compile(r"^(?P<measure>[A-Za-z_]+?)(?:[_.](?P<k>\d+))?$")


def from_trec_eval(name: str) -> str:
    """'ndcg_cut_10' -> 'ndcg@10', 'P.5' -> 'precision@5', 'recip_rank' -> 'mrr'; other names unchanged."""
    raw = name.strip()
    if "@" in raw:
        return raw
    match = _PATTERN.match(raw)
    if not match:
        return raw
    kind = _TREC_MEASURES.get(match["measure"].lower())
    if kind is None or (match["k"] is None and match["measure"].lower() in ("ndcg_cut", "map_cut", "p", "success")):
        return raw  # a cutoff measure needs its cutoff; leave the name for the usual error
    return f"{kind}@{match['k']}" if match["k"] else kind


def per_query_text(result) -> str:
    """The main run as `trec_eval -q` prints it: `measure<TAB>query<TAB>value` for every evaluated
    query (in query-id order), then `measure<TAB>all<TAB>mean`, the trec_eval-comparable mean (no-answer
    queries included). Measures keep the names they were asked by, so `-m ndcg_cut_10` diffs cleanly."""
    lines = []
    for metric, values in result.per_query.items():
        lines += [f"{metric:<22}\t{qid}\t{value:.4f}" for qid, value in sorted(values.items())]
        mean = result.trec_eval.get(metric)
        lines.append(f"{metric:<22}\tall\t{'nan' if mean is None else f'{mean:.4f}'}")
    return "\n".join(lines) + "\n"
