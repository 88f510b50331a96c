"""labeller evaluate against trec_eval (pytrec_eval-terrier): per query and mean, ties included."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import pytrec_eval
from evaluation_helpers import DL19, cli_json, needs_dl19, synthetic, write_qrels, write_run

# our name -> (trec_eval measure, result key, binary?)
MEASURES = {
    "ndcg@5": ("ndcg_cut.5", "ndcg_cut_5", False),
    "ndcg@10": ("ndcg_cut.10", "ndcg_cut_10", False),
    "ndcg": ("ndcg", "ndcg", False),
    "recall@10": ("recall.10", "recall_10", True),
    "recall@30": ("recall.30", "recall_30", True),
    "map": ("map", "map", True),
    "map@10": ("map_cut.10", "map_cut_10", True),
    "precision@5": ("P.5", "P_5", True),
    "mrr": ("recip_rank", "recip_rank", True),
    "hit_rate@5": ("success.5", "success_5", True),
}


def trec_eval(qrels, run, relevant_from: int):
    """Per-query values from pytrec_eval; relevance level in TREC grades is ours - 1."""
    graded = pytrec_eval.RelevanceEvaluator(qrels, {m for m, _, b in MEASURES.values() if not b})
    binary = pytrec_eval.RelevanceEvaluator(qrels, {m for m, _, b in MEASURES.values() if b},
                                            relevance_level=relevant_from - 1)
    out = graded.evaluate(run)
    for qid, values in binary.evaluate(run).items():
        out[qid].update(values)
    return {name: {q: v[key] for q, v in out.items()} for name, (_, key, _) in MEASURES.items()}


def rr_at(qrels, run, k: int, relevant_from: int):
    """MRR@k: trec_eval's recip_rank on each ranking cut at k (trec_eval order: score, then doc id, descending)."""
    cut = {q: dict(sorted(ds.items(), key=lambda item: (item[1], item[0]), reverse=True)[:k]) for q, ds in run.items()}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}, relevance_level=relevant_from - 1)
    return {q: v["recip_rank"] for q, v in evaluator.evaluate(cut).items()}


@pytest.fixture
def data(tmp_path):
    qrels, run = synthetic(seed=7)
    return qrels, run, write_qrels(tmp_path / "qrels.txt", qrels), write_run(tmp_path / "run.trec", run)


def test_the_synthetic_data_has_ties_that_change_results(data):
    # Guard against a vacuous parity test: breaking ties the other way (doc id ascending) must change values.
    qrels, run, _, _ = data
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank", "ndcg_cut.10"}, relevance_level=1)
    trec_order = evaluator.evaluate(run)
    ascending = {q: sorted(ds, key=lambda d: (-ds[d], d)) for q, ds in run.items()}
    other = evaluator.evaluate({q: {d: float(len(ds) - i) for i, d in enumerate(ds)} for q, ds in ascending.items()})
    changed = [q for q in trec_order for m in ("recip_rank", "ndcg_cut_10")
               if abs(trec_order[q][m] - other[q][m]) > 1e-9]
    assert len(changed) >= 3


@pytest.mark.parametrize("relevant_from", [2, 3])
def test_per_query_and_means_match_trec_eval_with_ties(data, capsys, relevant_from):
    qrels, run, qrels_path, run_path = data
    names = ",".join(list(MEASURES) + ["mrr@10"])
    ours = cli_json("evaluate", "--run", run_path, "--labels", qrels_path, "--from-scale", "0-3",
                    "--metrics", names, "--relevant-from", relevant_from, capsys=capsys)
    expected = trec_eval(qrels, run, relevant_from)
    expected["mrr@10"] = rr_at(qrels, run, 10, relevant_from)
    assert set(ours["per_query"]) == set(expected)
    for name, per_query in expected.items():
        assert set(ours["per_query"][name]) == set(per_query), name  # judged ∩ run, as trec_eval
        for qid, value in per_query.items():
            assert ours["per_query"][name][qid] == pytest.approx(value, abs=1e-9), (name, qid)
        mean = sum(per_query.values()) / len(per_query)
        assert ours["trec_eval"][name] == pytest.approx(mean, abs=1e-9), name
        answerable = [v for q, v in per_query.items() if q not in ours["no_answer"]["query_ids"]]
        assert ours["metrics"][name] == pytest.approx(sum(answerable) / len(answerable), abs=1e-9), name
    no_answer = sorted(q for q in expected["map"] if max(qrels[q].values()) < relevant_from - 1)
    assert ours["no_answer"]["query_ids"] == no_answer and "q0" in no_answer


