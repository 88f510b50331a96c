"""The judge-drift section of the regression page: did the judge change, and does it still grade alike."""

from __future__ import annotations

from markupsafe import Markup, escape

from labeller.pipelines.drift import DriftCheck, summary_line
from labeller.reports import Estimate, banner, interval_chart, table

SHOWN = ("provider", "model", "rubric", "rubric_version")


def html_section(check: DriftCheck, fail: bool) -> tuple[str, str]:
    """(heading, body): a PASS/FAIL banner when the judge changed, its kappa against drift.min_kappa,
    and what changed; one plain sentence otherwise."""
    line = summary_line(check, fail)
    if check.status != "checked":
        return "Judge drift", f"<p>{escape(line)}</p>"
    kappa = "undefined" if check.kappa_quadratic is None else f"{check.kappa_quadratic:.3f}"
    head = banner(not check.drifted or check.accepted, "JUDGE DRIFT: the new judge grades differently" if check.drifted
                  else "judge changed, and grades like the old one",
                  f"quadratic kappa of old vs new verdicts {kappa} on {check.n} sample pairs "
                  f"(drift below {check.min_kappa:g})")
    chart = interval_chart([Estimate(figure="old vs new verdicts", side="quadratic kappa",
                                     value=check.kappa_quadratic)],
                           x_range=(-1.0, 1.0), reference_lines=[(check.min_kappa, f"drift.min_kappa {check.min_kappa:g}")])
    changes = table(["", "old judge", "new judge"],
                    [[name, getattr(check.old, name), getattr(check.new, name)] for name in SHOWN])
    return "Judge drift", str(head) + f"<p>{escape(line)}</p>" + str(chart if check.kappa_quadratic is not None
                                                                    else Markup("")) + str(changes)
