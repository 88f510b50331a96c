"""The regression history as a trend page (trend.html) and a Markdown section for the job summary.

The charts plot the values rescored on the current labels (comparable from run to run) and, apart,
the values as recorded (what each day's gate saw); the table gives both, judged@k and the baseline.
"""

from __future__ import annotations

from markupsafe import Markup, escape
from pydantic import BaseModel, ConfigDict

from labeller.evaluation.metrics import MetricSpec
from labeller.pipelines.history import HistoryRow
from labeller.pipelines.rescore import POOL_DEPENDENT
from labeller.pipelines.steps import paragraphs
from labeller.reports import line_panel, page, small_multiples, table


class RunPoint(BaseModel):
    """One regression run of the history, every metric side by side."""

    model_config = ConfigDict(extra="forbid")
    run_at: str
    retriever: str
    failed: bool
    rows: dict[str, HistoryRow]  # metric -> row


def runs(history: list[HistoryRow]) -> list[RunPoint]:
    by_time: dict[str, RunPoint] = {}
    for r in sorted(history, key=lambda r: r.run_at):
        point = by_time.setdefault(r.run_at, RunPoint(run_at=r.run_at, retriever=r.retriever, failed=r.regression,
                                                      rows={}))
        point.rows[r.metric] = r
    return list(by_time.values())


def metrics_of(history: list[HistoryRow]) -> list[str]:
    return list(dict.fromkeys(r.metric for r in history))


def pool_note(specs: list[MetricSpec]) -> str:
    """Which of the metrics depend on the pool, and so on which runs happened to be labelled."""
    dependent = [f"{s.name} ({POOL_DEPENDENT[s.kind]})" for s in specs if s.kind in POOL_DEPENDENT]
    steady = [s.name for s in specs if s.kind not in POOL_DEPENDENT]
    text = (f"Pool-dependent: {'; '.join(dependent)}. A run scores lower on these once another run finds relevant "
            "documents it missed, so only values on the same labels compare: the trend plots every stored run "
            "rescored on today's labels, with the value as recorded beside it." if dependent
            else "None of the metrics depends on the pool.")
    if steady:
        text += f" Not pool-dependent: {', '.join(steady)} (they read only the run's own top k, which is labelled)."
    return text


def _label(when: str) -> str:
    """A run's time to the second, UTC: "2026-12-01 12:01:05"."""
    return when[:19].replace("T", " ")


def run_labels(points: list[RunPoint]) -> list[str]:
    """One label per run, never two alike: the time to the second, and the run's number when two runs
    share a second (the axis and the table must tell every run apart)."""
    times = [_label(p.run_at) for p in points]
    return [f"{t} #{n}" if times.count(t) > 1 else t for n, t in enumerate(times, start=1)]


def _pair(rescored: float | None, recorded: float | None) -> Markup:
    """The rescored value over the recorded one in brackets: two short lines, so many metrics still fit."""
    def f(v: float | None) -> str:
        return "–" if v is None else f"{v:.4f}"

    return Markup(f'{f(rescored)}<br><span class="note">({f(recorded)})</span>')


def _breakable(text: str) -> Markup:
    """A long name (an import path, a run file) may wrap anywhere rather than widen the table off the page."""
    return Markup(f'<span style="overflow-wrap:anywhere">{escape(text)}</span>')


def _table_rows(points: list[RunPoint], metrics: list[str]) -> list[list[object]]:
    rows = []
    for number, label, p in reversed(list(zip(range(1, len(points) + 1), run_labels(points), points))):  # newest first
        first = next(iter(p.rows.values()))
        cells: list[object] = [number, Markup(str(escape(label)).replace(" ", "<br>", 1)), _breakable(p.retriever),
                               "FAILED" if p.failed else "ok"]
        for m in metrics:
            r = p.rows.get(m)
            cells += [_pair(r.rescored_value, r.value), _pair(r.rescored_baseline_value, r.baseline_value)] if r \
                else ["–", "–"]
        cells.append(_pair(first.rescored_judged, first.judged))
        rows.append(cells)
    return rows


SERIES = {"rescored on today's labels": "rescored_value", "as recorded (labels of its day)": "value",
          "baseline, rescored": "rescored_baseline_value"}


