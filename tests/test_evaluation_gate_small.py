"""The regression gate on small hand-made samples: every verdict that passes has a clearly bad case
beside it that fails, vanished queries count against the run, and nothing comparable fails.

Each query has three relevant documents (TREC grades 3, 2, 1) among ten; the good run ranks them
first, the bad run last. Everything goes through the real command line.
"""

from __future__ import annotations

import json

import pytest
from evaluation_helpers import cli

DOCS = [f"d{i}" for i in range(10)]
GOOD = DOCS  # d0 (grade 3), d1 (2), d2 (1) on top
BAD = DOCS[::-1]  # the relevant ones at the bottom


def qrels(path, queries):
    path.write_text("".join(f"{q} 0 {d} {g}\n" for q in queries for d, g in zip(DOCS, (3, 2, 1, 0, 0, 0, 0, 0, 0, 0))))
    return path


def run(path, orders: dict[str, list[str]]):
    path.write_text("".join(f"{q} Q0 {d} {r} {100 - r} t\n" for q, docs in orders.items()
                            for r, d in enumerate(docs, start=1)))
    return path


def gate(tmp_path, capsys, candidate: dict, baseline: dict, queries, *extra):
    code, out, err = cli("evaluate", "--run", run(tmp_path / "candidate.trec", candidate),
                         "--baseline", run(tmp_path / "baseline.trec", baseline),
                         "--labels", qrels(tmp_path / "qrels.txt", queries), "--metrics", "ndcg@3",
                         "--json", *extra, capsys=capsys)
    return code, json.loads(out), err


Q5 = [f"q{i}" for i in range(5)]


def test_five_queries_clearly_worse_fails_and_unchanged_passes(tmp_path, capsys):
    code, result, err = gate(tmp_path, capsys, {q: BAD for q in Q5}, {q: GOOD for q in Q5}, Q5)
    check, test = result["gate"]["checks"][0], result["comparisons"][0]["tests"][0]
    assert (test["wins"], test["losses"], test["ties"]) == (0, 5, 0)
    # One-sided exact sign-flip test: 5 losses out of 5 give p = 1/32 < 0.05, the smallest it can give.
    assert check["p_value"] == pytest.approx(1 / 32) and check["smallest_p"] == pytest.approx(1 / 32)
    assert code == 1 and check["verdict"] == "regression" and check["decided_by"] == "threshold and significance"
    assert "regression gate failed: ndcg@3 of candidate 1.0000 -> 0.0000 (delta -1.0000" in err
    code, result, _ = gate(tmp_path, capsys, {q: GOOD for q in Q5}, {q: GOOD for q in Q5}, Q5)
    assert code == 0 and result["gate"]["passed"] and result["gate"]["checks"][0]["verdict"] == "no-drop"


def test_four_differing_queries_of_five_fail_on_the_threshold_alone(tmp_path, capsys):
    candidate = {q: BAD for q in Q5[:4]} | {"q4": GOOD}
    code, result, err = gate(tmp_path, capsys, candidate, {q: GOOD for q in Q5}, Q5)
    check = result["gate"]["checks"][0]
    assert check["smallest_p"] == pytest.approx(1 / 16)  # 4 differing queries: 1/16 >= alpha 0.05
    assert code == 1 and check["verdict"] == "regression" and check["decided_by"] == "threshold alone"
    assert "too few queries for significance" in check["note"] and "decided by the threshold alone" in err
    # The same with the t-test: its own bound would allow p < 0.05, the exact floor does not.
    code, result, _ = gate(tmp_path, capsys, candidate, {q: GOOD for q in Q5}, Q5, "--test", "t-test")
    assert code == 1 and result["gate"]["checks"][0]["decided_by"] == "threshold alone"


def test_a_drop_within_its_threshold_passes_and_a_larger_one_fails(tmp_path, capsys):
    slightly = {q: GOOD for q in Q5[1:]} | {"q0": ["d0", "d2", "d1", *DOCS[3:]]}  # one swap in one query
    code, result, _ = gate(tmp_path, capsys, slightly, {q: GOOD for q in Q5}, Q5, "--threshold", "ndcg@3=0.05")
    assert code == 0 and result["gate"]["checks"][0]["verdict"] == "drop-within-threshold"
    code, result, _ = gate(tmp_path, capsys, slightly, {q: GOOD for q in Q5}, Q5, "--threshold", "ndcg@3=0.001")
    assert code == 1 and result["gate"]["checks"][0]["decided_by"] == "threshold alone"


def test_require_significance_still_fails_a_clearly_bad_testable_run(tmp_path, capsys):
    code, result, _ = gate(tmp_path, capsys, {q: BAD for q in Q5}, {q: GOOD for q in Q5}, Q5,
                           "--require-significance")
    assert code == 1 and result["gate"]["checks"][0]["verdict"] == "regression"
    code, result, err = gate(tmp_path, capsys, {q: BAD for q in Q5[:3]} | {q: GOOD for q in Q5[3:]},
                             {q: GOOD for q in Q5}, Q5, "--require-significance")
    assert code == 0 and result["gate"]["checks"][0]["verdict"] == "drop-untestable"
    assert result["gate"]["warnings"] and "labeller: warning:" in err