def test_average_all_is_trec_eval_minus_c(data, capsys):
    qrels, run, qrels_path, run_path = data
    ours = cli_json("evaluate", "--run", run_path, "--labels", qrels_path, "--metrics", "ndcg@10,map,recall@10",
                    "--average", "all", capsys=capsys)
    expected = trec_eval(qrels, run, 3)
    for name in ("ndcg@10", "map", "recall@10"):
        # trec_eval -c: every judged query counts, one missing from the run scores 0.
        assert ours["per_query"][name]["q1"] == 0.0
        assert ours["trec_eval"][name] == pytest.approx(sum(expected[name].values()) / len(qrels), abs=1e-9)
    assert ours["queries"]["missing_from_run"] == 1 and ours["queries"]["evaluated"] == len(qrels)


def _subprocess_json(args: list[str], **env: str) -> dict:
    environment = {k: v for k, v in os.environ.items() if k not in env or env[k]}
    environment.update({k: v for k, v in env.items() if v})
    done = subprocess.run([sys.executable, "-m", "labeller", *args], env=environment,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_interpreted_and_compiled_ranx_agree(data, tmp_path):
    """The compiled (numba) kernels and the interpreted ones give the same values (this compiles them,
    into the user cache directory when NUMBA_CACHE_DIR is not set)."""
    qrels, run, qrels_path, run_path = data
    args = ["evaluate", "--run", str(run_path), "--labels", str(qrels_path), "--metrics",
            "ndcg@10,ndcg@5,recall@30,map,mrr@10,precision@5,hit_rate@5", "--gain", "exponential", "--json"]
    interpreted = _subprocess_json(args, LABELLER_JIT="off")
    compiled = _subprocess_json(args, LABELLER_JIT="on", NUMBA_CACHE_DIR="", XDG_CACHE_HOME=str(tmp_path / "xdg"))
    assert compiled["ranx_kernels"] == "compiled" and interpreted["ranx_kernels"] == "interpreted"
    assert any((tmp_path / "xdg" / "labeller" / "numba").rglob("*.nbi"))  # compiled once, cached for next time
    for name, per_query in interpreted["per_query"].items():
        for qid, value in per_query.items():
            assert compiled["per_query"][name][qid] == pytest.approx(value, abs=1e-12), (name, qid)


def test_importing_ranx_after_labeller_still_gives_the_whole_ranx(data):
    """labeller imports only ranx.metrics; a later `import ranx` must get the real package, and ranx's
    own Qrels/Run/evaluate fed labeller's dicts (pseudo-scores in trec_eval order) agree with us."""
    _, _, qrels_path, run_path = data
    code = f"""
import json
from labeller.evaluation import (EvaluateOptions, evaluate, load_judgments, load_run, ranx_qrels_dict,
                                 ranx_run_dict)
ev = evaluate(EvaluateOptions(runs=[{str(run_path)!r}], labels={str(qrels_path)!r}, metrics="ndcg@10,recall@20"))
import ranx
qrels = ranx.Qrels(ranx_qrels_dict(load_judgments({str(qrels_path)!r})))
run = ranx.Run(ranx_run_dict(load_run({str(run_path)!r})))
theirs = ranx.evaluate(qrels, run, ["ndcg@10", "recall@20-l2"], return_mean=False, make_comparable=True)
print(json.dumps([ev.ranx_kernels, ev.per_query, {{k: v.tolist() for k, v in theirs.items()}},
                  list(run.get_query_ids())]))
"""
    done = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, NUMBA_DISABLE_JIT="1"),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    kernels, ours, theirs, query_ids = json.loads(done.stdout)
    assert kernels == "numpy"  # labeller's own kernels, checked here against ranx itself
    for name, ranx_name in (("ndcg@10", "ndcg@10"), ("recall@20", "recall@20-l2")):
        # make_comparable also scores judged queries missing from the run (as 0): compare the shared ones.
        values = dict(zip(query_ids, theirs[ranx_name], strict=True))
        assert {q: values[q] for q in ours[name]} == pytest.approx(ours[name], abs=1e-12)


PUBLISHED = {"ndcg@10": 0.5058, "recall@1000": 0.7501, "recall@100": 0.4910, "map": 0.3013}


@needs_dl19
def test_dl19_bm25_reproduces_published_trec_eval_figures(capsys):
    ours = cli_json("evaluate", "--run", DL19 / "run.bm25base_p.gz", "--labels", DL19 / "qrels-pass.txt",
                    "--from-scale", "0-3", "--metrics", "ndcg@10,recall@1000,recall@100,map", "--relevant-from", 3,
                    capsys=capsys)
    for name, published in PUBLISHED.items():
        assert ours["metrics"][name] == pytest.approx(published, abs=1e-4), name
    assert ours["no_answer"]["query_ids"] == [] and ours["metrics"] == ours["trec_eval"]
    assert ours["queries"]["evaluated"] == 43


