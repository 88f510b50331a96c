"""Each job's `--json` result as an ExportBatch: which figures are pushed, and from where in the JSON.

Every value is read from the JSON form of the result (what `--json` prints), never recomputed, and
keeps its JSON pointer as `source`. Figures that are null in the JSON (undefined: e.g. kappa on one
grade) are not pushed. A new job needs one function here built from `figures_at`/`gate_at`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from labeller.exporters.base import ExportBatch, Figure, Kind, RunLabels

# Gate verdicts as 1 (passed) / 0 (failed). The regression gate's per-metric verdicts: only a regression,
# or nothing comparable, fails (as labeller.reports.ci.evaluation_checks); "skip" is no verdict.
_PASSED = {True: 1.0, False: 0.0, "pass": 1.0, "passed": 1.0, "fail": 0.0, "failed": 0.0,
           "regression": 0.0, "not-comparable": 0.0, "drop-not-significant": 1.0, "drop-untestable": 1.0,
           "drop-within-threshold": 1.0, "no-drop": 1.0}


_AGREEMENT = ("kappa", "kappa_linear", "kappa_quadratic", "alpha_ordinal", "kappa_relevant", "spearman", "kendall",
              "exact_agreement", "within_one", "mean_signed_difference")

_COMPARED = ("difference", "ci_low", "ci_high", "p_randomization", "p_t_test")  # run - reference, paired


def pointer(*parts: str | int) -> str:
    """An RFC 6901 JSON pointer: /runs/bm25/metrics/ndcg@10 (~ and / inside a key escaped)."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def resolve(data: Any, source: str) -> Any:
    """The value a JSON pointer names (the inverse of `pointer`)."""
    for raw in source.split("/")[1:]:
        key = raw.replace("~1", "/").replace("~0", "~")
        data = data[int(key)] if isinstance(data, list) else data[key]
    return data


def figures_at(data: dict, path: tuple[str | int, ...], kind: Kind, labels: dict[str, str] | None = None,
               only: Iterable[str] | None = None, prefix: str = "") -> list[Figure]:
    """Every number (or true/false) of the flat object at `path` as a figure named by its key."""
    holder = resolve(data, pointer(*path)) if path else data
    figures = []
    for key, value in (holder or {}).items():
        if only is not None and key not in only:
            continue
        if isinstance(value, (bool, int, float)) and not (isinstance(value, float) and value != value):
            figures.append(Figure(kind=kind, name=prefix + key, value=float(value), labels=labels or {},
                                  source=pointer(*path, key)))
    return figures


def gate_at(data: dict, path: tuple[str | int, ...], name: str, labels: dict[str, str] | None = None) -> list[Figure]:
    """A verdict (true/false, pass/fail, a regression-gate verdict) as a gate figure: 1 passed, 0 failed."""
    value = resolve(data, pointer(*path))
    if value not in _PASSED:
        return []  # skip, or no verdict
    return [Figure(kind="gate", name=name, value=_PASSED[value], labels=labels or {}, source=pointer(*path))]


