"""Plan queries:N (`annotate sample --plan queries:N`): N whole queries drawn at random, every candidate pair of
each, so `evaluate --gold` takes the query design. Checked: the rows, N from --size, that every query has the same
chance whatever its size (an independent count over many seeds), and the route into `evaluate --gold-sample`."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from labeller.annotate import make_sample
from labeller.annotate.plans import draw
from labeller.annotate.sources import Candidate
from tests.annotate_helpers import BASELINE, label_rows, write_jsonl
from tests.cli_helpers import cli


def _rows(path):
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_plan_queries_draws_whole_queries(tmp_path, capsys):
    labels_rows = label_rows(n_per_query=4)
    labels = write_jsonl(tmp_path / "labels.jsonl", labels_rows)
    by_query: dict[str, set[str]] = {}
    for r in labels_rows:
        by_query.setdefault(r["query_id"], set()).add(r["doc_id"])
    code, out, err = cli(capsys, "annotate", "sample", "--labels", labels, "--plan", "queries:3",
                         "--out", tmp_path / "a.jsonl")
    assert code in (0, None), err
    rows = _rows(tmp_path / "a.jsonl")
    drawn: dict[str, set[str]] = {}
    for r in rows:
        drawn.setdefault(r["query_id"], set()).add(r["doc_id"])
    assert len(drawn) == 3 and all(drawn[q] == by_query[q] for q in drawn)  # whole queries, every pair
    assert {r["plan"] for r in rows} == {"queries"} and {r["stratum"] for r in rows} == {"whole query"}
    assert f"{len(rows)} pairs over 3 queries (queries)" in out and "warning" not in err
    again = make_sample(tmp_path / "b.jsonl", labels=labels, plan="queries:3")
    assert [(r.query_id, r.doc_id) for r in again.rows] == [(r["query_id"], r["doc_id"]) for r in rows]
    other = make_sample(tmp_path / "c.jsonl", labels=labels, plan="queries:3", seed=1)
    assert {r.query_id for r in other.rows} != set(drawn) or len(by_query) == 3
    # plain `queries`: N = --size over the mean pairs per query (4 here), at least 2
    sized = make_sample(tmp_path / "d.jsonl", labels=labels, plan="queries", size=21)
    assert len({r.query_id for r in sized.rows}) == 5
    assert len({r.query_id for r in make_sample(tmp_path / "e.jsonl", labels=labels, plan="queries",
                                                 size=1).rows}) == 2


def test_every_query_has_the_same_chance_whatever_its_size():
    """Queries of 1 to 40 pairs; over 3,000 seeds each of the 8 queries is drawn about 3,000 * 3/8 = 1,125 times
    (binomial sd about 27). Filling a pair budget query by query would favour the small ones."""
    pool = [Candidate(query_id=f"q{q}", doc_id=f"d{i}", judge_grade=1 + i % 4)
            for q, size in enumerate((1, 2, 3, 5, 8, 13, 21, 40)) for i in range(size)]
    seen: Counter[str] = Counter()
    for seed in range(3000):
        picked = {c.query_id for c in draw(pool, 0 + 1, "queries:3", seed)}
        assert len(picked) == 3
        seen.update(picked)
    assert set(seen) == {f"q{q}" for q in range(8)}
    assert all(abs(n - 1125) < 5 * 27 for n in seen.values()), seen


def test_evaluate_takes_the_query_design_from_a_queries_sample(tmp_path, capsys):
    labels_rows = label_rows(n_per_query=4)
    labels = write_jsonl(tmp_path / "labels.jsonl", labels_rows)
    sample = make_sample(tmp_path / "s.jsonl", labels=labels, plan="queries:4")
    gold_rows = [{"query_id": r.query_id, "doc_id": r.doc_id, "grade": 1 + (i * 3) % 4, "annotator": "a"}
                 for i, r in enumerate(sample.rows)]
    write_jsonl(tmp_path / "gold.jsonl", gold_rows)
    code, out, err = cli(capsys, "evaluate", "--run", BASELINE, "--labels", labels, "--gold", tmp_path / "gold.jsonl",
                         "--gold-sample", tmp_path / "s.jsonl", "--metrics", "ndcg@4", "--json")
    assert code in (0, None), err
    corrected = json.loads(out)["corrected"]
    assert corrected["design"] == "queries" and corrected["gold_queries"] == 4
    assert not any("plan 'queries'" in w for w in corrected["warnings"])
    # a pair of a drawn query left ungraded: not whole any more, and the report says why
    write_jsonl(tmp_path / "part.jsonl", gold_rows[1:])
    code, out, err = cli(capsys, "evaluate", "--run", BASELINE, "--labels", labels, "--gold", tmp_path / "part.jsonl",
                         "--gold-sample", tmp_path / "s.jsonl", "--metrics", "ndcg@4", "--json")
    assert code in (0, None), err
    corrected = json.loads(out)["corrected"]
    assert corrected["design"] == "pairs"
    assert any("1 of its pairs have no grade in --gold" in w for w in corrected["warnings"])


def test_a_queries_sample_against_other_labels_is_named(tmp_path, capsys):
    labels = write_jsonl(tmp_path / "labels.jsonl", label_rows(n_per_query=3))
    sample = make_sample(tmp_path / "s.jsonl", labels=labels, plan="queries:3")
    write_jsonl(tmp_path / "gold.jsonl", [{"query_id": r.query_id, "doc_id": r.doc_id, "grade": 3, "annotator": "a"}
                                          for r in sample.rows])
    more = write_jsonl(tmp_path / "more.jsonl", label_rows(n_per_query=5))  # the queries now hold more pairs
    code, out, err = cli(capsys, "evaluate", "--run", BASELINE, "--labels", more, "--gold", tmp_path / "gold.jsonl",
                         "--gold-sample", tmp_path / "s.jsonl", "--metrics", "ndcg@4", "--json")
    assert code in (0, None), err
    corrected = json.loads(out)["corrected"]
    assert corrected["design"] == "pairs"
    assert any("plan 'queries'" in w and "not whole" in w for w in corrected["warnings"])


@pytest.mark.parametrize("plan", ["queries:0", "queries:-1", "queries:x"])
def test_bad_query_counts_are_refused(plan):
    from labeller.errors import BadInputError

    with pytest.raises(BadInputError, match="queries:N"):
        draw([Candidate(query_id="q", doc_id="d")], 1, plan, 0)
