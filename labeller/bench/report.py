"""The side-by-side table of `labeller judge-bench`, as Markdown and as a self-contained HTML page."""

from __future__ import annotations

from markupsafe import Markup, escape

from labeller.bench.models import BenchResult, Figure, JudgeScore
from labeller.reports import Estimate, display_path, interval_chart, page, table

PUBLISHED = ("For scale (LLMJudge, TREC DL 2023 passages, 4-point NIST grades; Rahmani et al., arXiv 2502.13908): "
             "the best submitted label sets reach Cohen's kappa about 0.29 and ordinal Krippendorff's alpha "
             "about 0.50.")


def _num(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def figure(f: Figure) -> str:
    if f.value is None:
        return "undefined"
    ci = f" [{_num(f.ci.low)}, {_num(f.ci.high)}]" if f.ci.low is not None and f.ci.high is not None else ""
    return _num(f.value) + ci


def _money(value: float | None, priced: bool) -> str:
    if value is None:
        return "unknown" if not priced else "n/a"
    return f"${value:.4f}"


def _tokens(s: JudgeScore) -> str:
    c = s.cost
    if c.input_tokens_per_1k is None:
        return "–"
    return f"{c.input_tokens_per_1k:,.0f} in / {c.output_tokens_per_1k:,.0f} out"


def _speed(s: JudgeScore) -> str:
    if s.speed.all_cached:
        return "cached"
    return f"{_num(s.speed.pairs_per_second, 1)} ({s.speed.new} new)"


def rows(result: BenchResult) -> tuple[list[str], list[list[str]]]:
    """The table: one column per judge, one row per figure."""
    cut = result.relevant_from
    lines: list[tuple[str, list[str]]] = [
        ("pairs compared", [f"{s.n} of {result.pairs}" for s in result.judges]),
        ("Cohen's kappa", [figure(s.kappa) for s in result.judges]),
        ("kappa, quadratic weights", [figure(s.kappa_quadratic) for s in result.judges]),
        ("Krippendorff's alpha (ordinal)", [figure(s.alpha_ordinal) for s in result.judges]),
        (f"kappa at the relevance cut (grade >= {cut})", [figure(s.kappa_relevant) for s in result.judges]),
        ("exact agreement", [figure(s.exact_agreement) for s in result.judges]),
    ]
    if result.metric:
        lines.append((f"system ranking Kendall tau ({result.metric}, {len(result.runs)} runs)",
                      [_num(s.ranking.kendall_tau) if s.ranking else "–" for s in result.judges]))
    lines += [
        ("pairs per second", [_speed(s) for s in result.judges]),
        ("tokens per 1,000 pairs", [_tokens(s) for s in result.judges]),
        ("USD per 1,000 pairs", [_money(s.cost.usd_per_1k, s.cost.priced) for s in result.judges]),
        ("USD per 1,000 pairs, batch API", [_money(s.cost.usd_per_1k_batch, s.cost.priced) for s in result.judges]),
    ]
    return ["", *[s.judge for s in result.judges]], [[name, *values] for name, values in lines]


def _intro(result: BenchResult) -> str:
    return (f"{result.pairs} human-graded pairs over {result.queries} queries ({display_path(result.gold)}, scale "
            f"{result.gold_scale[0]}-{result.gold_scale[1]} on labeller's grades). Intervals: "
            f"{result.confidence:.0%} percentile bootstrap over queries, {result.resamples} resamples, "
            f"seed {result.seed}.")


def markdown(result: BenchResult) -> str:
    header, body = rows(result)
    out = ["# Judge benchmark", "", _intro(result), "",
           "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in body]
    out += ["", PUBLISHED]
    out += [f"- warning: {w}" for w in result.warnings]
    return "\n".join(out) + "\n"


CHARTED = (("Cohen's kappa", "kappa"), ("kappa, quadratic weights", "kappa_quadratic"),
           ("Krippendorff's alpha (ordinal)", "alpha_ordinal"))


def chart(result: BenchResult) -> Markup:
    """Each judge's agreement with the people, with its interval: which judge is better, and by how sure."""
    estimates = [Estimate(figure=name, side=s.judge, value=f.value, low=f.ci.low, high=f.ci.high)
                 for name, field in CHARTED for s in result.judges for f in (getattr(s, field),)]
    return interval_chart(estimates, reference_lines=[(0.0, "chance"),
                                                      (0.29, "LLMJudge best kappa", CHARTED[0][0])])  # kappa only


def html(result: BenchResult) -> str:
    header, body = rows(result)
    sections = [("Judges side by side", table(header, body)),
                ("Agreement with the people, per judge", chart(result)),
                ("Published figures", f"<p>{escape(PUBLISHED)}</p>")]
    if result.warnings:
        sections.append(("Warnings", table(["warning"], [[w] for w in result.warnings])))
    return page("Judge benchmark", sections, subtitle=_intro(result))