def suite_digest(*paths: str | Path | None) -> str:
    """sha256 over the bytes of the files that define what is measured (in order); "" when there are none."""
    digest, any_file = hashlib.sha256(), False
    for path in paths:
        if path is None or not Path(path).is_file():
            continue
        any_file = True
        with open(path, "rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
        digest.update(b"\0")
    return f"sha256:{digest.hexdigest()[:16]}" if any_file else ""


def first_label(path: str | Path | None) -> dict[str, str]:
    """judge and rubric_version of a `labeller label` output's first row ({} for qrels or foreign tables)."""
    from labeller.io.trec import is_table

    if path is None or not Path(path).is_file() or not is_table(path):
        return {}
    from labeller.io.tables import read_rows

    try:
        for _, row in read_rows(path):
            return {k: str(row[k]) for k in ("judge", "rubric_version") if row.get(k) not in (None, "")}
    except Exception:  # noqa: BLE001 -- the job itself read this file; a label is a nicety, never an error
        return {}
    return {}


def evaluation_batch(ev, *, queries: str | Path | None = None, reports: Iterable[Path] = ()) -> ExportBatch:
    """`labeller evaluate --json`: every run's metrics and judged@k, each run against the reference
    (difference with its interval, p-values), the regression gate, the floors."""
    data = json.loads(ev.model_dump_json())
    figures: list[Figure] = []
    for run in data["runs"]:
        figures += figures_at(data, ("runs", run, "metrics"), "metric", {"run": run})
        figures += figures_at(data, ("runs", run, "judged"), "metric", {"run": run})
    for i, comparison in enumerate(data["comparisons"]):  # each run against the reference: the compare view
        for j, test in enumerate(comparison["tests"]):
            figures += figures_at(data, ("comparisons", i, "tests", j), "metric", only=_COMPARED,
                                  labels={"run": comparison["run"], "check": test["metric"],
                                          "reference": comparison["reference"]})
    if data.get("gate"):
        figures += gate_at(data, ("gate", "passed"), "regression")
        for i, check in enumerate(data["gate"]["checks"]):
            figures += gate_at(data, ("gate", "checks", i, "verdict"), "regression",
                               {"run": check["run"], "check": check["metric"]})
    for i, floor in enumerate(data.get("floors", [])):
        figures += gate_at(data, ("floors", i, "passed"), "floor", {"run": floor["run"], "check": floor["metric"]})
    label = first_label(ev.labels)
    if ev.holes is not None:
        label.setdefault("judge", ev.holes.judge)
    labels = RunLabels(pipeline="evaluate", retriever=ev.run, suite_digest=suite_digest(ev.labels, queries), **label)
    return ExportBatch(labels=labels, figures=figures, reports=list(reports), result_json=ev.model_dump_json(indent=2))


def agreement_batch(result, *, judge: str | None = None) -> ExportBatch:
    """`labeller agree --json`: the agreement figures, kappa at each binary cut, the prompt-change gate."""
    data = result.model_dump(mode="json")
    figures = figures_at(data, (), "metric", only=_AGREEMENT)
    figures += figures_at(data, ("kappa_binary",), "metric", prefix="kappa_binary@")
    figures += figures_at(data, (), "count", only=("n", "queries"))
    if data.get("gate"):
        figures += gate_at(data, ("gate", "verdict"), "prompt_change", {"check": data["gate"]["metric"]})
        figures += figures_at(data, ("gate",), "metric", {"check": data["gate"]["metric"]},
                              only=("new", "old", "difference"), prefix="gate_")
    label = first_label(result.labels)
    if judge:
        label["judge"] = judge
    html = [Path(p) for p in result.reports if str(p).endswith((".html", ".md"))]
    return ExportBatch(labels=RunLabels(pipeline="agree", suite_digest=suite_digest(result.gold), **label),
                       figures=figures, reports=html, result_json=json.dumps(data, ensure_ascii=False))


def pipeline_batch(result, cfg) -> ExportBatch:
    """`labeller run --json`: the pipeline's figures, its checks and status, the judge-drift check."""
    from labeller.pipelines.todays_run import system_name
    from labeller.rubric import load_rubric

    data = result.model_dump(mode="json")
    counts = {"judge_requests", "labelled", "new", "cached", "failed", "n", "fixed", "broken", "answers", "claims",
              "failures"}
    figures = []
    for f in figures_at(data, ("figures",), "metric"):
        if f.name.startswith("drift_"):
            continue  # the judge-drift check is exported whole, below
        kind: Kind = ("count" if f.name in counts or f.name.startswith("attribution.") else
                      "outcome" if f.name.startswith("outcome") else "metric")
        figures.append(f.model_copy(update={"kind": kind}))
    figures += figures_at(data, (), "count", only=("judge_requests",))
    figures += gate_at(data, ("status",), result.pipeline)
    for i, check in enumerate(data["checks"]):
        figures += gate_at(data, ("checks", i, "status"), check["suite"], {"check": check["name"]})
    drift = data.get("judge_drift") or {}
    if drift.get("status") == "checked":
        figures += figures_at(data, ("judge_drift",), "drift", only=("kappa_quadratic", "exact_agreement", "drifted"))
    rubric = cfg.new_rubric if result.pipeline == "validate_prompt" and cfg.new_rubric else cfg.judge.rubric
    if result.pipeline == "answers":  # its judge grades claims with the claim rubric
        from labeller.tasks.claims import load_claim_rubric

        version = load_claim_rubric(None if cfg.answers.claim_rubric is None else str(cfg.answers.claim_rubric)).version
    else:
        version = load_rubric(rubric).version
    retrieves = result.pipeline in ("regression", "label_slice", "answers")  # validate_prompt grades gold pairs
    labels = RunLabels(pipeline=result.pipeline, retriever=system_name(cfg) if retrieves else "",
                       judge=cfg.judge.spec, rubric_version=version,
                       suite_digest=suite_digest(cfg.inputs.queries, cfg.inputs.corpus, cfg.inputs.gold))
    reports = [Path(p) for p in result.reports.values() if Path(p).is_file()]
    return ExportBatch(labels=labels, figures=figures, reports=reports, result_json=result.model_dump_json(indent=2))


_PREDICTION = ("auc", "auc_low", "auc_high", "ok_rate", "failed_rate")
_REGRESSION = ("newly_failing", "lost_evidence", "kept_evidence", "never_had", "newly_fixed", "retrieval_dropped")


def outcomes_batch(result, *, labels: str | Path, outcomes: str | Path, evidence: str | Path | None = None,
                   reports: Iterable[Path] = ()) -> ExportBatch:
    """`labeller outcomes --json`: the task success rate, each metric's prediction of it (`check` = the metric),
    the four-cell attribution, the regression split and the downstream gate with its predicted rates."""
    data = json.loads(result.model_dump_json())
    figures = figures_at(data, (), "outcome", only=("outcome_rate",))
    figures += figures_at(data, ("joined",), "count", only=("outcomes", "analysed", "not_in_outcomes"))
    for i, prediction in enumerate(data["predictions"]):
        figures += figures_at(data, ("predictions", i), "metric", {"check": prediction["metric"]}, only=_PREDICTION)
    if data.get("attribution"):
        figures += figures_at(data, ("attribution", "counts"), "count", {"check": data["attribution"]["metric"]},
                              prefix="attribution:")
    if data.get("regression"):
        figures += figures_at(data, ("regression",), "count", {"check": data["regression"]["metric"],
                                                               "reference": data["regression"]["baseline"]},
                              only=_REGRESSION)
    if data.get("gate"):
        gate = {"check": data["gate"]["metric"], "reference": data["gate"]["baseline"]}
        figures += figures_at(data, ("gate",), "outcome", gate, only=("baseline_rate", "run_rate"),
                              prefix="predicted_")
        figures += figures_at(data, ("gate",), "metric", gate, only=("drop", "drop_low", "drop_high"),
                              prefix="predicted_")
        figures += gate_at(data, ("gate", "passed"), "downstream", gate)
    labels_of = RunLabels(pipeline="outcomes", retriever=data["run"], suite_digest=suite_digest(labels, outcomes,
                                                                                                evidence),
                          **first_label(labels))
    return ExportBatch(labels=labels_of, figures=figures, reports=list(reports),
                       result_json=result.model_dump_json(indent=2))


_STEP = ("requested", "new", "cached", "failed", "requests")


def answers_batch(report, *, retriever: str = "", rubric_version: str = "", files: Iterable[str | Path | None] = (),
                  reports: Iterable[Path] = ()) -> ExportBatch:
    """`labeller answers judge --json` (and the answers pipeline's report): mean groundedness, the claims and the
    answers in each attribution class, what each judging step sent and cost (`check` = split or verdicts), the
    gate and each of its checks."""
    data = json.loads(report.model_dump_json())
    figures = figures_at(data, (), "metric", only=("mean_groundedness",))
    figures += figures_at(data, (), "count", only=("claims",))
    figures += figures_at(data, ("counts",), "count", prefix="attribution:")
    for step in data["stats"]:
        figures += figures_at(data, ("stats", step), "count", {"check": step}, only=_STEP)
        figures += figures_at(data, ("stats", step), "metric", {"check": step}, only=("cost_usd",))
    if data["checks"]:  # a dry run has no gate
        figures += gate_at(data, ("passed",), "answers")
    for i, check in enumerate(data["checks"]):
        figures += gate_at(data, ("checks", i, "passed"), "answers", {"check": check["name"]})
    labels = RunLabels(pipeline="answers", retriever=retriever, judge=data["judge"], rubric_version=rubric_version,
                       suite_digest=suite_digest(*files))
    return ExportBatch(labels=labels, figures=figures, reports=list(reports),
                       result_json=report.model_dump_json(indent=2))
