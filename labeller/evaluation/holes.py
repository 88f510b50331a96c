"""--fill-holes: label exactly the unjudged pairs in the top k before scoring.

A new retriever that returns documents nobody graded would otherwise be scored as if they were
not relevant. The holes of every run (and of a baseline run) in the top `depth` of each judged
query go through the labelling engine and its verdict cache, so a pair is paid for once: a second
evaluation sends nothing. Existing judgments always win over new labels. Queries without any
judgment are left alone: they are not part of the evaluation (trec_eval skips them too).
"""

from __future__ import annotations

import pandas as pd

from labeller.errors import BadInputError, BudgetExceededError, JudgeError, LabellingFailedError
from labeller.evaluation.judged import holes
from labeller.evaluation.qrels import Judgments
from labeller.evaluation.results import HoleFilling
from labeller.evaluation.runs import Ranking
from labeller.io.memory import InMemory
from labeller.labelling.models import LabelInputs
from labeller.records import Pair


def find_holes(rankings: list[Ranking], judgments: Judgments, depth: int) -> list[Pair]:
    """Unjudged pairs in the top `depth` of every judged query of every ranking, once each."""
    found: dict[tuple[str, str], Pair] = {}
    for ranking in rankings:
        judged_queries = sorted(judgments.grades.keys() & ranking.docs.keys())
        for pair in holes(ranking, judgments, depth, judged_queries):
            found.setdefault((pair.query_id, pair.doc_id), pair)
    return list(found.values())


def fill_holes(rankings: list[Ranking], judgments: Judgments, depth: int, judge: str,
               inputs: LabelInputs) -> tuple[Judgments, HoleFilling, list]:
    """Label the holes with `judge` through labelling.label_job, the engine `labeller label` runs: `inputs` holds
    the queries, corpus, rubric, store and judge settings, and `out` where the new labels are also written (None:
    nowhere); its pairs are the holes. Returns (judgments with the new labels, what happened, the failures). A
    judge that stops (--max-cost, a fatal error) or pairs it cannot grade leave those holes unjudged, as counted."""
    from labeller.labelling.job import label_job
    from labeller.rubric import load_rubric

    if depth < 1:
        raise BadInputError(f"--depth {depth} must be at least 1", field="depth")
    pairs = find_holes(rankings, judgments, depth)
    record = HoleFilling(judge=judge, rubric=load_rubric(inputs.rubric).name, depth=depth, holes=len(pairs),
                         labelled=0, from_cache=0, new=0, failed=0, cost_usd=0.0)
    if not pairs:  # nothing to send: no judge is built, so no API key is needed
        return judgments, record, []
    to_label = InMemory(f"the unjudged pairs in the runs' top {depth}", "holes",
                        frame=pd.DataFrame({"query_id": [p.query_id for p in pairs],
                                            "doc_id": [p.doc_id for p in pairs]}))
    try:
        run = label_job(inputs.model_copy(update={"pairs": to_label, "run": None, "depth": None}), judge)
    except (JudgeError, BudgetExceededError, LabellingFailedError) as stopped:
        run = stopped.run  # type: ignore[attr-defined]
    except BadInputError as exc:
        if exc.path != str(to_label) or exc.line is None:
            raise
        raise _unknown(pairs[exc.line - 1], exc.field, rankings, inputs) from None
    s = run.stats
    record = record.model_copy(update=dict(judge=run.labels[0].judge if run.labels else judge,
                                           labelled=len(run.labels), from_cache=s.cached, new=s.new,
                                           failed=len(run.failures), cost_usd=s.cost_usd, saved_to=run.out_path,
                                           stopped="budget" if s.budget_stopped else s.stopped_by))
    return judgments.with_labels(run.labels), record, run.failures


def _unknown(pair: Pair, field: str | None, rankings: list[Ranking], inputs: LabelInputs) -> BadInputError:
    """A hole whose query (`field` query_id) or document the texts lack, named by the run that retrieved it."""
    source = next((r.source for r in rankings if pair.query_id in r.docs), None)
    if field == "query_id":
        return BadInputError(f"query '{pair.query_id}' of the run has holes to fill but is not in the queries file "
                             f"{inputs.queries}; expected every judged query there", path=source, field="query_id")
    return BadInputError(f"document '{pair.doc_id}' (query '{pair.query_id}') is not in the corpus file "
                         f"{inputs.corpus}; expected every retrieved document there", path=source, field="doc_id")
