"""regression: the scheduled run. Retrieve, fill label holes through the cache, evaluate, compare
with the stored baseline, write a dated report, keep the run in the history, rescore every stored
run on the current labels, fail on a real drop.

The baseline is a run file (`baseline.run`). When it does not exist yet it is built once with
`baseline.retriever` (or, failing that, today's retriever) and stored, so later runs compare
against a fixed reference; `labeller run ... --promote` replaces it with today's run after a pass.

The pool labelled each time is the top k of today's run, of the baseline and of every run in the
history (labeller.pipelines.rescore): every figure of the day, the gate's included, is on one set
of labels, and the trend compares every run on it. Reports are written whatever the verdict.
"""

from __future__ import annotations

import shutil
from datetime import datetime, timezone
from pathlib import Path

from labeller.errors import ConfigError, GateFailedError
from labeller.evaluation import EvaluateOptions, Evaluation, evaluate, markdown, outcome_error, write_report
from labeller.evaluation.gate import movement, p_text
from labeller.evaluation.metrics import parse_metrics
from labeller.evaluation.qrels import load_judgments
from labeller.evaluation.runs import Ranking, load_run, run_name, to_trec
from labeller.io.trec import read_known_run
from labeller.io.writing import write_text
from labeller.labelling import LabelRun
from labeller.pipelines.todays_run import safe_name, system_name
from labeller.pipelines.config import PipelineConfig
from labeller.pipelines.drift import DriftCheck, check_drift, markdown_section, read_sample, sample_path, summary_line
from labeller.pipelines.drift_report import html_section as drift_html
from labeller.pipelines.human import HumanGrades
from labeller.pipelines.outcomes_step import check_outcomes, read_outcomes_section
from labeller.pipelines.history import RUNS_DIR, HistoryRow, history_path, read_history, store_run, write_history
from labeller.pipelines.rescore import Figure, figures, pool, rescore, stored_rankings
from labeller.pipelines.result import PipelineResult
from labeller.pipelines.steps import failure_lines, label, load_inputs, retrieve, save_run, write_pairs
from labeller.pipelines.trend import history_markdown, pool_note, trend_page
from labeller.reports.ci import Check, evaluation_checks


