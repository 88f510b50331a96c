"""Corrected metrics (`evaluate --gold`): checked against the plain metric under full gold, hand-computed
fixtures, and the unbiasedness of the linear estimators over many random gold samples."""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest

from labeller.evaluation.corrected import corrected
from labeller.evaluation.metrics import parse_metrics
from labeller.evaluation.qrels import Judgments
from labeller.evaluation.results import Settings
from labeller.evaluation.runs import Ranking
from labeller.evaluation.scoring import score_run
from tests.cli_helpers import cli

METRICS = "ndcg@5,ndcg@10,recall@20,precision@5,mrr@10,hit_rate@3,precision"


def world(seed: int = 0, queries: int = 12, pool: int = 30):
    """(human grades, judge grades that err, two runs over the pool): grades on labeller's 1-4."""
    rng = random.Random(seed)
    human, judge, good, bad = {}, {}, {}, {}
    for q in range(queries):
        qid = f"q{q}"
        docs = [f"d{q}-{i}" for i in range(pool)]
        human[qid] = {d: rng.choice([1, 1, 1, 2, 2, 3, 4]) for d in docs}
        # the judge is generous: one grade up now and then, one down more rarely
        judge[qid] = {d: min(4, max(1, g + rng.choice([0, 0, 0, 1, 1, -1]))) for d, g in human[qid].items()}
        noisy = {d: human[qid][d] + rng.random() * 2.5 for d in docs}
        good[qid] = sorted(docs, key=lambda d: -noisy[d])
        bad[qid] = list(reversed(good[qid]))
    return human, judge, Ranking("good", docs=good), Ranking("bad", docs=bad)


def judgments(grades, source="x", kind="gold") -> Judgments:
    return Judgments({q: dict(d) for q, d in grades.items()}, source, kind)


def subset(grades, share: float, seed: int):
    rng = random.Random(seed)
    out: dict[str, dict[str, int]] = {}
    for q, docs in grades.items():
        for d, g in docs.items():
            if rng.random() < share:
                out.setdefault(q, {})[d] = g
    return out


def run_corrected(rankings, labels, gold, settings, metrics=METRICS, **kw):
    specs = parse_metrics(metrics)
    scores = {r.name: score_run(r, labels, specs, settings) for r in rankings}
    return corrected(rankings, scores, labels, gold, specs, settings, **kw), scores


def human_means(ranking, human, labels_scores, settings, metrics=METRICS):
    """The plain metric under the human grades, averaged over the queries the corrected figure averages."""
    specs = parse_metrics(metrics)
    truth = score_run(ranking, judgments(human), specs, settings)
    out = {}
    for s in specs:
        queries = set(labels_scores.per_query[s.name]) - set(labels_scores.no_answer.query_ids)
        out[s.name] = float(np.mean([truth.per_query[s.name][q] for q in queries]))
    return out


@pytest.mark.parametrize("design", ["pairs", "queries"])
@pytest.mark.parametrize("gain", ["linear", "exponential"])
def test_full_gold_gives_the_plain_metric_under_the_gold(design, gain):
    human, judge, good, bad = world()
    settings = Settings(relevant_from=3, gain=gain)
    result, scores = run_corrected([good, bad], judgments(judge, kind="labels"), judgments(human), settings,
                                   design=design, reference="good")
    assert result.design == design
    for ranking in (good, bad):
        truth = human_means(ranking, human, scores[ranking.name], settings)
        for m in result.runs[ranking.name]:
            if m.corrected.estimate is None:  # MRR, hit rate under the pair design
                assert design == "pairs" and m.metric.split("@")[0] in ("mrr", "hit_rate")
                continue
            assert m.corrected.estimate == pytest.approx(truth[m.metric], abs=1e-12), m.metric
            assert m.corrected.se_judge == pytest.approx(0.0, abs=1e-12)
    for d in result.differences:
        assert d.corrected.estimate == pytest.approx(
            next(m.corrected.estimate for m in result.runs["bad"] if m.metric == d.metric)
            - next(m.corrected.estimate for m in result.runs["good"] if m.metric == d.metric), abs=1e-12)


def test_gold_that_agrees_with_the_judge_leaves_the_plain_figure():
    human, judge, good, bad = world(1)
    labels = judgments(judge, kind="labels")
    result, _ = run_corrected([good], labels, judgments(subset(judge, 0.3, 1)), Settings())
    for m in result.runs["good"]:
        if m.metric.split("@")[0] in ("mrr", "hit_rate"):
            continue  # not corrected under the pair design
        assert m.corrected.estimate == pytest.approx(m.plain, abs=1e-12), m.metric
        assert m.corrected.se_judge == pytest.approx(0.0, abs=1e-12)


