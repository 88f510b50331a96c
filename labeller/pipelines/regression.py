"""regression: the scheduled run. Retrieve, fill label holes through the cache, evaluate, compare
with the stored baseline, write a dated report, append to the history store, fail on a real drop.

The baseline is a run file (`baseline.run`). When it does not exist yet it is built once with
`baseline.retriever` (or, failing that, today's retriever) and stored, so later runs compare
against a fixed reference; `labeller run ... --promote` replaces it with today's run after a pass.
"""

from __future__ import annotations

import shutil
from datetime import datetime, timezone

from labeller.evaluation import EvaluateOptions, evaluate, markdown, write_report
from labeller.io.tables import write_text
from labeller.io.trec import read_known_run
from labeller.pipelines.todays_run import system_name, todays_run
from labeller.pipelines.config import PipelineConfig
from labeller.pipelines.history import HistoryRow, append_history, trend
from labeller.pipelines.result import PipelineResult
from labeller.pipelines.steps import failure_lines, label, load_inputs, pairs_of, paragraphs, retrieve, write_pairs
from labeller.reports import line_chart, page, table
from labeller.reports.ci import evaluation_checks


def run_regression(cfg: PipelineConfig, config_path: str, promote: bool = False) -> PipelineResult:
    out = cfg.output.dir
    now = datetime.now(timezone.utc)
    stamp = _unused_stamp(out, now.strftime("%Y-%m-%dT%H%M%SZ"))
    queries, corpus = load_inputs(cfg)
    depth = cfg.retriever.depth
    today_path, today = todays_run(cfg, queries, corpus, out / "runs" / stamp)

    baseline_path = cfg.baseline.run or out / "baseline.trec"
    notes = []
    if not baseline_path.is_file():
        name = cfg.baseline.retriever or cfg.retriever.name
        retrieve(name, queries, corpus, depth, baseline_path)
        notes.append(f"No stored baseline yet: built it with retriever '{name}' and saved it to {baseline_path}.")
    baseline = read_known_run(baseline_path, queries, corpus, depth)  # a stray id is reported against the file

    pairs_path = write_pairs(pairs_of(today, baseline, depth=depth), out / "pairs.jsonl")
    labelled = label(cfg, pairs_path, out / "labels.jsonl")
    thresholds = [f"{m}={t}" for m, t in cfg.evaluate.thresholds.items()]
    ev = evaluate(EvaluateOptions(runs=[today_path], labels=labelled.out_path, baseline=baseline_path,
                                  metrics=",".join(cfg.evaluate.metrics), relevant_from=cfg.evaluate.relevant_from,
                                  thresholds=thresholds, alpha=cfg.evaluate.alpha,
                                  floors=[f"{m}={v}" for m, v in cfg.evaluate.floors.items()]))
    report_dir = out / "reports" / stamp
    report = write_report(ev, report_dir)
    regression = (ev.gate is not None and not ev.gate.passed) or not all(f.passed for f in ev.floors)
    rows = [HistoryRow(run_at=now.isoformat(), retriever=system_name(cfg), metric=m, value=v,
                       baseline_value=_baseline_value(ev, m), judge=cfg.judge.spec,
                       rubric_version=labelled.labels[0].rubric_version if labelled.labels else "",
                       regression=regression)
                     for m, v in ev.metrics.items() if v is not None]
    history = append_history(out / "history.parquet", rows)
    trend = write_text(out / "trend.html", _trend_page(history, cfg))
    write_text(out / "latest.md", markdown(ev))
    if promote and not regression:
        shutil.copyfile(today_path, baseline_path)
        notes.append(f"Promoted today's run to the baseline ({baseline_path}).")

    s = labelled.stats
    summary = notes + [
        f"Retriever {system_name(cfg)} against baseline {baseline_path.name} on {ev.queries.averaged} queries "
        f"({ev.queries.no_answer} in the no-answer bucket): "
        + ", ".join(f"{m} {v:.4f}" for m, v in ev.metrics.items() if v is not None) + ".",
        f"Labels: {len(labelled.labels)} pairs in the top {depth} of both runs; {s.new} new, {s.cached} from the "
        f"cache; judge requests sent: {s.requests}.",
        "REGRESSION: a drop beyond its threshold and significant." if ev.gate is not None and not ev.gate.passed
        else "No significant regression beyond the thresholds.",
        *[f"BELOW FLOOR: {f.metric} {f.value if f.value is None else round(f.value, 4)} < {f.floor}."
          for f in ev.floors if not f.passed],
        *failure_lines(labelled),
    ]
    failed = regression or bool(labelled.failures)
    return PipelineResult(pipeline="regression", config=config_path, status="failed" if failed else "passed",
                          summary=summary, judge_requests=s.requests,
                          reports={"evaluation": str(report), "trend": str(trend), "summary (Markdown)":
                                   str(report_dir / "summary.md")},
                          figures={k: v for k, v in ev.metrics.items()},
                          checks=evaluation_checks(ev, "regression")).with_labelling_check(s.failed, s.requested)


def _unused_stamp(out, stamp: str) -> str:
    """The run's name in file names; a second run within the same second gets a suffix, never overwrites."""
    candidate, n = stamp, 1
    while (out / "reports" / candidate).exists():
        n += 1
        candidate = f"{stamp}-{n}"
    return candidate


def _baseline_value(ev, metric: str) -> float | None:
    return ev.runs[ev.baseline].metrics.get(metric) if ev.baseline in ev.runs else None


def _trend_page(history: list[HistoryRow], cfg: PipelineConfig) -> str:
    t = trend(history)
    labels = [when[:16].replace("T", " ") for when in t.run_at]
    rows = [[when, retriever, "REGRESSION" if failed else "ok"] + [t.series[m][i] for m in t.series]
            for i, (when, retriever, failed) in enumerate(zip(labels, t.retrievers, t.regression))]
    sections = [
        ("Metrics over time", line_chart(labels, t.series, y_range=(0.0, 1.0), marked=t.regression)),
        ("", paragraphs([f"{len(t.run_at)} runs recorded in history.parquet. Runs that failed the gate are "
                         "circled in red."])),
        ("Runs", table(["run at (UTC)", "retriever", "gate"] + list(t.series), rows[::-1],
                       numeric=tuple(range(3, 3 + len(t.series))))),
    ]
    return page("regression: metric trend", sections, subtitle=f"config retriever {cfg.retriever.name} · "
                                                                f"judge {cfg.judge.spec}")
