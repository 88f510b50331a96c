"""The columnar path (pyarrow reader + numpy kernels) against trec_eval (pytrec_eval-terrier) and
ir_measures, per query, on a randomized run full of ties and of scores that differ only below
single precision: every metric labeller offers, relevance levels, both gains, both averagings.
The line-by-line reader (forced by a tab in the file) must give exactly the same values."""

from __future__ import annotations

import random

import ir_measures
import numpy as np
import pytest
import pytrec_eval

from labeller.evaluation import EvaluateOptions, evaluate
from labeller.evaluation.columnar import read_trec_columns
from labeller.evaluation.qrels import load_judgments

# ours -> (trec_eval measure, its result key, binary?); mrr@k and judged@k are checked separately
TREC = {
    "ndcg@5": ("ndcg_cut.5", "ndcg_cut_5", False), "ndcg@20": ("ndcg_cut.20", "ndcg_cut_20", False),
    "ndcg": ("ndcg", "ndcg", False), "recall@10": ("recall.10", "recall_10", True),
    "recall@100": ("recall.100", "recall_100", True), "precision@5": ("P.5", "P_5", True),
    "precision@30": ("P.30", "P_30", True), "mrr": ("recip_rank", "recip_rank", True),
    "map": ("map", "map", True), "map@10": ("map_cut.10", "map_cut_10", True),
    "hit_rate@5": ("success.5", "success_5", True),
}
METRICS = ",".join([*TREC, "rr@10", "mrr@3"])


def randomized(seed: int = 11, queries: int = 60):
    """(qrels 0-3, run): coarse score grids (ties), jitters far below float32 resolution, signed zeros,
    negative scores, doc ids whose string order is not numeric (d9 > d10), a no-answer query, a judged
    query the run lacks, and a run query nobody judged."""
    rng = random.Random(seed)
    qrels, run = {}, {}
    for q in range(queries):
        docs = [f"d{i}" for i in rng.sample(range(1, 600), rng.randrange(5, 150))]
        judged = docs[: len(docs) // 2] + [f"d{i}" for i in rng.sample(range(600, 700), 5)]
        qrels[f"q{q}"] = {d: rng.choice([0, 0, 0, 1, 2, 3]) for d in judged}
        scores = {}
        for d in docs:
            base = rng.choice([round(rng.uniform(-2, 2), 1), 0.0, -0.0, 1.0 + round(rng.random(), 2)])
            scores[d] = base + (rng.random() * 1e-9 if rng.random() < 0.3 else 0.0)
        run[f"q{q}"] = scores
    qrels["q0"] = {d: 0 for d in qrels["q0"]}
    run.pop("q1")
    run["nobody"] = {"d1": 1.0, "d2": 1.0}
    return qrels, run


def write(path, qrels, run, separator=" "):
    run_lines = [separator.join([q, "Q0", d, str(i), repr(s), "tag"]) + "\n"
                 for q, ds in run.items() for i, (d, s) in enumerate(ds.items(), start=1)]
    (path / "run.trec").write_text("".join(reversed(run_lines)))  # file order must not matter
    (path / "qrels.txt").write_text("".join(f"{q} 0 {d} {g}\n" for q, ds in qrels.items() for d, g in ds.items()))
    return path / "run.trec", path / "qrels.txt"


def trec_eval(qrels, run, relevant_from: int, gain: str):
    gains = qrels if gain == "linear" else {q: {d: 2 ** g - 1 for d, g in ds.items()} for q, ds in qrels.items()}
    out = pytrec_eval.RelevanceEvaluator(gains, {m for m, _, b in TREC.values() if not b}).evaluate(run)
    binary = pytrec_eval.RelevanceEvaluator(qrels, {m for m, _, b in TREC.values() if b},
                                            relevance_level=relevant_from - 1).evaluate(run)
    for qid, values in binary.items():
        out[qid].update(values)
    expected = {name: {q: v[key] for q, v in out.items()} for name, (_, key, _) in TREC.items()}
    for name, k in (("rr@10", 10), ("mrr@3", 3)):  # trec_eval's recip_rank on the ranking cut at k
        cut = {}
        for q, ds in run.items():
            order = sorted(ds, key=lambda d: (float(np.float32(ds[d])), d), reverse=True)
            cut[q] = {d: ds[d] for d in order[:k]}
        rr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}, relevance_level=relevant_from - 1)
        expected[name] = {q: v["recip_rank"] for q, v in rr.evaluate(cut).items()}
    return expected


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    qrels, run = randomized()
    run_path, qrels_path = write(tmp_path_factory.mktemp("columnar"), qrels, run)
    assert read_trec_columns(run_path) is not None  # the fast reader takes this file
    return qrels, run, run_path, qrels_path