def test_hand_computed_pair_design():
    """One query, four pairs the judge calls relevant (grade 3); people graded a (not relevant) and c
    (relevant). Stratum: N = 4, n = 2, pi = 1/2; all-query calibration P(relevant | judge 3) = 1/2, and
    the query's own, shrunk with 4 pseudo-pairs: (1 + 4/2) / (2 + 4) = 1/2 for b and d. Leave one out:
    a's prediction (1 + 2) / 5 = 3/5, residual -3/5; c's 2/5, residual +3/5.
    P@2 at the model point: a 0, b 1/2 -> 1/4; z_a = (1/2)(-3/5) = -3/10, z_c = 0 (not in the top 2).
    Estimate 1/4 + (z_a + z_c)(1/pi - 1) = -1/20. Variance 4^2 (1 - 1/2) var(-3/10, 0) / 2 = 0.18.
    Recall@2 predicts from the calibration tilted by the query's gold (labeller.evaluation.corrected, TILTED):
    seen grades 1 and 3 once each, expected 1/2 + 1/2 of each, pseudo-pairs 4 x (1/2, 1/2) = 2 each: factor
    (1 + 2) / (1 + 2) = 1, so the model point is as above, b and d at 1/2. Without a itself: factors
    (0 + 2) / (1/2 + 2) = 4/5 for grade 1 and (1 + 2) / (5/2) = 6/5 for grade 3, tilted (2/5, 3/5); a's
    prediction P(relevant) = (1 + 4 * 3/5) / 5 = 17/25, residual -17/25; c's, symmetrically, 8/25, residual
    +17/25. Hits 1/2, R = 0 + 1/2 + 1 + 1/2 = 2 -> 1/4; d/d top-2 relevance 1/R = 1/2, d/d R = -hits/R^2 =
    -1/8: z_a = (1/2 - 1/8)(-17/25) = -51/200, z_c = -17/200; estimate 1/4 - 68/200 = -9/100, variance
    16 (1/2) var(-51/200, -17/200) / 2 = 4 * (34/200)^2 / 2 = 0.0578. (Untilted, as P@2: residuals -+3/5,
    estimate -1/20, variance 0.045.)"""
    labels = judgments({"q": {"a": 3, "b": 3, "c": 3, "d": 3}}, kind="labels")
    gold = judgments({"q": {"a": 1, "c": 3}})
    run = Ranking("r", docs={"q": ["a", "b", "c", "d"]})
    result, _ = run_corrected([run], labels, gold, Settings(relevant_from=3), metrics="precision@2,recall@2",
                              design="pairs")
    p2, r2 = result.runs["r"]
    assert p2.plain == 1.0
    assert p2.corrected.estimate == pytest.approx(-0.05)
    assert p2.corrected.se_judge == pytest.approx(math.sqrt(0.18))
    assert r2.corrected.estimate == pytest.approx(-0.09)
    assert r2.corrected.se_judge == pytest.approx(math.sqrt(0.0578))
    # 2 gold pairs for the query: recall's linearisation warning (labeller.evaluation.corrected_recall), no other
    assert [w for w in result.warnings if "2.0 a query" not in w] == [] and len(result.warnings) == 1


def test_hand_computed_query_design():
    """Six queries; people graded every pair of q1, q2, q3. Estimate = mean_S human + lambda (mean_Q plain -
    mean_S plain); the judge's P@1 is 1 everywhere, so lambda = 0: the mean of people's P@1 (0, 1, 1) = 2/3,
    judge-error variance (1 - 3/6) s^2 / 3 with s^2 = (4/9 + 1/9 + 1/9) / (3 - 1) = 1/3 (people's SS 2/3 is above
    the pseudo-query's 1/4, the floor of the human-only form): se sqrt(1/18), and a Student t quantile on 2 degrees
    of freedom (4.3027, lambda 0 spends none on a slope)."""
    labels = judgments({f"q{i}": {"a": 3, "b": 1} for i in range(1, 7)}, kind="labels")
    gold = judgments({"q1": {"a": 1, "b": 3}, "q2": {"a": 3, "b": 1}, "q3": {"a": 3, "b": 3}})
    run = Ranking("r", docs={f"q{i}": ["a", "b"] for i in range(1, 7)})
    result, _ = run_corrected([run], labels, gold, Settings(relevant_from=3), metrics="precision@1,mrr")
    assert result.design == "queries"
    p1, rr = result.runs["r"]
    assert p1.corrected.estimate == pytest.approx(2 / 3)
    assert p1.corrected.se_judge == pytest.approx(math.sqrt(1 / 18))
    assert (p1.corrected.ci_low, p1.corrected.ci_high) == (0.0, 1.0)  # 2/3 -+ 4.30 * 0.236, cut to P@1's range
    from types import SimpleNamespace

    from labeller.evaluation.corrected_estimate import Contribution, estimate

    plain = {f"q{i}": 1.0 for i in range(1, 7)}
    uncut = estimate(Contribution(plain, plain, {"q1": 0.0, "q2": 1.0, "q3": 1.0}), SimpleNamespace(design="queries"),
                     0.95)
    assert uncut.ci_high - uncut.estimate == pytest.approx(4.30265 * math.sqrt(1 / 18), rel=1e-4)
    # RR under people: q1 1/2, q2 1, q3 1; the judge's RR is 1 everywhere: lambda 0, estimate 5/6. One pair can move
    # a query's RR from 0 to 1, so the floor is two pseudo-queries at variance 1/4: people's SS 1/6 is below it, s^2 =
    # (1/2) / 2 = 1/4, se^2 = (1/2)(1/4)/3 = 1/24 (their own spread would give 1/72; the k/Q floor, 3 of 6 unseen,
    # 0.5, is below t2 * se = 0.88)
    assert rr.corrected.estimate == pytest.approx(5 / 6)
    assert rr.corrected.se_judge == pytest.approx(math.sqrt(1 / 24))


