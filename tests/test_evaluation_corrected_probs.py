"""Grade probabilities in the corrected estimates (`label --grade-probs` rows with `evaluate --gold`): where the
judge's label row carries its grade distribution, the estimators predict each pair's gain and relevance by it.
On a planted case (people's grade drawn from the distribution the judge reports) the estimate stays unbiased
and its interval is narrower than from the judge's grades alone, under both sampling designs."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from labeller.evaluation.metrics import parse_metrics
from labeller.evaluation.results import Settings
from labeller.evaluation.runs import Ranking
from labeller.evaluation.scoring import score_run
from tests.cli_helpers import cli
from tests.test_evaluation_corrected import judgments, run_corrected

METRICS = "ndcg@10,recall@20,precision@10,mrr@10,hit_rate@3"
QUERY_DESIGN_ONLY = ("mrr@10", "hit_rate@3")


def planted(seed: int = 0, queries: int = 40, pool: int = 25):
    """Every pair has a distribution over grades 1-4; people's grade is drawn from it; the judge reports it
    (grade_probs) and its likeliest grade, one up (a generous judge) a third of the time."""
    rng = random.Random(seed)
    human, judge, probs, ranked = {}, {}, {}, {}
    for q in range(queries):
        qid = f"q{q:02d}"
        docs = [f"{qid}-{i}" for i in range(pool)]
        human[qid], judge[qid] = {}, {}
        for d in docs:
            centre = rng.choice([1, 1, 1, 2, 2, 3, 4])
            weights = [rng.random() ** 3 + (3.0 if g == centre else 0.0) for g in range(1, 5)]
            dist = [w / sum(weights) for w in weights]
            human[qid][d] = rng.choices(range(1, 5), dist)[0]
            judge[qid][d] = min(4, int(np.argmax(dist)) + 1 + (rng.random() < 1 / 3))
            probs[qid, d] = {str(g): (dist[g - 1] if g <= 4 else 0.0) for g in range(1, 6)}
        ranked[qid] = sorted(docs, key=lambda d: -(sum(g * p for g, p in zip(range(1, 5), probs[qid, d].values()))
                                                   + rng.gauss(0, 0.8)))
    return human, judge, probs, Ranking("r", docs=ranked)


def _draw(human, design: str, rng: random.Random):
    if design == "queries":
        return {q: dict(human[q]) for q in rng.sample(sorted(human), 15)}
    out: dict[str, dict[str, int]] = {}
    for q, docs in human.items():
        for d, g in docs.items():
            if rng.random() < 0.25:
                out.setdefault(q, {})[d] = g
    return out


@pytest.mark.parametrize("design", ["pairs", "queries"])
def test_grade_probabilities_keep_the_estimate_unbiased_and_narrow_it(design):
    human, judge, probs, run = planted()
    settings = Settings(relevant_from=3)
    with_probs = judgments(judge, kind="labels")
    with_probs.probs = probs
    without = judgments(judge, kind="labels")
    specs = parse_metrics(METRICS)
    scores = score_run(run, without, specs, settings)
    truth_values = score_run(run, judgments(human), specs, settings).per_query
    truth = {s.name: float(np.mean([truth_values[s.name][q] for q in
                                     set(scores.per_query[s.name]) - set(scores.no_answer.query_ids)])) for s in specs}
    errors: dict[tuple[str, str], list[float]] = {}
    widths: dict[tuple[str, str], list[float]] = {}
    covered: dict[tuple[str, str], list[bool]] = {}
    rng = random.Random(1)
    for _ in range(40):
        gold = judgments(_draw(human, design, rng))
        for name, labels in (("probs", with_probs), ("grades", without)):
            result, _ = run_corrected([run], labels, gold, settings, metrics=METRICS, design=design,
                                      per_query_coverage=None)
            assert result.per_query == []
            for m in result.runs["r"]:
                if m.corrected.estimate is None:
                    assert design == "pairs" and m.metric in QUERY_DESIGN_ONLY
                    continue
                errors.setdefault((name, m.metric), []).append(m.corrected.estimate - truth[m.metric])
                widths.setdefault((name, m.metric), []).append(m.corrected.ci_high - m.corrected.ci_low)
                covered.setdefault((name, m.metric), []).append(
                    m.corrected.ci_low - 1e-12 <= truth[m.metric] <= m.corrected.ci_high + 1e-12)
    for (name, metric), errs in errors.items():
        se = np.std(errs, ddof=1) / np.sqrt(len(errs))
        assert abs(np.mean(errs)) < 3.5 * se + 0.004, (name, metric, np.mean(errs), se)  # unbiased
    for metric in {m for _, m in errors}:
        assert np.mean(widths["probs", metric]) <= np.mean(widths["grades", metric]) * 1.0, metric
        assert np.mean(covered["probs", metric]) >= 0.8, metric  # a 95% interval, over 40 draws
    print(design, {k: (round(float(np.mean(errors[k])), 4), round(float(np.mean(widths[k])), 4),
                       round(float(np.mean(covered[k])), 2)) for k in errors})


def _label_rows(judge, probs, with_probs: bool):
    return [{"query_id": q, "doc_id": d, "grade": g, "justification": "j", "judge": "openai:m", "provider": "openai",
             "model": "m", "rubric": "general", "rubric_version": "v3", "cache_key": f"k-{q}-{d}",
             "created_at": "2026-01-01T00:00:00+00:00", **({"grade_probs": probs[q, d]} if with_probs else {})}
            for q, docs in judge.items() for d, g in docs.items()]


def test_label_files_and_dataframes_carry_grade_probabilities_into_evaluate(tmp_path, capsys):
    import pandas as pd

    import labeller

    human, judge, probs, run = planted(seed=2, queries=12, pool=10)
    for name, with_probs in (("probs", True), ("grades", False)):
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n"
                                                        for r in _label_rows(judge, probs, with_probs)))
    gold = tmp_path / "gold.qrels"
    # a random quarter of the pairs (the pair design): the judge's distributions calibrate every ungraded pair (under
    # the query design a few graded queries mostly give people's own mean, where no judge figure enters)
    drawn = _draw(human, "pairs", random.Random(4))
    gold.write_text("".join(f"{q} 0 {d} {g - 1}\n" for q, docs in drawn.items() for d, g in docs.items()))
    trec = tmp_path / "r.trec"
    trec.write_text("".join(f"{q} Q0 {d} {i + 1} {100 - i} r\n" for q, docs in run.docs.items()
                            for i, d in enumerate(docs)))
    figures = {}
    for name in ("probs", "grades"):
        code, out, err = cli(capsys, "evaluate", "--run", trec, "--labels", tmp_path / f"{name}.jsonl", "--gold", gold,
                             "--metrics", "ndcg@5,recall@10", "--json")
        assert code == 0, err
        figures[name] = [m["corrected"]["estimate"] for m in json.loads(out)["corrected"]["runs"]["r"]]
    assert figures["probs"] != pytest.approx(figures["grades"], abs=1e-9)  # the distributions were used
    frame = pd.DataFrame(_label_rows(judge, probs, True))
    result = labeller.evaluate(frame, trec, "ndcg@5,recall@10", gold=gold)
    assert [m.corrected.estimate for m in result.corrected.runs["r"]] == pytest.approx(figures["probs"], abs=1e-12)
