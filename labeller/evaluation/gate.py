"""The regression gate: fail only on a drop that is both larger than its threshold and significant.

A drop smaller than the threshold is noise nobody should be paged for; a large drop on a handful
of queries may be chance. Each metric has a threshold in its own units (`--threshold
ndcg@10=0.02`, default DEFAULT_THRESHOLD), drops are measured on the queries both sides averaged
(the paired comparison's means), and significance is the paired test's p < alpha.
"""

from __future__ import annotations

from labeller.errors import BadInputError
from labeller.evaluation.metrics import MetricSpec
from labeller.evaluation.results import Comparison, GateCheck, GateResult

DEFAULT_THRESHOLD = 0.01
DEFAULT_ALPHA = 0.05
TESTS = ("randomization", "t-test")


def parse_thresholds(items: list[str] | None, specs: list[MetricSpec],
                     default: float = DEFAULT_THRESHOLD) -> dict[str, float]:
    """['ndcg@10=0.02', 'recall@100=0.05,mrr@10=0.03'] -> threshold per requested metric."""
    thresholds = {s.name: default for s in specs}
    for item in (p.strip() for text in items or [] for p in text.split(",")):
        if not item:
            continue
        name, sep, value = item.partition("=")
        if not sep:
            raise BadInputError(f"threshold '{item}' is not METRIC=DROP, e.g. ndcg@10=0.02", field="threshold")
        if name.strip() not in thresholds:
            raise BadInputError(f"threshold for '{name.strip()}', which is not among the metrics "
                                f"({', '.join(thresholds)})", field="threshold")
        try:
            thresholds[name.strip()] = float(value)
        except ValueError:
            raise BadInputError(f"threshold '{item}': '{value}' is not a number", field="threshold") from None
        if thresholds[name.strip()] < 0:
            raise BadInputError(f"threshold '{item}' is negative; expected a drop >= 0", field="threshold")
    return thresholds


def check_gate_options(alpha: float, test: str) -> None:
    if not 0 < alpha < 1:
        raise BadInputError(f"--alpha {alpha} is out of range; expected 0 < alpha < 1", field="alpha")
    if test not in TESTS:
        raise BadInputError(f"--test '{test}' is unknown; expected randomization or t-test", field="test")


def _check(run: str, test_result, threshold: float, alpha: float, test: str) -> GateCheck:
    base, new = test_result.reference_mean, test_result.run_mean
    p = test_result.p_randomization if test == "randomization" else test_result.p_t_test
    if base is None or new is None:
        return GateCheck(run=run, metric=test_result.metric, threshold=threshold, baseline=base, run_value=new,
                         drop=None, p_value=p, verdict="not-comparable")
    drop = base - new
    if drop <= 1e-12:
        verdict = "no-drop"
    elif drop <= threshold:
        verdict = "drop-within-threshold"
    elif p is None or p >= alpha:
        verdict = "drop-not-significant"
    else:
        verdict = "regression"
    return GateCheck(run=run, metric=test_result.metric, threshold=threshold, baseline=base, run_value=new,
                     drop=drop, p_value=p, verdict=verdict)


def gate(comparisons: list[Comparison], thresholds: dict[str, float], *, alpha: float = DEFAULT_ALPHA,
         test: str = "randomization") -> GateResult:
    """Judge every compared run against the baseline (the comparisons' reference)."""
    check_gate_options(alpha, test)
    checks = [_check(c.run, t, thresholds[t.metric], alpha, test) for c in comparisons for t in c.tests]
    return GateResult(baseline=comparisons[0].reference if comparisons else "", test=test, alpha=alpha,
                      passed=not any(c.verdict == "regression" for c in checks), checks=checks)
