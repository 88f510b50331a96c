"""regression: the downstream-weighted view, when the config has an [outcomes] section.

`outcomes.file` holds the outcomes the baseline's retrieval led to (for the bookkeeping sample: was each
transaction categorised correctly). The step finds which metric predicts them (or takes `outcomes.metric`),
fits the outcome model on the baseline, and predicts the task success rate for today's run: a drop beyond
`outcomes.max_drop` fails the run (with `outcomes.fail`), whatever the metric thresholds say, and a metric
drop on queries whose outcome does not depend on it does not.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict

from labeller.errors import ConfigError
from labeller.evaluation.qrels import Judgments
from labeller.evaluation.runs import Ranking
from labeller.outcomes.analysis import OutcomesOptions, analyse, values_for
from labeller.outcomes.gate import downstream_gate, no_model_gate
from labeller.outcomes.results import DownstreamGate, OutcomesReport
from labeller.outcomes.table import OutcomeTable, read_outcome_table
from labeller.reports.ci import Check


class OutcomeStep(BaseModel):
    model_config = ConfigDict(extra="forbid")
    report: OutcomesReport  # the baseline's outcomes analysed
    gate: DownstreamGate
    failed: bool  # the gate failed and outcomes.fail is on
    applied: bool = True  # False: every outcome alike, no model to gate by (the check is skipped, said so)

    def summary(self) -> list[str]:
        verdict = ("not applied" if not self.applied else "passed" if self.gate.passed else "FAILED" if self.failed
                   else "failed (reported only)")
        return [f"Outcomes ({self.report.joined.analysed} queries, task success rate "
                f"{self.report.outcome_rate:.3f} with the baseline): {self.report.recommendation.sentence}",
                f"DOWNSTREAM GATE {verdict}: {self.gate.reason}."]

    def check(self) -> Check:
        return Check(suite="regression", name=f"downstream gate ({self.gate.metric})",
                     status="skip" if not self.applied else "pass" if self.gate.passed or not self.failed else "fail",
                     message=self.gate.reason)

    def figures(self) -> dict[str, float | None]:
        """The headline figures, and the history's two columns."""
        return {"outcome_rate": self.report.outcome_rate, "predicted_outcome_rate": self.gate.run_rate}

    def write(self, directory, queries) -> object:
        """The outcomes report (index.html, summary.md, result.json) beside the day's evaluation report."""
        from labeller.outcomes.report import write_report

        texts = {q: v.text for q, v in queries.items()} if queries else None
        return write_report(self.report, directory, texts)


def read_outcomes_section(cfg, queries: Mapping[str, object], config_path: str) -> OutcomeTable | None:
    """outcomes.file, read before anything is paid: a bad row stops the job at once, naming its line, and so does
    a file that lists none of today's queries (outcomes of another query set)."""
    if cfg.outcomes.file is None:
        return None
    table = read_outcome_table(cfg.outcomes.file)
    _, rows = table.by_default_key()
    if not rows.keys() & queries.keys():
        raise ConfigError(f"{cfg.outcomes.file} lists none of the {len(queries)} queries of inputs.queries (first "
                          f"row: '{next(iter(rows))}'); expected the outcomes of these queries", path=config_path,
                          field="outcomes.file")
    return table


def check_outcomes(cfg, table: OutcomeTable | None, baseline: Ranking, today: Ranking, judgments: Judgments,
                   config_path: str) -> OutcomeStep | None:
    section = cfg.outcomes
    if table is None:
        return None
    options = OutcomesOptions(relevant_from=cfg.evaluate.relevant_from, ok_from=section.ok_from,
                              gate_metric=section.metric, max_drop=section.max_drop)
    before, after = values_for(baseline, judgments, options), values_for(today, judgments, options)
    if section.metric is not None and section.metric not in before.values:
        raise ConfigError(f"'{section.metric}' is not among the metrics analysed ({', '.join(before.values)})",
                          path=config_path, field="outcomes.metric")
    report = analyse(before, table, options)
    metric = report.attribution.metric if report.attribution else None
    if metric is None:  # every outcome alike: no model to gate by; the metric gate still guards the run
        return OutcomeStep(report=report, gate=no_model_gate(baseline.name, section.max_drop), failed=False,
                           applied=False)
    _, rows = table.by_default_key()
    gate = downstream_gate(metric, baseline.name, before.values[metric], rows, before.values[metric],
                           after.values[metric], ok_from=section.ok_from, threshold=section.max_drop)
    return OutcomeStep(report=report, gate=gate, failed=not gate.passed and section.fail)
