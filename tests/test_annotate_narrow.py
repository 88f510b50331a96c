"""`annotate sample --plan narrow`: Neyman allocation over the judge's grades, uniform within each grade."""

from __future__ import annotations

import random
import re
from collections import Counter

import numpy as np

from labeller.annotate import make_sample
from labeller.annotate.narrow import allocate, prior_spread
from labeller.evaluation.corrected import corrected
from labeller.evaluation.metrics import parse_metrics
from labeller.evaluation.qrels import Judgments
from labeller.evaluation.results import Settings
from labeller.evaluation.scoring import score_run
from tests.annotate_helpers import label_rows, write_jsonl
from tests.cli_helpers import cli
from tests.test_evaluation_corrected import world


def test_allocation_by_hand():
    """Two grades of 10 pairs, spreads 0.1 and 0.4, 12 pairs: two each first, then 8 split 1.6 / 6.4 -> 1 / 6,
    the last one to the larger remainder (grade 2's second round share 0.8 over 0.2): 3 and 9."""
    assert allocate({1: 10, 2: 10}, {1: 0.1, 2: 0.4}, 12) == {1: 3, 2: 9}
    quota = allocate({1: 100, 2: 50, 3: 50, 4: 10, 5: 1}, {j: prior_spread(j) for j in range(1, 6)}, 40)
    assert sum(quota.values()) == 40 and quota[5] == 1 and all(quota[j] >= 2 for j in (1, 2, 3, 4))
    assert quota[1] > quota[2]  # twice the pairs, a little less unsure: more of them
    even = allocate({j: 50 for j in range(1, 6)}, {j: prior_spread(j) for j in range(1, 6)}, 40)
    assert even[2] == even[3] > even[1] == even[4] > even[5]  # as many pairs: most beside the relevance cut
    assert allocate({1: 3, 2: 2}, {1: 1.0, 2: 1.0}, 50) == {1: 3, 2: 2}  # never more than a grade holds


def test_sample_follows_the_allocation_and_is_repeatable(tmp_path, capsys):
    labels = write_jsonl(tmp_path / "labels.jsonl", label_rows(n_per_query=10))
    code, out, err = cli(capsys, "annotate", "sample", "--labels", labels, "--plan", "narrow", "--size", "30",
                         "--out", tmp_path / "a.jsonl")
    assert code in (0, None), err
    again = make_sample(tmp_path / "b.jsonl", labels=labels, size=30, plan="narrow")
    first = [line for line in (tmp_path / "a.jsonl").read_text().splitlines()]
    assert [r.doc_id for r in again.rows] == [__import__("json").loads(x)["doc_id"] for x in first]
    by_grade = Counter(r.stratum for r in again.rows)
    sizes = Counter(f"judge grade {r['grade']}" for r in label_rows(n_per_query=10))
    rate = {j: by_grade[f"judge grade {j}"] / sizes[f"judge grade {j}"] for j in range(1, 6)}
    assert min(rate[2], rate[3]) >= max(rate[1], rate[4]) > rate[5] > 0, rate  # most beside the relevance cut
    assert sum(by_grade.values()) == 30 and {r.plan for r in again.rows} == {"narrow"}


def test_narrow_plan_gives_narrower_corrected_intervals_than_uniform():
    """Same size, many seeds: the judge-error interval of a corrected NDCG@10 is narrower on average with the
    narrow plan's allocation than with a uniform sample (the judge errs most around the relevance cut)."""
    human, judge, good, _ = world(8, queries=20, pool=40)
    labels = Judgments({q: dict(d) for q, d in judge.items()}, "l", "labels")
    specs, settings = parse_metrics("ndcg@10,precision@10"), Settings()
    scores = {"good": score_run(good, labels, specs, settings)}
    pairs = [(q, d) for q in judge for d in judge[q]]
    by_grade: dict[int, list] = {}
    for p in pairs:
        by_grade.setdefault(judge[p[0]][p[1]], []).append(p)
    quota = allocate({j: len(v) for j, v in by_grade.items()}, {j: prior_spread(j) for j in by_grade}, 120)
    widths = {"narrow": [], "uniform": []}
    for seed in range(30):
        rng = random.Random(seed)
        draws = {"narrow": [p for j, v in by_grade.items() for p in rng.sample(v, quota[j])],
                 "uniform": rng.sample(pairs, 120)}
        for plan, chosen in draws.items():
            gold: dict[str, dict[str, int]] = {}
            for q, d in chosen:
                gold.setdefault(q, {})[d] = human[q][d]
            result = corrected([good], scores, labels, Judgments(gold, "g", "gold"), specs, settings,
                               design="pairs", bootstrap=10)
            widths[plan].append([m.corrected.se_judge for m in result.runs["good"]])
    narrow, uniform = np.mean(widths["narrow"], axis=0), np.mean(widths["uniform"], axis=0)
    assert (narrow < uniform).all(), (narrow, uniform)