def test_a_drop_that_is_not_significant_passes_and_a_consistent_one_fails(tmp_path, capsys):
    queries = [f"q{i}" for i in range(30)]
    # Swaps of the top two either way, plus three real losses: 13 wins, 17 losses, a mean drop of 0.013
    # (above the 0.01 threshold) that the sign-flip test cannot tell from chance (p 0.16).
    almost = ["d1", "d0", "d2", *DOCS[3:]]
    mixed = {q: (almost if i % 2 else ["d0", "d1", "d2", *DOCS[3:]]) for i, q in enumerate(queries)}
    baseline = {q: (GOOD if i % 2 else ["d1", "d0", "d2", *DOCS[3:]]) for i, q in enumerate(queries)}
    mixed.update({q: ["d0", "d3", "d1", "d2", *DOCS[4:]] for q in queries[:3]})  # three real losses
    code, result, _ = gate(tmp_path, capsys, mixed, baseline, queries)
    check = result["gate"]["checks"][0]
    assert code == 0 and check["verdict"] == "drop-not-significant", check
    assert check["smallest_p"] < 0.05 <= check["p_value"]
    code, result, _ = gate(tmp_path, capsys, {q: BAD for q in queries}, baseline, queries)
    assert code == 1 and result["gate"]["checks"][0]["verdict"] == "regression"


def test_vanished_queries_count_against_the_run(tmp_path, capsys):
    """Two queries vanish from a 10-query run, the rest unchanged: never significant (2 differing
    queries: p >= 1/4), but a fifth of the answers is gone and the threshold fails it."""
    queries = [f"q{i}" for i in range(10)]
    code, result, err = gate(tmp_path, capsys, {q: GOOD for q in queries[2:]}, {q: GOOD for q in queries}, queries)
    test, check = result["comparisons"][0]["tests"][0], result["gate"]["checks"][0]
    assert test["n"] == 10 and test["losses"] == 2 and result["comparisons"][0]["only_in_reference"] == 2
    assert check["baseline"] == pytest.approx(1.0) and check["run_value"] == pytest.approx(0.8)
    assert check["smallest_p"] == pytest.approx(0.25) and code == 1
    assert "ndcg@3 of candidate 1.0000 -> 0.8000 (delta -0.2000" in err and "decided by the threshold alone" in err
    # trec_eval's own mean of the run still skips the vanished queries (its default), as documented.
    assert result["metrics"]["ndcg@3"] == pytest.approx(1.0) and result["queries"]["missing_from_run"] == 2


def test_nothing_comparable_fails(tmp_path, capsys):
    # No label reaches --relevant-from: every query is in the no-answer bucket.
    code, result, err = gate(tmp_path, capsys, {q: GOOD for q in Q5}, {q: GOOD for q in Q5}, Q5,
                             "--relevant-from", "5")
    assert code == 1 and not result["gate"]["passed"]
    assert {c["verdict"] for c in result["gate"]["checks"]} == {"not-comparable"}
    assert "nothing comparable" in err and "no-answer bucket" in err
    # No query both sides answer.
    code, result, err = gate(tmp_path, capsys, {q: GOOD for q in Q5[:2]}, {q: GOOD for q in Q5[2:]}, Q5)
    assert code == 1 and "no shared queries" in err


def test_nothing_comparable_with_a_saved_baseline_fails(tmp_path, capsys):
    saved = cli("evaluate", "--run", run(tmp_path / "old.trec", {q: GOOD for q in Q5[:2]}), "--labels",
                qrels(tmp_path / "old-qrels.txt", Q5[:2]), "--metrics", "ndcg@3", "--json", capsys=capsys)[1]
    (tmp_path / "old.json").write_text(saved)
    code, out, err = cli("evaluate", "--run", run(tmp_path / "new.trec", {q: GOOD for q in Q5[2:]}),
                         "--baseline", tmp_path / "old.json", "--labels", qrels(tmp_path / "qrels.txt", Q5),
                         "--metrics", "ndcg@3", capsys=capsys)
    assert code == 1 and "no shared queries" in err and "Regression gate: FAILED" in out and "PASSED" not in out


def test_five_queries_with_one_small_win_fail_on_the_threshold_alone(tmp_path, capsys):
    """Four clear losses and one small win: p = 2/32 > 0.05, which used to pass as "not significant"
    on a drop of 0.8. One query going the other way is enough to silence a 5-query test, so the
    threshold decides; with 6 queries the test can still reject despite one win."""
    slightly_better = ["d0", "d2", "d1", *DOCS[3:]]  # the baseline swaps d1 and d2; the candidate doesn't
    candidate = {q: BAD for q in Q5[:4]} | {"q4": GOOD}
    baseline = {q: GOOD for q in Q5[:4]} | {"q4": slightly_better}
    code, result, err = gate(tmp_path, capsys, candidate, baseline, Q5)
    check, test = result["gate"]["checks"][0], result["comparisons"][0]["tests"][0]
    assert (test["wins"], test["losses"]) == (1, 4)
    assert check["p_value"] == pytest.approx(2 / 32)
    assert code == 1 and check["verdict"] == "regression" and check["decided_by"] == "threshold alone"
    assert "one query going the other way" in check["note"]
    Q6 = [f"q{i}" for i in range(6)]
    code, result, _ = gate(tmp_path, capsys, candidate | {"q5": BAD}, baseline | {"q5": GOOD}, Q6)
    check = result["gate"]["checks"][0]
    assert check["p_value"] == pytest.approx(2 / 64)
    assert code == 1 and check["decided_by"] == "threshold and significance"
