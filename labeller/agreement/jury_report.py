"""The by-judge part of an agreement report on a jury or escalation file: each judge, and the final labels,
against gold with its query-bootstrap interval (labeller.agreement.jury.against_gold)."""

from __future__ import annotations

from collections.abc import Sequence

from markupsafe import Markup

from labeller.agreement.jury import JudgeAgreement
from labeller.reports import Estimate, interval_chart, table

HEADER = ["labels", "pairs", "kappa", "interval", "quadratic kappa", "interval", "exact agreement"]


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _ci(ci) -> str:
    return "n/a" if ci.low is None or ci.high is None else f"{ci.low:.3f} to {ci.high:.3f}"


def rows(judges: Sequence[JudgeAgreement]) -> list[list[object]]:
    return [[j.name, j.n, _num(j.kappa), _ci(j.kappa_ci), _num(j.kappa_quadratic), _ci(j.kappa_quadratic_ci),
             _num(j.exact_agreement)] for j in judges]


def markdown_lines(judges: Sequence[JudgeAgreement]) -> list[str]:
    if not judges:
        return []
    out = ["## Against gold, by judge", "", "| " + " | ".join(HEADER) + " |", "|---" * len(HEADER) + "|"]
    return out + ["| " + " | ".join(map(str, r)) + " |" for r in rows(judges)] + [""]


def html_section(judges: Sequence[JudgeAgreement]) -> Markup:
    estimates = [Estimate(figure=j.name, side=side, value=value, low=ci.low, high=ci.high)
                 for j in judges for side, value, ci in (("kappa", j.kappa, j.kappa_ci),
                                                         ("quadratic kappa", j.kappa_quadratic, j.kappa_quadratic_ci))]
    return interval_chart(estimates, x_range=(min(0.0, *[e.low or 0 for e in estimates]), 1.0)) + table(
        HEADER, rows(judges), (1,))