def test_query_design_mrr_allows_for_queries_no_graded_one_shows():
    """25 queries, people graded 20, every graded query's first pair relevant and the judge's too: RR 1 wherever
    anyone looked. 2 queries whose RR is 0 could hide among the 5 ungraded with chance C(23, 20) / C(25, 20) =
    0.033 > 0.025, so the interval reaches down to 1 - 2/25 = 0.92, as hit rate's does (the t interval alone would
    stop at 0.97 and miss them)."""
    labels = judgments({f"q{i}": {"a": 3, "b": 1} for i in range(25)}, kind="labels")
    gold = judgments({f"q{i}": {"a": 3, "b": 1} for i in range(20)})
    run = Ranking("r", docs={f"q{i}": ["a", "b"] for i in range(25)})
    result, _ = run_corrected([run], labels, gold, Settings(relevant_from=3), metrics="mrr@10,precision@1")
    assert result.design == "queries"
    rr, p1 = result.runs["r"]
    assert (rr.corrected.estimate, rr.corrected.ci_high) == (1.0, 1.0)
    assert rr.corrected.ci_low == pytest.approx(0.92)
    assert rr.corrected.spread == "unseen queries"  # the JSON says what set the width
    assert p1.corrected.ci_low > 0.95 and p1.corrected.spread is None  # P@1 is not a first-relevant metric


def test_pair_design_leaves_mrr_and_hit_rate_uncorrected_and_says_why():
    human, judge, good, _ = world(6)
    result, _ = run_corrected([good], judgments(judge, kind="labels"), judgments(subset(human, 0.3, 3)), Settings(),
                              metrics="mrr@10,hit_rate@5,map,ndcg@10")
    mrr, hit, ap, ndcg = result.runs["good"]
    assert mrr.corrected.estimate is None and "whole queries" in mrr.corrected.note
    assert hit.corrected.estimate is None and "whole queries" in hit.corrected.note
    assert ap.corrected.estimate is None and "map" in ap.corrected.note
    assert ndcg.corrected.estimate is not None and mrr.plain is not None