def test_evaluate_checks_the_gold_sample_it_is_given(tmp_path, capsys):
    """--gold-sample: a narrow sample of these labels is fine; the same sample against labels whose grades
    moved (another judge), or an 'uncertain' sample, is named in a warning."""
    from tests.annotate_helpers import BASELINE

    rows = label_rows(n_per_query=10)
    labels = write_jsonl(tmp_path / "labels.jsonl", rows)
    frozen = make_sample(tmp_path / "s.jsonl", labels=labels, size=30, plan="narrow")
    write_jsonl(tmp_path / "gold.jsonl", [{"query_id": r.query_id, "doc_id": r.doc_id, "grade": 1 + i % 4,
                                           "annotator": "a"} for i, r in enumerate(frozen.rows)])
    base = ["evaluate", "--run", BASELINE, "--gold", tmp_path / "gold.jsonl", "--gold-sample", tmp_path / "s.jsonl"]
    code, out, err = cli(capsys, *base, "--labels", labels)
    assert code in (0, None), err
    assert "stratified on other labels" not in out + err and "Corrected for the judge's error" in out
    moved = write_jsonl(tmp_path / "other.jsonl", [{**r, "grade": 6 - r["grade"]} for r in rows])
    code, out, err = cli(capsys, *base, "--labels", moved)
    assert "the sample was stratified on other labels" in err
    unsure = [{**r, "uncertainty": (i % 7) / 7} for i, r in enumerate(rows)]
    make_sample(tmp_path / "u.jsonl", labels=write_jsonl(tmp_path / "unsure.jsonl", unsure), size=30, plan="uncertain")
    code, out, err = cli(capsys, "evaluate", "--run", BASELINE, "--labels", labels, "--gold", tmp_path / "gold.jsonl",
                         "--gold-sample", tmp_path / "u.jsonl")
    assert "drawn by plan 'uncertain'" in err and "do not hold" in err
    make_sample(tmp_path / "st.jsonl", labels=labels, size=30, plan="stratified")
    code, out, err = cli(capsys, "evaluate", "--run", BASELINE, "--labels", labels, "--gold", tmp_path / "gold.jsonl",
                         "--gold-sample", tmp_path / "st.jsonl")
    assert "spreads each judge grade's pairs over the queries" in err


def test_narrow_sample_warns_before_grading_when_pairs_a_query_are_few(tmp_path, capsys):
    """Under 10 pairs a query, evaluate --gold's pair-design intervals for recall and NDCG fell short on DL19: the
    sample says so before anyone grades, and names the sizes that avoid it; enough pairs, or whole queries, and
    it is silent."""
    rows = label_rows(n_per_query=10)
    labels = write_jsonl(tmp_path / "labels.jsonl", rows)
    queries = len({r["query_id"] for r in rows})
    code, _, err = cli(capsys, "annotate", "sample", "--labels", labels, "--plan", "narrow", "--size", "30",
                       "--out", tmp_path / "a.jsonl")
    assert code in (0, None), err
    assert f"warning: 30 pairs over the pool's {queries} queries ({30 / queries:.1f} a query)" in err
    suggested = re.search(r"give --size (\d+) or more, or grade whole queries \(--plan queries:N\)", err)
    assert suggested and int(suggested[1]) <= min(10 * queries, len(rows))  # the pool, less the rubric's examples
    api = make_sample(tmp_path / "api.jsonl", labels=labels, size=30, plan="narrow")
    assert len(api.warnings) == 1 and f"({30 / queries:.1f} a query)" in api.warnings[0]  # the Python API says it too
    for extra in (["--plan", "narrow", "--size", suggested[1]], ["--plan", "queries:3", "--size", "30"],
                  ["--plan", "uniform", "--size", "30"]):
        code, _, err = cli(capsys, "annotate", "sample", "--labels", labels, *extra, "--out",
                           tmp_path / f"{extra[1].replace(':', '')}-{extra[3]}.jsonl")
        assert code in (0, None) and "a query)" not in err, (extra, err)