def run_regression(cfg: PipelineConfig, config_path: str, promote: bool = False) -> PipelineResult:
    out = cfg.output.dir
    history = read_history(history_path(out))  # a damaged history stops the job before anything is paid
    drift_sample = read_sample(sample_path(out))  # so does a damaged drift sample
    now = datetime.now(timezone.utc)
    stamp = _unused_stamp(out, now.strftime("%Y-%m-%dT%H%M%SZ"))
    queries, corpus = load_inputs(cfg)
    outcome_table = read_outcomes_section(cfg, queries, config_path)  # and a bad outcomes file
    depth = cfg.retriever.depth
    baseline_path, notes = _baseline(cfg, queries, corpus, depth)
    baseline = load_run(baseline_path)  # as evaluate reads it, so the pool holds every pair it will score
    _check_baseline_queries(baseline, queries, baseline_path)
    # Queries or documents the inputs do not hold (an official TREC run over more topics) are skipped with a
    # counted warning, as `evaluate` skips them; only a run of which nothing matches is refused, against its file.
    skipped = [read_known_run(baseline_path, queries, corpus, depth).warning]
    today_file = (RUNS_DIR / f"{stamp}-{run_name(safe_name(system_name(cfg)))}.trec").as_posix()  # not .trec.trec
    evaluated, today_skipped = _todays_run(cfg, queries, corpus, depth, out / today_file)
    notes += [f"WARNING: {w} (not labelled; unjudged, so not relevant)." for w in (*skipped, today_skipped) if w]
    today = load_run(evaluated)
    baseline_file = store_run(out, to_trec(baseline, tag="baseline"), "baseline")
    stored, missing = stored_rankings(out, history)
    pairs, left_out = pool([today, baseline, *stored.values()], depth, queries, corpus)
    human = HumanGrades(cfg, queries)  # inputs.gold / inputs.beir's qrels: never paid for again
    to_judge = human.unjudged(pairs)
    labelled = (label(cfg, write_pairs(to_judge, out / "pairs.jsonl"), out / "labels.jsonl")
                if to_judge or human.path is None else LabelRun())  # people graded the whole pool: nothing to buy
    judgments_path = (human.judgments(labelled.labels, out / "judgments.jsonl") if human.path is not None
                      else Path(labelled.out_path))
    drift, drift_requests = check_drift(cfg, out, drift_sample, labelled.labels, now.isoformat())
    drift_failed = drift.drifted and not drift.accepted and cfg.drift.fail
    ev = evaluate(EvaluateOptions(runs=[evaluated], labels=judgments_path, baseline=baseline_path,
                                  metrics=",".join(cfg.evaluate.metrics), relevant_from=cfg.evaluate.relevant_from,
                                  average=cfg.evaluate.average, alpha=cfg.evaluate.alpha,
                                  require_significance=cfg.evaluate.require_significance,
                                  thresholds=[f"{m}={t}" for m, t in cfg.evaluate.thresholds.items()],
                                  floors=[f"{m}={v}" for m, v in cfg.evaluate.floors.items()],
                                  gold=cfg.evaluate.gold, corrected_gate=cfg.evaluate.corrected))
    gate_failed = (ev.gate is not None and not ev.gate.passed) or not all(f.passed for f in ev.floors)

    specs = parse_metrics(cfg.evaluate.metrics)
    judgments = load_judgments(judgments_path)
    mine = figures(today, judgments, specs, ev.settings, depth)
    theirs = figures(baseline, judgments, specs, ev.settings, depth)
    outcomes = check_outcomes(cfg, outcome_table, baseline, today, judgments, config_path)  # None without [outcomes]
    base_scores = ev.runs.get(ev.baseline or "")
    rows = [HistoryRow(run_at=now.isoformat(), retriever=system_name(cfg), metric=s.name,
                       value=ev.metrics.get(s.name), judge=drift.new.with_grading(cfg.judge.spec),
                       baseline_value=base_scores.metrics.get(s.name) if base_scores else None,
                       rubric_version=labelled.labels[0].rubric_version if labelled.labels else "",
                       regression=gate_failed, run_file=today_file, baseline_file=baseline_file,
                       judged=mine[s.name].judged, baseline_judged=theirs[s.name].judged,
                       judge_drift=drift.drifted if drift.status == "checked" else None,
                       drift_kappa=drift.kappa_quadratic, **(outcomes.figures() if outcomes else {}))
            for s in specs]
    earlier = len(history)
    history, rescored = rescore(history + rows, {**stored, today_file: today, baseline_file: baseline}, judgments,
                                specs, ev.settings, depth)
    write_history(history_path(out), history)

    summary = notes + _summary(cfg, ev, labelled, baseline_path, (mine[specs[0].name], theirs[specs[0].name]),
                               pool_size=len(stored), left_out=left_out, human=len(pairs) - len(to_judge))
    summary += [human.sentence(len(pairs), len(to_judge))] if human.path is not None else []
    summary.append(_history_line(history, earlier_rows=earlier, rescored_rows=rescored, today_rows=len(rows),
                                 missing=missing))
    summary += [pool_note(specs), _verdict(ev), summary_line(drift, cfg.drift.fail),
                *[f"BELOW FLOOR: {f.metric} {f.value if f.value is None else round(f.value, 4)} < {f.floor}."
                  for f in ev.floors if not f.passed],
                *(outcomes.summary() if outcomes else []), *failure_lines(labelled)]
    outcomes_failed = outcomes is not None and outcomes.failed
    if promote and not gate_failed and not drift_failed and not outcomes_failed:
        shutil.copyfile(evaluated, baseline_path)
        summary.append(f"Promoted today's run to the baseline ({baseline_path}).")

    report_dir = out / "reports" / stamp
    report = write_report(ev, report_dir, queries, extra=[drift_html(drift, cfg.drift.fail)])
    extra_reports = {"outcomes": str(outcomes.write(report_dir / "outcomes", queries))} if outcomes else {}
    text = markdown(ev) + "\n" + markdown_section(drift, cfg.drift.fail) + "\n" + history_markdown(history, specs)
    write_text(report_dir / "summary.md", text)
    write_text(out / "latest.md", text)
    trend = write_text(out / "trend.html", trend_page(history, specs, f"config retriever {system_name(cfg)} · "
                                                                      f"judge {cfg.judge.spec}"))
    failed = gate_failed or bool(labelled.failures) or drift_failed or outcomes_failed
    return PipelineResult(pipeline="regression", config=config_path, status="failed" if failed else "passed",
                          summary=summary, judge_requests=labelled.stats.requests + drift_requests,
                          reports={"evaluation": str(report), "trend": str(trend), "summary (Markdown)":
                                   str(report_dir / "summary.md"), **extra_reports},
                          figures={**ev.metrics, **{f"judged@{s.k or depth}": mine[s.name].judged for s in specs},
                                   "human_grades": len(pairs) - len(to_judge), "judge_grades": len(labelled.labels),
                                   **({"drift_kappa_quadratic": drift.kappa_quadratic}
                                      if drift.status == "checked" else {}),
                                   **(outcomes.figures() if outcomes else {})},
                          judge_drift=drift.model_dump(mode="json"),
                          checks=[*evaluation_checks(ev, "regression", {run_name(evaluated): system_name(cfg)}),
                                  *_drift_checks(drift, drift_failed), *([outcomes.check()] if outcomes else [])]
                          ).with_labelling_check(labelled.stats.failed,
                                                                                         labelled.stats.requested)


