"""Whose fault a failed task is, per query, by the gating metric (retrieval succeeded when its value >= ok_from):

- retrieval failed, task failed: retrieval's fault;
- retrieval succeeded, task failed: the agent's;
- retrieval failed, task succeeded: the metric over-penalises (or the task needs less than it asks);
- both fine.

Between two runs (a baseline and a candidate, each with the outcomes its retrieval led to), the tasks that
newly fail are split by what retrieval did to them: lost their evidence (ok on the baseline, failed on the
run), kept it (the agent changed), or never had it. A retrieval change on queries whose task did not newly
fail is counted apart and blamed on nothing.
"""

from __future__ import annotations

from collections.abc import Mapping

from labeller.outcomes.results import CELLS, Attribution, QueryCase, RegressionAttribution, RegressionCase
from labeller.outcomes.table import OutcomeRow


def _cell(retrieval_ok: bool, task_ok: bool) -> str:
    if retrieval_ok:
        return "both_ok" if task_ok else "agent_fault"
    return "over_penalised" if task_ok else "retrieval_fault"


def attribute(metric: str, values: Mapping[str, float], outcomes: Mapping[str, OutcomeRow], *, ok_from: float,
              texts: Mapping[str, str] | None = None) -> Attribution:
    queries: dict[str, list[QueryCase]] = {cell: [] for cell in CELLS}
    for qid in sorted(q for q in values if q in outcomes):
        row, value = outcomes[qid], values[qid]
        queries[_cell(value >= ok_from, row.success)].append(
            QueryCase(query_id=qid, text=(texts or {}).get(qid), trace_id=row.trace_id, value=value,
                      task_ok=row.success))
    return Attribution(metric=metric, ok_from=ok_from, counts={c: len(q) for c, q in queries.items()},
                       queries=queries)


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def regression_attribution(metric: str, baseline_name: str, baseline: Mapping[str, float], run: Mapping[str, float],
                           baseline_outcomes: Mapping[str, OutcomeRow], run_outcomes: Mapping[str, OutcomeRow], *,
                           ok_from: float, texts: Mapping[str, str] | None = None) -> RegressionAttribution:
    """`baseline`/`run`: the gating metric per query for each run; a query a run lacks counts as retrieval failed."""
    both = sorted(set(baseline_outcomes) & set(run_outcomes))
    groups: dict[str, list[RegressionCase]] = {"lost_evidence": [], "kept_evidence": [], "never_had": []}
    fixed = dropped = 0
    for qid in both:
        before, after = baseline.get(qid), run.get(qid)
        was_ok, is_ok = before is not None and before >= ok_from, after is not None and after >= ok_from
        dropped += was_ok and not is_ok
        task_before, task_after = baseline_outcomes[qid].success, run_outcomes[qid].success
        fixed += not task_before and task_after
        if task_before and not task_after:
            group = "lost_evidence" if was_ok and not is_ok else "kept_evidence" if is_ok else "never_had"
            groups[group].append(RegressionCase(query_id=qid, text=(texts or {}).get(qid), baseline_value=before,
                                                run_value=after))
    failing = sum(len(g) for g in groups.values())
    lost, kept, never = (len(groups[g]) for g in ("lost_evidence", "kept_evidence", "never_had"))
    if failing:
        sentence = (f"Of the {_n(failing, 'newly failing task')}, {lost} lost {'its' if lost == 1 else 'their'} "
                    f"evidence ({metric} fell below {ok_from:g}: retrieval's fault), {kept} kept it (the agent's) "
                    f"and {never} never had it.")
    else:
        sentence = "No task that succeeded with the baseline fails with this run."
    unblamed = dropped - lost
    if unblamed:
        sentence += (f" Retrieval was lost on {_n(unblamed, 'other query')} whose task did not newly fail: "
                     "not blamed for any failure.")
    return RegressionAttribution(metric=metric, baseline=baseline_name, newly_failing=failing, lost_evidence=lost,
                                 kept_evidence=kept, never_had=never, newly_fixed=fixed, retrieval_dropped=dropped,
                                 sentence=sentence, queries=groups)
