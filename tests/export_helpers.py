"""Jobs whose figures the exporter tests push: an evaluate comparing two runs with a baseline and a floor,
an agree with a prompt-change gate, and the bundled regression pipeline, each run through the real CLI.

`expected_*` lists, from a job's printed `--json`, the figures a backend must hold: written out here from
the JSON's own fields (not through labeller.exporters.batches), so a figure the exporter drops, renames
or recomputes is caught.
"""

from __future__ import annotations

import json
from pathlib import Path

from agreement_helpers import synthetic as agreement_data, write_gold, write_labels
from evaluation_helpers import cli, synthetic, write_qrels, write_run

PIPELINES = Path(__file__).resolve().parents[1] / "pipelines"
SECRET = "hunter2-s3cret-pw"


def evaluate_inputs(root: Path) -> list[str]:
    qrels, run = synthetic(seed=0)
    _, weak = synthetic(seed=3)
    labels = write_qrels(root / "qrels.txt", qrels)
    good, bad = write_run(root / "bm25.trec", run), write_run(root / "weak.trec", weak)
    return ["evaluate", "--run", good, "--run", bad, "--labels", labels, "--baseline", bad, "--min", "ndcg@10=0.1",
            "--bootstrap", "200", "--permutations", "200", "--report", root / "report"]


def agree_inputs(root: Path) -> list[str]:
    gold, judge = agreement_data(8, 6, seed=1)
    _, old = agreement_data(8, 6, seed=1, noise=0.2)
    return ["agree", "--labels", write_labels(root / "labels.jsonl", judge), "--gold", write_gold(root / "gold.jsonl", gold),
            "--baseline", write_labels(root / "old.jsonl", old), "--bootstrap", "200", "--report", root / "agree-report"]


def run_json(capsys, *args) -> tuple[int, dict, str]:
    code, out, err = cli(*args, "--json", capsys=capsys)
    return code, json.loads(out), err


def expected_evaluate(data: dict) -> list[tuple[str, str, dict[str, str], float]]:
    """(family, name, own labels, value): every figure `labeller evaluate --json` has."""
    rows = []
    for run, scores in data["runs"].items():
        rows += [("metric", m, {"run": run}, v) for m, v in {**scores["metrics"], **scores["judged"]}.items()
                 if v is not None]
    rows += [("metric", name, {"run": c["run"], "check": t["metric"], "reference": c["reference"]}, t[name])
             for c in data["comparisons"] for t in c["tests"]
             for name in ("difference", "ci_low", "ci_high", "p_randomization", "p_t_test") if t[name] is not None]
    rows.append(("gate", "regression", {}, float(data["gate"]["passed"])))
    rows += [("gate", "regression", {"run": c["run"], "check": c["metric"]},
              0.0 if c["verdict"] in ("regression", "not-comparable") else 1.0) for c in data["gate"]["checks"]]
    rows += [("gate", "floor", {"run": f["run"], "check": f["metric"]}, float(f["passed"])) for f in data["floors"]]
    return rows


def expected_agree(data: dict) -> list[tuple[str, str, dict[str, str], float]]:
    names = ("kappa", "kappa_linear", "kappa_quadratic", "alpha_ordinal", "kappa_relevant", "spearman", "kendall",
             "exact_agreement", "within_one", "mean_signed_difference")
    rows = [("metric", n, {}, data[n]) for n in names if data[n] is not None]
    rows += [("metric", f"kappa_binary@{cut}", {}, v) for cut, v in data["kappa_binary"].items() if v is not None]
    rows += [("count", n, {}, float(data[n])) for n in ("n", "queries")]
    gate = data["gate"]
    rows.append(("gate", "prompt_change", {"check": gate["metric"]}, 1.0 if gate["verdict"] == "pass" else 0.0))
    rows += [("metric", f"gate_{k}", {"check": gate["metric"]}, gate[k]) for k in ("new", "old", "difference")
             if gate[k] is not None]
    return rows


def expected_pipeline(data: dict) -> list[tuple[str, str, dict[str, str], float]]:
    counts = {"judge_requests", "labelled", "new", "cached", "failed", "n", "fixed", "broken", "answers", "claims",
              "failures"}
    rows = [("count" if k in counts or k.startswith("attribution.") else "metric", k, {}, v)
            for k, v in data["figures"].items()
            if v is not None and not k.startswith("drift_")]
    rows.append(("count", "judge_requests", {}, float(data["judge_requests"])))
    rows.append(("gate", data["pipeline"], {}, 1.0 if data["status"] == "passed" else 0.0))
    rows += [("gate", c["suite"], {"check": c["name"]}, 1.0 if c["status"] == "pass" else 0.0) for c in data["checks"]
             if c["status"] != "skip"]
    return rows