def _drift_checks(drift: DriftCheck, failed: bool) -> list[Check]:
    """The judge-drift check, apart from the metric gates (only when the judge changed)."""
    if drift.status != "checked":
        return []
    status = "fail" if failed else "pass"
    return [Check(suite="regression", name="judge drift", status=status,
                  message=f"quadratic kappa {drift.kappa_quadratic} of old vs new verdicts on {drift.n} sample pairs "
                          f"(min {drift.min_kappa})")]


def _retrieve(name: str, queries, corpus, depth: int, path: Path) -> None:
    """Retrieve and save a run. A retriever that returns nothing for every query has nothing to evaluate
    (and nothing to store as a baseline): a failure, said at once, before anything is paid."""
    entries = retrieve(name, queries, corpus, depth, None)
    if not entries:
        raise GateFailedError(f"retriever '{name}' returned nothing for any of the {len(queries)} queries: every "
                              "query vanished, nothing to compare (check the retriever and the query fields it reads)")
    save_run(entries, path, name)


def _todays_run(cfg: PipelineConfig, queries, corpus, depth: int, keep: Path) -> tuple[Path, str | None]:
    """The run file to evaluate. `retriever.run` (the file the user's system wrote) is evaluated where it
    lies, so every error names that file and line, and a copy is kept for the history; otherwise the
    configured retriever (a registered name or `package.module:function`) is run and saved to `keep`. With
    the run file, also what of it was skipped (queries or documents the inputs do not hold)."""
    if cfg.retriever.run is None:
        _retrieve(cfg.retriever.name, queries, corpus, depth, keep)
        return keep, None
    warning = read_known_run(cfg.retriever.run, queries, corpus, depth).warning
    write_text(keep, to_trec(load_run(cfg.retriever.run), tag=safe_name(system_name(cfg))))
    return cfg.retriever.run, warning


def _baseline(cfg: PipelineConfig, queries, corpus, depth: int) -> tuple[Path, list[str]]:
    path = cfg.baseline.run or cfg.output.dir / "baseline.trec"
    if path.is_file():
        return path, []
    name = cfg.baseline.retriever or cfg.retriever.name
    _retrieve(name, queries, corpus, depth, path)
    return path, [f"No stored baseline yet: built it with retriever '{name}' and saved it to {path}."]


def _check_baseline_queries(baseline: Ranking, queries: dict, path: Path) -> None:
    """A baseline that answers none of today's queries compares with nothing: the wrong file, or a queries
    file that changed. Said before any pair is labelled."""
    if not baseline.docs.keys() & queries.keys():
        sample = ", ".join(sorted(baseline.docs)[:3]) + (", ..." if len(baseline.docs) > 3 else "")
        raise ConfigError(f"the baseline run answers none of the {len(queries)} queries of inputs.queries (its "
                          f"queries: {sample}); expected a run over the same query ids", path=str(path),
                          field="baseline.run")