def test_linear_estimates_are_unbiased_and_cover_over_random_gold_samples():
    """P@20 is linear in the grades: its corrected estimate is unbiased under stratified random sampling
    within judge grades, whatever the judge's errors; its interval covers the truth near 95%."""
    human, judge, good, _ = world(2, queries=20, pool=40)
    labels = judgments(judge, kind="labels")
    specs = parse_metrics("precision@20")
    settings = Settings()
    scores = {"good": score_run(good, labels, specs, settings)}
    truth = human_means(good, human, scores["good"], settings, "precision@20")["precision@20"]
    pairs = [(q, d) for q in judge for d in judge[q]]
    by_grade: dict[int, list] = {}
    for p in pairs:
        by_grade.setdefault(judge[p[0]][p[1]], []).append(p)
    rng = random.Random(5)
    estimates, covered = [], 0
    for _ in range(300):
        gold: dict[str, dict[str, int]] = {}
        for members in by_grade.values():
            for q, d in rng.sample(members, max(2, len(members) // 6)):
                gold.setdefault(q, {})[d] = human[q][d]
        result = corrected([good], scores, labels, judgments(gold), specs, settings, design="pairs", bootstrap=10)
        value = result.runs["good"][0].corrected
        estimates.append(value.estimate)
        covered += value.ci_low <= truth <= value.ci_high
    spread = np.std(estimates) / math.sqrt(len(estimates))
    assert abs(np.mean(estimates) - truth) < 3 * spread
    assert abs(scores["good"].metrics["precision@20"] - truth) > 10 * spread  # the judge's figure is biased
    assert 0.88 <= covered / 300 <= 0.99


def test_gold_outside_the_pool_and_judge_grades_without_gold_are_named():
    human, judge, good, _ = world(3)
    labels = judgments(judge, kind="labels")
    gold = subset(human, 0.3, 2)
    gold = {q: {d: g for d, g in docs.items() if judge[q][d] != 4} for q, docs in gold.items()}
    gold["q0"]["elsewhere"] = 2
    result, _ = run_corrected([good], labels, judgments(gold), Settings())
    text = " ".join(result.warnings)
    assert "1 of" in text and "not in the judged pool" in text
    assert "no gold pair has judge grade 4" in text


def _world_files(tmp_path, judge_all_same: bool = True):
    human, judge, good, bad = world(4, queries=20, pool=25)
    if judge_all_same:  # a judge that calls everything relevant: both runs look perfect
        judge = {q: {d: 3 for d in docs} for q, docs in judge.items()}
    for name, ranking in (("good", good), ("bad", bad)):
        (tmp_path / f"{name}.trec").write_text("".join(
            f"{q} Q0 {d} {i} {100 - i} x\n" for q, docs in ranking.docs.items() for i, d in enumerate(docs)))
    (tmp_path / "labels.txt").write_text("".join(f"{q} 0 {d} {g - 1}\n" for q, ds in judge.items() for d, g in ds.items()))
    gold = subset(human, 0.5, 7)
    (tmp_path / "gold.jsonl").write_text("".join(json.dumps({"query_id": q, "doc_id": d, "grade": g, "annotator": "a"})
                                                 + "\n" for q, ds in gold.items() for d, g in ds.items()))
    return human, judge, gold


def test_corrected_gate_fails_where_the_judges_labels_see_no_drop(tmp_path, capsys):
    _world_files(tmp_path)
    base = ["evaluate", "--run", tmp_path / "bad.trec", "--baseline", tmp_path / "good.trec",
            "--labels", tmp_path / "labels.txt", "--metrics", "ndcg@10,precision@20"]
    code, out, _ = cli(capsys, *base)
    assert code == 0, out  # under the judge every pair is relevant: no drop
    code, out, err = cli(capsys, *base, "--gold", tmp_path / "gold.jsonl", "--corrected",
                         "--report", tmp_path / "report")
    assert code == 1, out + err
    assert "Regression gate: FAILED** against `baseline:good` (decided on figures corrected" in out
    assert "corrected threshold and significance" in out
    assert "regression gate failed" in err and "corrected for the judge's error" in err
    html = (tmp_path / "report" / "index.html").read_text()
    assert "Corrected for the judge&#39;s error" in html or "Corrected for the judge's error" in html
    saved = json.loads((tmp_path / "report" / "result.json").read_text())
    assert saved["gate"]["corrected"].endswith("gold.jsonl")


def test_corrected_gate_passes_an_equal_run_and_the_plain_gate_is_unchanged(tmp_path, capsys):
    _world_files(tmp_path, judge_all_same=False)
    code, out, err = cli(capsys, "evaluate", "--run", tmp_path / "good.trec", "--baseline", tmp_path / "good.trec",
                         "--labels", tmp_path / "labels.txt", "--gold", tmp_path / "gold.jsonl", "--corrected",
                         "--metrics", "ndcg@10,map")
    assert code == 0, out + err
    assert "no corrected estimate for map here: decided on the judge's labels" in out
    assert "### Corrected for the judge's error" in out


def test_corrected_gate_names_the_guard_for_queries_no_graded_one_shows(tmp_path, capsys):
    """MRR under the query design, 20 of 25 queries graded whole, the run equal to its baseline: the difference is 0
    on every graded query, so its width comes from the k/Q floor, and the gate's note says so."""
    docs = {f"q{i}": ["a", "b"] for i in range(25)}
    (tmp_path / "run.trec").write_text("".join(f"{q} Q0 {d} {i} {9 - i} x\n" for q, ds in docs.items()
                                               for i, d in enumerate(ds)))
    (tmp_path / "labels.txt").write_text("".join(f"{q} 0 a 2\n{q} 0 b 0\n" for q in docs))
    (tmp_path / "gold.jsonl").write_text("".join(json.dumps({"query_id": f"q{i}", "doc_id": d, "grade": g,
                                                             "annotator": "a"}) + "\n"
                                                 for i in range(20) for d, g in (("a", 3), ("b", 1))))
    code, out, err = cli(capsys, "evaluate", "--run", tmp_path / "run.trec", "--baseline", tmp_path / "run.trec",
                         "--labels", tmp_path / "labels.txt", "--gold", tmp_path / "gold.jsonl", "--corrected",
                         "--metrics", "mrr@10", "--json")
    assert code == 0, out + err
    check = json.loads(out)["gate"]["checks"][0]
    assert check["verdict"] == "no-drop" and "a few ungraded queries unlike every graded one" in check["note"]
    code, out, err = cli(capsys, "evaluate", "--run", tmp_path / "run.trec", "--labels", tmp_path / "labels.txt",
                         "--gold", tmp_path / "gold.jsonl", "--metrics", "mrr@10,precision@1", "--report",
                         tmp_path / "report")
    assert code == 0, out + err
    line = "Widened for queries no graded one shows (run mrr@10): one pair"  # not precision@1
    assert line in out and line in (tmp_path / "report" / "index.html").read_text()


def test_api_takes_gold_as_a_dataframe(tmp_path):
    import pandas as pd

    import labeller

    human, judge, gold = _world_files(tmp_path, judge_all_same=False)
    frame = pd.DataFrame([{"query_id": q, "doc_id": d, "grade": g} for q, ds in gold.items() for d, g in ds.items()])
    result = labeller.evaluate(tmp_path / "labels.txt", tmp_path / "good.trec", "ndcg@10", gold=frame)
    assert result.corrected is not None and result.corrected.gold_pairs == len(frame)
    row = result.corrected.runs["good"][0]
    assert row.plain == result.metrics["ndcg@10"]
    assert row.corrected.ci_low < row.corrected.estimate < row.corrected.ci_high
    assert row.corrected.ci_low_queries <= row.corrected.ci_low


@pytest.mark.parametrize("average", ["trec", "all"])
def test_full_gold_matches_the_kernels_on_the_tricky_synthetic_run(average):
    """evaluation_helpers.synthetic: tied scores, unjudged documents in the run, a no-answer query, a judged
    query the run lacks, a run query nobody judged. With people's grades for every judged pair, the
    corrected figure is labeller's own metric under those grades, query set for query set."""
    from labeller.evaluation.runs import rank
    from labeller.records import RunEntry
    from tests.evaluation_helpers import synthetic

    qrels, scores = synthetic(3)
    ranking = rank([RunEntry(query_id=q, doc_id=d, score=s) for q, ds in scores.items() for d, s in ds.items()],
                   "syn")
    rng = random.Random(4)
    judge = {q: {d: g + 1 for d, g in ds.items()} for q, ds in qrels.items()}
    human = {q: {d: min(4, max(1, g + rng.choice([-1, 0, 0, 1]))) for d, g in ds.items()} for q, ds in judge.items()}
    settings = Settings(relevant_from=2, average=average)
    metrics = "ndcg@10,ndcg,recall@20,precision@5,precision,mrr,hit_rate@10"
    for design in ("pairs", "queries"):
        result, plain = run_corrected([ranking], judgments(judge, kind="labels"), judgments(human), settings,
                                      metrics=metrics, design=design)
        truth = human_means(ranking, human, plain["syn"], settings, metrics)
        for m in result.runs["syn"]:
            if m.corrected.estimate is not None:
                assert m.corrected.estimate == pytest.approx(truth[m.metric], abs=1e-12), (design, m.metric)


def test_first_relevant_gradient_matches_finite_differences():
    """E[RR] and E[hit] under independent relevance, and their gradient, against a brute-force expectation over
    every relevance pattern of six positions and central differences."""
    import itertools

    from labeller.evaluation.corrected_terms import _first_relevant

    rng = np.random.default_rng(0)
    for weights in (1.0 / np.arange(1, 7), np.ones(6)):
        p = rng.random(6)
        terms = _first_relevant(p, weights, np.zeros(5))
        brute = sum(np.prod(np.where(pattern, p, 1 - p)) * (weights[pattern.index(1)] if 1 in pattern else 0.0)
                    for pattern in itertools.product((0, 1), repeat=6))
        assert terms.value == pytest.approx(brute, abs=1e-12)
        step = np.eye(6) * 1e-6
        numeric = [(_first_relevant(p + step[i], weights, np.zeros(5)).value
                    - _first_relevant(p - step[i], weights, np.zeros(5)).value) / 2e-6 for i in range(6)]
        assert terms.feature_grad == pytest.approx(numeric, abs=1e-7)
