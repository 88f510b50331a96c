"""The warning that recall's linearisation under the pair design is likely off
(labeller.evaluation.corrected_recall): it fires with few random gold pairs a query and a large estimated
second-order remainder (a judge whose error does not depend on the run, a good run, ~6 gold pairs a query, queries
with 3-38% relevant pairs), not with 40 a query, and reaches the report and result.json."""

from __future__ import annotations

import random


from labeller.evaluation.corrected import corrected
from labeller.evaluation.metrics import parse_metrics
from labeller.evaluation.results import Settings
from labeller.evaluation.runs import Ranking
from labeller.evaluation.scoring import score_run
from tests.test_evaluation_corrected import judgments

SETTINGS = Settings(relevant_from=3)


def world(seed: int = 0, queries: int = 40, pool: int = 80, noise: float = 1.0):
    """Queries with 3-38% relevant pairs; the judge keeps people's grade half the time, else draws one at random
    (its error ignores the run); one run ranking by people's grade plus N(0, noise)."""
    rng = random.Random(seed)
    human, judge, run = {}, {}, {}
    for q in range(queries):
        qid, share = f"q{q}", 0.03 + 0.35 * (q % 8) / 7
        docs = [f"d{q}-{i}" for i in range(pool)]
        human[qid] = {d: rng.choice([3, 4]) if rng.random() < share else rng.choice([1, 2]) for d in docs}
        judge[qid] = {d: g if rng.random() < 0.5 else rng.choice([1, 2, 3, 4]) for d, g in human[qid].items()}
        noisy = {d: human[qid][d] + rng.gauss(0, noise) for d in docs}
        run[qid] = sorted(docs, key=lambda d: -noisy[d])
    return human, judge, Ranking("good", docs=run)


def random_gold(human, pairs: int, rng: random.Random) -> dict:
    everything = [(q, d) for q in sorted(human) for d in sorted(human[q])]
    gold: dict[str, dict[str, int]] = {}
    for q, d in rng.sample(everything, pairs):
        gold.setdefault(q, {})[d] = human[q][d]
    return gold


def _warnings(human, judge, run, gold) -> list[str]:
    specs, labels = parse_metrics("recall@30"), judgments(judge, kind="labels")
    scores = {run.name: score_run(run, labels, specs, SETTINGS)}
    return corrected([run], scores, labels, judgments(gold), specs, SETTINGS, design="pairs", bootstrap=1).warnings


def test_warning_fires_with_few_gold_pairs_a_query_and_a_large_remainder():
    human, judge, run = world(0)
    few = _warnings(human, judge, run, random_gold(human, 240, random.Random(3)))
    assert any("6.0 a query" in w and "--gold-design queries" in w for w in few), few
    # the remainder's own warning, on the draw of the same world where it is largest (it is noisy per draw)
    fired = [w for seed in range(6) for w in _warnings(human, judge, run, random_gold(human, 240, random.Random(seed)))
             if "second-order remainder" in w]
    assert fired and "recall@30 of good" in fired[0], fired


def test_no_warning_with_many_gold_pairs_a_query():
    human, judge, run = world(0, noise=3.0)
    many = _warnings(human, judge, run, random_gold(human, 1600, random.Random(3)))  # 40 a query, half the pool
    assert not [w for w in many if "recall" in w], many


def test_warning_reaches_the_report_and_the_json(tmp_path, capsys):
    """`labeller evaluate --gold` with ~6 random gold pairs a query: the markdown report and result.json carry it."""
    import json

    from tests.cli_helpers import cli

    human, judge, run = world(0)
    (tmp_path / "run.trec").write_text("".join(f"{q} Q0 {d} {i} {100 - i} x\n" for q, docs in run.docs.items()
                                               for i, d in enumerate(docs)))
    (tmp_path / "labels.txt").write_text("".join(f"{q} 0 {d} {g - 1}\n" for q, ds in judge.items()
                                                 for d, g in ds.items()))
    gold = random_gold(human, 240, random.Random(3))
    (tmp_path / "gold.jsonl").write_text("".join(json.dumps({"query_id": q, "doc_id": d, "grade": g, "annotator": "a"})
                                                 + "\n" for q, ds in gold.items() for d, g in ds.items()))
    code, out, err = cli(capsys, "evaluate", "--run", tmp_path / "run.trec", "--labels", tmp_path / "labels.txt",
                         "--gold", tmp_path / "gold.jsonl", "--metrics", "recall@30", "--report", tmp_path / "report")
    assert code == 0, out + err
    assert "6.0 a query" in out and "--gold-design queries" in out, out
    saved = (tmp_path / "report" / "result.json").read_text()
    assert "6.0 a query" in saved