def _summary(cfg: PipelineConfig, ev: Evaluation, labelled: LabelRun, baseline_path: Path,
             judged: tuple[Figure, Figure], *, pool_size: int, left_out: int, human: int = 0) -> list[str]:
    s, depth = labelled.stats, cfg.retriever.depth
    spec = parse_metrics(cfg.evaluate.metrics)[0]
    vanish = ": a query the run returns nothing for scores 0" if cfg.evaluate.average == "all" else ""
    values = ", ".join(f"{m} {v:.4f}" for m, v in ev.metrics.items() if v is not None)
    if not values:
        grades = sorted({label.grade for label in labelled.labels})
        values = (f"nothing to average: no query has a label graded {cfg.evaluate.relevant_from} or more "
                  f"(evaluate.relevant_from; grades in the pool: {', '.join(map(str, grades)) or 'none'})")
    return [
        f"{_today(cfg)} against baseline {baseline_path.name} on {ev.queries.averaged} queries "
        f"({ev.queries.no_answer} in the no-answer bucket; averaging '{cfg.evaluate.average}'{vanish}): {values}.",
        f"judged@{spec.k or depth} (share of the top {spec.k or depth} with a label): today {_f(judged[0].judged)}, "
        f"baseline {_f(judged[1].judged)}.",
        f"Labels: {len(labelled.labels) + human} pairs in the pool (top {depth} of today's run, the baseline and "
        f"{_n(pool_size, 'stored run')}); " + (f"{human} human grades, judge: " if human else "")
        + f"{s.new} new, {s.cached} from the cache; judge requests sent: {s.requests}."
        + (f" {_n(left_out, 'pair')} left out: query or document not in today's inputs." if left_out else ""),
    ]


def _today(cfg: PipelineConfig) -> str:
    """Today's system as the summary names it: the run file it was given, else the retriever it ran."""
    name = system_name(cfg)
    return name[0].upper() + name[1:] if cfg.retriever.run is not None else f"Retriever {name}"


def _history_line(history: list[HistoryRow], *, earlier_rows: int, rescored_rows: int, today_rows: int,
                  missing: int) -> str:
    line = f"History: {_n(len({r.run_at for r in history}), 'run')}"
    if rescored_rows > today_rows:  # rows of earlier runs were rescored: the labels are not the last ones
        line += "; the labels changed, so every stored run was rescored on them."
    elif earlier_rows:
        line += "; labels unchanged since the last rescoring."
    else:
        line += "."
    return line + (f" {_n(missing, 'stored run file')} missing: not rescored." if missing else "")


def _verdict(ev: Evaluation) -> str:
    if ev.gate is None:
        return "No gate: nothing to compare with."
    if ev.gate.passed:
        unsure = [f"{movement(c)}; p {p_text(c.p_value)})"
                  for c in ev.gate.checks if c.verdict == "drop-not-significant" and c.drop is not None
                  and c.p_value is not None]
        line = ("No significant regression beyond the thresholds." if not unsure else
                "Passed, but with drops beyond their thresholds that are not significant: " + "; ".join(unsure) + ".")
    else:
        kind = "REGRESSION" if any(c.verdict == "regression" for c in ev.gate.checks) else "GATE FAILED"
        line = f"{kind}: {outcome_error(ev, fail_on_regression=True) or 'the regression gate failed; see the report'}."
    return " ".join([line, *(f"WARNING: {w}." for w in ev.gate.warnings)])  # drops not gated (require_significance)


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _f(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _unused_stamp(out: Path, stamp: str) -> str:
    """The run's name in file names; a second run within the same second gets a suffix, never overwrites."""
    candidate, n = stamp, 1
    while (out / "reports" / candidate).exists() or any((out / RUNS_DIR).glob(f"{candidate}-*.trec")):
        n += 1
        candidate = f"{stamp}-{n}"
    return candidate
