"""benchmarks/corrected_differences.py's per-subset tally: what counts as a cover, a wrong sign, a decided sign
and a false regression. Planted intervals, each case checked against the definition by hand."""

import importlib.util
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location("corrected_differences", BENCH / "corrected_differences.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def difference(low, high, estimate=None, p_worse=0.5):
    value = SimpleNamespace(estimate=(low + high) / 2 if estimate is None else estimate, ci_low=low, ci_high=high,
                            power_lambda=1.0, se_judge=(high - low) / 3.92)
    return SimpleNamespace(corrected=value, p_worse=p_worse)


@pytest.mark.parametrize("low, high, truth, hit, wrong, right", [
    (0.05, 0.20, 0.10, True, False, True),      # covers, decides the right sign
    (-0.30, -0.10, 0.10, False, True, False),   # misses on the opposite side: a wrong sign
    (-0.05, 0.20, 0.10, True, False, False),    # covers 0: no sign either way
    (0.15, 0.30, 0.10, False, False, True),     # misses, right side: not a wrong sign
    (1e-17, 3e-17, 0.0, True, False, False),    # two runs with the same top k: rounding, not a sign
    (1e-17, 3e-17, 2e-17, True, False, False),  # a truth that is 0 up to rounding
    (0.01, 0.02, 0.0, False, True, False),      # a null truth, interval off 0 by more than rounding: wrong
])
def test_row_counts_signs_by_definition(bench, low, high, truth, hit, wrong, right):
    got = bench.row(difference(low, high), None, truth)
    assert (got["hit"], got["wrong"], got["right"]) == (hit, wrong, right)
    human = bench.row(difference(0.0, 1.0), difference(low, high), truth)  # human only's columns, same rules
    assert (human["h_hit"], human["h_wrong"], human["h_right"]) == (hit, wrong, right)


def test_width_ratio_only_where_human_only_has_a_width(bench):
    got = bench.row(difference(0.05, 0.20), difference(0.0, 0.30), 0.1)
    assert got["ratio"] == pytest.approx(0.15 / 0.30)
    assert "ratio" not in bench.row(difference(1e-17, 3e-17), difference(1e-17, 4e-17), 0.0)


def test_false_regression_is_p_worse_below_alpha_with_a_truth_not_below_0(bench):
    assert bench.row(difference(-0.2, 0.1, p_worse=0.01), None, 0.0)["false_regression"]
    assert not bench.row(difference(-0.2, 0.1, p_worse=0.01), None, -0.05)["false_regression"]
    assert not bench.row(difference(-0.2, 0.1, p_worse=0.2), None, 0.0)["false_regression"]


def test_detected_is_p_worse_below_alpha_with_a_truth_below_0(bench):
    assert bench.row(difference(-0.2, 0.1, p_worse=0.01), None, -0.05)["detected"]
    assert not bench.row(difference(-0.2, 0.1, p_worse=0.01), None, 0.0)["detected"]
    assert not bench.row(difference(-0.2, 0.1, p_worse=0.2), None, -0.05)["detected"]


def test_the_textbook_human_only_interval_of_the_coverage_benchmark():
    """benchmarks/corrected_coverage.human_mean_t, the issue's human-only comparator under the query design, by
    hand: 4 of 8 queries graded, people's values 0.2, 0.4, 0.6, 0.8 (mean 0.5, s^2 = 0.2 / 3), half-width
    t3 * sqrt((1 - 4/8) s^2 / 4) = 3.1824 * 0.0913 = 0.2905; the query outside the plain figure's average (no
    answer) and the ungraded ones are not in it; one graded query gives no interval."""
    sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location("corrected_coverage", BENCH / "corrected_coverage.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    values = {f"q{i}": v for i, v in enumerate([0.2, 0.4, 0.6, 0.8, 0.9, 0.1, 0.3, 0.7, 1.0])}
    scores = SimpleNamespace(per_query={"m": values}, no_answer=SimpleNamespace(query_ids=["q8"]))
    gold = SimpleNamespace(grades={q: {} for q in ("q0", "q1", "q2", "q3", "q8")})
    low, high = module.human_mean_t(values, gold, scores, "m")
    assert (low, high) == pytest.approx((0.5 - 0.29050, 0.5 + 0.29050), abs=1e-4)
    assert module.human_mean_t(values, SimpleNamespace(grades={"q0": {}}), scores, "m") == (None, None)


def test_the_attainable_width_of_the_query_widths_benchmark():
    """benchmarks/corrected_query_widths.attainable, sqrt(1 - rho^2), by hand: judge 0, .5, 1 and people 0, 1, 1
    give Sxy = 0.5, Sxx = 0.5, Syy = 2/3, rho = 0.5 / sqrt(1/3) = sqrt(3)/2, so sqrt(1 - 3/4) = 0.5; a judge that
    tracks people exactly leaves 0; a constant judge says nothing (1)."""
    sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location("corrected_query_widths", BENCH / "corrected_query_widths.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    people = {"a": 0.0, "b": 1.0, "c": 1.0}
    assert module.attainable({"a": 0.0, "b": 0.5, "c": 1.0}, people) == pytest.approx(0.5)
    assert module.attainable({"a": 0.1, "b": 0.9, "c": 0.9}, people) == pytest.approx(0.0, abs=1e-7)
    assert module.attainable({"a": 0.3, "b": 0.3, "c": 0.3}, people) == 1.0