def trend_panels(points: list[RunPoint], metrics: list[str]) -> str:
    """One panel per metric (no metric hides another), each with the run rescored, as recorded and the
    baseline, told apart by colour, marker and dash; the axis gives date, time and run number."""
    labels = run_labels(points)
    axis = [[label[:10], label[11:], f"run {n}"] for n, label in enumerate(labels, start=1)]
    failed = [p.failed for p in points]
    tips = [f"run {n}, {label} UTC, {p.retriever}{', FAILED the gate' if p.failed else ''}"
            for n, (label, p) in enumerate(zip(labels, points), start=1)]
    panels = [line_panel(m, axis, {name: [getattr(p.rows[m], column) if m in p.rows else None for p in points]
                                   for name, column in SERIES.items()}, marked=failed, point_titles=tips,
                         ringed=list(SERIES)[:2])
              for m in metrics]
    return str(small_multiples(panels, list(SERIES)))


def judges_note(history: list[HistoryRow]) -> str | None:
    """The judge is part of a figure's identity: recorded values from other judges or rubric versions are named."""
    if not history:
        return None
    latest = max(history, key=lambda r: r.run_at)
    others = sorted({f"{r.judge} (rubric {r.rubric_version})" for r in history
                     if (r.judge, r.rubric_version) != (latest.judge, latest.rubric_version)})
    if not others:
        return None
    runs_by_others = len({r.run_at for r in history if (r.judge, r.rubric_version) != (latest.judge, latest.rubric_version)})
    return (f"{runs_by_others} runs were recorded on labels by another judge or rubric version ({'; '.join(others)}; "
            f"today: {latest.judge}, rubric {latest.rubric_version}): their recorded values do not compare with "
            "today's; the rescored values, all on today's labels, do.")


def trend_page(history: list[HistoryRow], specs: list[MetricSpec], subtitle: str) -> str:
    points = runs(history)
    metrics = metrics_of(history) or [s.name for s in specs]  # no run yet: empty panels, not no chart
    unscored = sum(1 for p in points if all(r.rescored_value is None for r in p.rows.values()))
    notes = [f"{len(points)} runs recorded in history.parquet; their runs are kept in history/runs/. Runs that "
             "failed the gate are ringed in red and marked FAILED in the table; times are UTC.", pool_note(specs)]
    judged_by_others = judges_note(history)
    if judged_by_others:
        notes.append(judged_by_others)
    if unscored:
        notes.append(f"{unscored} runs have no rescored value: their run file is not in history/runs/ (recorded "
                     "before runs were kept, or removed), or nothing could be averaged.")
    k_note = "judged@k: the share of a run's top k that has a label (k: the first metric's cutoff)"
    k_note += ("; each figure is rescored on today's labels, with the value as recorded (the labels of its day) "
               "below it in brackets")
    header = ["run", "run at (UTC)", "retriever", "gate"]
    for m in metrics:
        header += [m, f"baseline {m}"]
    header.append("judged@k")
    sections = [
        ("Metrics over time, one panel per metric: rescored on today's labels and as recorded",
         trend_panels(points, metrics)),
        ("", paragraphs(notes)),
        ("Runs", paragraphs([k_note]) + '<div style="overflow-x:auto;font-size:.85rem">'  # many metrics: scroll
         + str(table(header, _table_rows(points, metrics), numeric=(0,))) + "</div>"),
    ]
    return page("regression: metric trend", sections, subtitle=subtitle)


def _rate(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def history_markdown(history: list[HistoryRow], specs: list[MetricSpec], limit: int = 10) -> str:
    """The last runs, rescored and as recorded, for the job summary (latest.md)."""
    points = runs(history)[-limit:]
    metrics = metrics_of(history)
    header = ["run at (UTC)", "retriever", "gate", *(f"{m} rescored (recorded)" for m in metrics),
              "judged@k rescored (recorded)"]
    with_outcomes = any(r.predicted_outcome_rate is not None for r in history)  # [outcomes]: the task beside them
    header += ["task success predicted (outcomes file)"] if with_outcomes else []
    judged_by_others = judges_note(history)
    lines = ["### History (rescored on today's labels)", "", pool_note(specs), "",
             *([judged_by_others, ""] if judged_by_others else []),
             "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    labels = run_labels(runs(history))[-limit:]
    for label, p in reversed(list(zip(labels, points))):
        first = next(iter(p.rows.values()))
        cells = [label, p.retriever, "FAILED" if p.failed else "ok",
                 *(_pair(p.rows[m].rescored_value, p.rows[m].value) if m in p.rows else "–" for m in metrics),
                 _pair(first.rescored_judged, first.judged)]
        if with_outcomes:
            cells.append(f"{_rate(first.predicted_outcome_rate)} ({_rate(first.outcome_rate)})")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