@pytest.mark.parametrize("gain", ["linear", "exponential"])
@pytest.mark.parametrize("relevant_from", [2, 3, 4])
def test_every_metric_matches_trec_eval_per_query(data, relevant_from, gain):
    qrels, run, run_path, qrels_path = data
    ours = evaluate(EvaluateOptions(runs=[run_path], labels=qrels_path, metrics=METRICS,
                                    relevant_from=relevant_from, gain=gain))
    assert ours.ranx_kernels == "numpy"
    expected = trec_eval(qrels, run, relevant_from, gain)
    changed = 0
    for name, per_query in expected.items():
        assert set(ours.per_query[name]) == set(per_query), name
        for qid, value in per_query.items():
            assert ours.per_query[name][qid] == pytest.approx(value, abs=1e-12), (name, qid)
            changed += value != 0
        assert ours.trec_eval[name] == pytest.approx(sum(per_query.values()) / len(per_query), abs=1e-12)
    assert changed > 200  # not a table of zeros


def test_signed_zeros_and_sub_float32_jitter_tie_as_in_trec_eval(data):
    # Guard against a vacuous test: ranking by the full double must change some trec_eval value.
    qrels, run, run_path, qrels_path = data
    exact = evaluate(EvaluateOptions(runs=[run_path], labels=qrels_path, metrics="ndcg@5,mrr", exact_scores=True))
    default = evaluate(EvaluateOptions(runs=[run_path], labels=qrels_path, metrics="ndcg@5,mrr"))
    assert exact.per_query != default.per_query


def test_judged_at_k_matches_ir_measures(data):
    qrels, run, run_path, qrels_path = data
    ours = evaluate(EvaluateOptions(runs=[run_path], labels=qrels_path, metrics="ndcg@10,recall@100"))
    judgments = load_judgments(qrels_path)
    theirs = {}
    for k in (10, 100):
        ranked = {q: {d: float(len(ds) - i) for i, d in enumerate(docs)} for q, ds in run.items()
                  for docs in [sorted(ds, key=lambda d: (float(np.float32(ds[d])), d), reverse=True)]}
        values = {m.query_id: m.value for m in ir_measures.iter_calc([ir_measures.Judged @ k], qrels, ranked)}
        theirs[k] = sum(values[q] for q in ours.per_query["ndcg@10"]) / len(ours.per_query["ndcg@10"])
        assert ours.judged[f"judged@{k}"] == pytest.approx(theirs[k], abs=1e-12)
    assert judgments.pairs > 0 and theirs[10] < 1


def test_average_all_counts_missing_queries_as_zero(data):
    qrels, run, run_path, qrels_path = data
    ours = evaluate(EvaluateOptions(runs=[run_path], labels=qrels_path, metrics="ndcg@20,map,recall@10",
                                    average="all"))
    expected = trec_eval(qrels, run, 3, "linear")
    for name in ("ndcg@20", "map", "recall@10"):
        assert ours.per_query[name]["q1"] == 0.0
        assert ours.trec_eval[name] == pytest.approx(sum(expected[name].values()) / len(qrels), abs=1e-12)


@pytest.mark.parametrize("exact_scores", [False, True])
def test_the_line_by_line_reader_gives_the_same_values(data, tmp_path, exact_scores):
    qrels, run, run_path, qrels_path = data
    mixed = tmp_path / "mixed.trec"
    mixed.write_text(run_path.read_text().replace(" tag\n", "\ttag\n", 1))
    assert read_trec_columns(mixed) is None  # a tab among spaces: not the fast reader's
    fast = evaluate(EvaluateOptions(runs=[run_path], labels=qrels_path, metrics=METRICS, exact_scores=exact_scores))
    slow = evaluate(EvaluateOptions(runs=[mixed], labels=qrels_path, metrics=METRICS, exact_scores=exact_scores))
    assert fast.per_query == slow.per_query and fast.judged == slow.judged and fast.unjudged == slow.unjudged


def test_tab_separated_files_take_the_fast_reader_with_the_same_values(data, tmp_path):
    qrels, run, run_path, qrels_path = data
    tabbed, tabbed_qrels = write(tmp_path, qrels, run, separator="\t")
    tabbed_qrels.write_text(qrels_path.read_text().replace(" ", "\t"))
    assert read_trec_columns(tabbed) is not None
    spaced = evaluate(EvaluateOptions(runs=[run_path], labels=qrels_path, metrics=METRICS))
    tabs = evaluate(EvaluateOptions(runs=[tabbed], labels=tabbed_qrels, metrics=METRICS))
    assert tabs.per_query == spaced.per_query and tabs.judged == spaced.judged


def test_ranx_and_the_numpy_kernels_agree(data, monkeypatch):
    _, _, run_path, qrels_path = data
    ours = evaluate(EvaluateOptions(runs=[run_path], labels=qrels_path, metrics=METRICS, gain="exponential"))
    monkeypatch.setenv("LABELLER_JIT", "off")
    theirs = evaluate(EvaluateOptions(runs=[run_path], labels=qrels_path, metrics=METRICS, gain="exponential"))
    assert theirs.ranx_kernels == "interpreted"
    for name, per_query in theirs.per_query.items():
        assert ours.per_query[name] == pytest.approx(per_query, abs=1e-12), name
    assert ours.judged == pytest.approx(theirs.judged, abs=1e-12) and ours.unjudged == theirs.unjudged