@needs_dl19
def test_dl19_per_query_matches_pytrec_eval(capsys):
    import gzip

    qrels: dict = {}
    for line in (DL19 / "qrels-pass.txt").read_text().splitlines():
        q, _, d, g = line.split()
        qrels.setdefault(q, {})[d] = int(g)
    run: dict = {}
    for line in gzip.decompress((DL19 / "run.bm25base_p.gz").read_bytes()).decode().splitlines():
        q, _, d, _, s, _ = line.split()
        run.setdefault(q, {})[d] = float(s)
    ours = cli_json("evaluate", "--run", DL19 / "run.bm25base_p.gz", "--labels", DL19 / "qrels-pass.txt",
                    "--metrics", ",".join(MEASURES), capsys=capsys)
    expected = trec_eval(qrels, run, 3)
    for name, per_query in expected.items():
        for qid, value in per_query.items():
            assert ours["per_query"][name][qid] == pytest.approx(value, abs=1e-9), (name, qid)


def below_single_precision(seed: int = 3, queries: int = 20, depth: int = 30):
    """(qrels, run): scores on a coarse grid in [1, 2], each plus a jitter under 1e-9, far below a
    32-bit float's resolution there (1.2e-7). In double precision the jitter breaks every tie; in
    trec_eval's `float sim` the grid ties stand and go by doc id, descending."""
    import random

    rng = random.Random(seed)
    qrels, run = {}, {}
    for q in range(queries):
        docs = [f"d{i}" for i in rng.sample(range(1, 200), depth)]
        qrels[f"q{q}"] = {d: rng.choice([0, 0, 1, 2, 3]) for d in docs[: depth // 2]}
        run[f"q{q}"] = {d: 1.0 + round(rng.random(), 1) + rng.random() * 1e-9 for d in docs}
    return qrels, run


def test_scores_that_differ_only_below_single_precision_tie_as_in_trec_eval(tmp_path, capsys):
    qrels, run = below_single_precision()
    qrels_path, run_path = write_qrels(tmp_path / "qrels.txt", qrels), tmp_path / "run.trec"
    # repr keeps every digit of the double, so the file holds the sub-float32 differences.
    run_path.write_text("".join(f"{q} Q0 {d} 0 {s!r} t\n" for q, ds in run.items() for d, s in ds.items()))
    args = ["evaluate", "--run", run_path, "--labels", qrels_path, "--metrics", ",".join(MEASURES)]
    ours, exact = cli_json(*args, capsys=capsys), cli_json(*args, "--exact-scores", capsys=capsys)
    expected = trec_eval(qrels, run, 3)  # pytrec_eval: trec_eval's code, scores held as C floats
    for name, per_query in expected.items():
        for qid, value in per_query.items():
            assert ours["per_query"][name][qid] == pytest.approx(value, abs=1e-9), (name, qid)
    # Not vacuous: ranking by the full double changes values, and those are trec_eval's on that order.
    by_double = {q: {d: float(len(ds) - i) for i, d in enumerate(sorted(ds, key=ds.get, reverse=True))}
                 for q, ds in run.items()}
    double_expected = trec_eval(qrels, by_double, 3)
    changed = {(n, q) for n, pq in expected.items() for q, v in pq.items()
               if abs(exact["per_query"][n][q] - v) > 1e-9}
    assert len(changed) >= 5
    for name, per_query in double_expected.items():
        for qid, value in per_query.items():
            assert exact["per_query"][name][qid] == pytest.approx(value, abs=1e-9), (name, qid)
    assert exact["settings"]["exact_scores"] is True and ours["settings"]["exact_scores"] is False


@needs_dl19
def test_dl19_matches_pytrec_eval_to_1e9_under_nist_and_llm_like_qrels(tmp_path):
    """benchmarks/dl19_parity.py's strict check: ndcg_cut_10, map, recall_100 and recip_rank, every
    query and mean, under the NIST and LLM-like qrels, for BM25 with and without a jitter below
    single precision; the jitter must matter (ranking by the full double moves values)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "dl19_parity.py"
    spec = importlib.util.spec_from_file_location("dl19_parity", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rows = module.strict_cross_check(tmp_path)
    assert len(rows) == 4
    for qrels_name, run_name, per_query, means, by_double in rows:
        assert per_query <= 1e-9 and means <= 1e-9, (qrels_name, run_name)
        if "jitter" in run_name:
            assert by_double > 1e-6, (qrels_name, run_name)
