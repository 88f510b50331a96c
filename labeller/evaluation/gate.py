"""The regression gate: fail on a drop larger than its threshold that is significant, or that no
test could call significant on so few queries; fail when nothing can be compared.

A drop smaller than the threshold is noise nobody should be paged for; a large drop on many
queries with mixed wins and losses may be chance. Each metric has a threshold in its own units
(`--threshold ndcg@10=0.02`, default DEFAULT_THRESHOLD). Drops are measured on the queries either
side averaged, a query the run lost scoring 0 (see labeller.evaluation.compare). Significance is
the one-sided paired test "is the run worse?", p < alpha.

A test that cannot reject must not pass a gate in silence: when the smallest p the test can reach
on these queries (labeller.evaluation.significance.smallest_p) is so high that a single query going
the other way keeps p >= alpha (2 x floor >= alpha: 5 differing queries give a floor of 1/32, and
one small win among them gives p = 2/32 > 0.05), the drop is decided by the threshold alone, and
the verdict says so. Otherwise a shuffled 5-query run with one lucky query would pass as "not
significant" on a drop of 0.25.
`require_significance` opts out: such a drop then passes as "drop-untestable", with a warning in
the result that the CLI prints; it never passes unmarked. A comparison with nothing to compare
(no answerable query, no shared query) fails: a gate over nothing could only ever pass.
"""

from __future__ import annotations

from labeller.errors import BadInputError
from labeller.evaluation.metrics import MetricSpec
from labeller.evaluation.corrected_stretch import stretched_up
from labeller.evaluation.corrected_results import Corrected, CorrectedDifference
from labeller.evaluation.results import Comparison, GateCheck, GateResult, PairedTest

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


def _decide(drop: float, p: float | None, floor: float | None, check: PairedTest, threshold: float, alpha: float,
            test: str, require_significance: bool) -> tuple[str, str, str | None]:
    """(verdict, decided_by, note) for a comparable check."""
    if drop <= 1e-12:
        return "no-drop", "threshold", None
    if drop <= threshold:
        return "drop-within-threshold", "threshold", None
    significant = p is not None and p < alpha
    # Too few queries: the test cannot reach alpha at all, or not once a single query goes the other
    # way (2 x floor: the p of all-but-the-smallest lost), so "not significant" would mean "unlucky".
    if floor is None or floor >= alpha or (not significant and 2 * floor >= alpha):
        reach = (f"the {test} cannot run on {check.n} query" if floor is None
                 else f"the {test} test cannot give p below {floor:.4g} (alpha {alpha})" if floor >= alpha
                 else f"one query going the other way keeps the {test} test's p >= {2 * floor:.4g} (alpha {alpha})")
        why = f"too few queries for significance ({check.differing} of {check.n} differ: {reach})"
        if require_significance:
            return "drop-untestable", "nothing", f"{why}; --require-significance: not gated"
        return "regression", "threshold alone", f"{why}; decided by the threshold alone"
    if not significant:
        return "drop-not-significant", "threshold and significance", None
    return "regression", "threshold and significance", None


def _check(run: str, check: PairedTest, threshold: float, alpha: float, test: str, require_significance: bool,
           not_comparable: str | None) -> GateCheck:
    base, new = check.reference_mean, check.run_mean
    p = check.p_worse_randomization if test == "randomization" else check.p_worse_t_test
    floor = check.smallest_p_randomization if test == "randomization" else check.smallest_p_t_test
    common = dict(run=run, metric=check.metric, threshold=threshold, baseline=base, run_value=new, p_value=p,
                  smallest_p=floor)
    if not_comparable is not None or base is None or new is None:
        return GateCheck(**common, drop=None, decided_by="nothing", verdict="not-comparable",
                         note=not_comparable or "no query to compare")
    verdict, decided_by, note = _decide(base - new, p, floor, check, threshold, alpha, test, require_significance)
    return GateCheck(**common, drop=base - new, decided_by=decided_by, note=note, verdict=verdict)


def _corrected_check(plain: GateCheck, diff: CorrectedDifference | None, values: tuple[float | None, float | None],
                     alpha: float, gold: str) -> GateCheck:
    """The check decided on the corrected difference: the drop is the corrected estimate, significance its
    one-sided normal p (judge error and query sample); too few queries still fall back to the threshold.
    `values`: the corrected (baseline, run) figures, shown instead of the plain ones."""
    value = diff.corrected if diff is not None else None
    if diff is None and plain.verdict != "not-comparable":  # a metric without a correction (map): said so
        return plain.model_copy(update={"note": "; ".join(filter(None, [plain.note, (
            f"no corrected estimate for {plain.metric} here: decided on the judge's labels")]))})
    if plain.verdict == "not-comparable" or value is None or value.estimate is None or diff.p_worse is None:
        why = plain.note if plain.verdict == "not-comparable" else (
            value.note if value is not None and value.note else "no corrected difference")
        return plain.model_copy(update={"verdict": "not-comparable", "decided_by": "nothing", "drop": None,
                                        "note": f"{why} (--corrected, gold {gold})"})
    drop = -value.estimate
    plain_delta = "" if diff.plain is None else f" ({diff.plain:+.4f} under the judge's labels)"
    note = f"decided on the correction by gold {gold}: delta {value.estimate:+.4f}{plain_delta}"
    if value.spread == "anticipated":  # labeller.evaluation.corrected_spread
        note += "; its judge-error spread is the one the pool predicts, more than its random gold pairs show"
    elif value.spread == "human only":
        note += "; the gold without the judge gave the narrower interval, and it is that one (PPI++'s fallback)"
    elif value.spread == "both":
        note += "; the estimates with and without the judge disagreed, and the interval holds both"
    elif value.spread == "unseen queries":  # labeller.evaluation.corrected_estimate, the query design's guard
        note += ("; its judge-error spread is the one a few ungraded queries unlike every graded one could add, more "
                 "than the graded queries show")
    shown = (plain.baseline if values[0] is None else values[0], plain.run_value if values[1] is None else values[1])
    common = {"drop": drop, "p_value": diff.p_worse, "baseline": shown[0], "run_value": shown[1], "note": note}
    if drop <= 1e-12:
        return plain.model_copy(update={**common, "verdict": "no-drop", "decided_by": "corrected threshold"})
    if drop <= plain.threshold:
        return plain.model_copy(update={**common, "verdict": "drop-within-threshold",
                                        "decided_by": "corrected threshold"})
    if plain.decided_by in ("threshold alone", "nothing"):  # too few queries for any test: the threshold decides
        return plain.model_copy(update={**common, "verdict": plain.verdict, "decided_by": "corrected threshold alone",
                                        "note": f"{note}; {plain.note}"})
    verdict = "regression" if diff.p_worse < alpha else "drop-not-significant"
    up = stretched_up(value)
    if verdict == "regression" and up > 0:  # the p is first order (corrected_estimate.p_worse)
        common["note"] += (f"; the p is first order: the delta's interval also reaches {up:.4f} higher for the "
                           "ratio's second-order remainder, which the p does not take")
    return plain.model_copy(update={**common, "verdict": verdict,
                                    "decided_by": "corrected threshold and significance"})


def _corrected_checks(checks: list[GateCheck], corrected: Corrected, alpha: float) -> list[GateCheck]:
    diffs = {(d.run, d.metric): d for d in corrected.differences}
    values = {(run, m.metric): m.corrected.estimate for run, rows in corrected.runs.items() for m in rows}
    out = []
    for c in checks:
        diff = diffs.get((c.run, c.metric))
        pair = (values.get((diff.reference, c.metric)) if diff else None, values.get((c.run, c.metric)))
        out.append(_corrected_check(c, diff, pair, alpha, corrected.gold))
    return out


def _reasons(comparisons: list[Comparison], checks: list[GateCheck]) -> list[str]:
    if not comparisons:
        return ["nothing to compare: no run besides the baseline"]
    reasons = [f"nothing comparable between {c.run} and {c.reference}: {c.not_comparable}"
               for c in comparisons if c.not_comparable]
    for c in checks:
        if c.verdict == "regression":
            how = (f"p {p_text(c.p_value)} < alpha" if c.decided_by.endswith("threshold and significance")
                   else "too few queries for significance; decided by the threshold alone")
            if c.decided_by.startswith("corrected"):
                how += f"; corrected for the judge's error: delta {-(c.drop or 0.0):+.4f}"
            reasons.append(f"{movement(c)}; {how})")
    return reasons


def p_text(value: float) -> str:
    """A p-value as every table prints it: four decimals, "<0.0001" below (never 9.999e-05)."""
    return "<0.0001" if value < 1e-4 else f"{value:.4f}"


def movement(c: GateCheck) -> str:
    """'ndcg@10 of run 0.6100 -> 0.5237 (delta -0.0863, fails below -0.02': signed as run - baseline, like
    every table (the caller closes the parenthesis after adding why)."""
    return (f"{c.metric} of {c.run} {c.baseline:.4f} -> {c.run_value:.4f} (delta {-(c.drop or 0.0):+.4f}, "
            f"fails below {-c.threshold:+g}")


def gate(comparisons: list[Comparison], thresholds: dict[str, float], *, alpha: float = DEFAULT_ALPHA,
         test: str = "randomization", require_significance: bool = False,
         corrected: Corrected | None = None, judges: list[str] | None = None) -> GateResult:
    """Judge every compared run against the baseline (the comparisons' reference); with `corrected`, on the
    corrected differences (--corrected), which the verdict names."""
    check_gate_options(alpha, test)
    checks = [_check(c.run, t, thresholds[t.metric], alpha, test, require_significance, c.not_comparable)
              for c in comparisons for t in c.tests]
    if corrected is not None:
        checks = _corrected_checks(checks, corrected, alpha)
    reasons = _reasons(comparisons, checks)
    warnings = [f"{movement(c)}) was not gated: {c.note}"
                for c in checks if c.verdict == "drop-untestable"]
    if judges and len(judges) > 1:  # the judge is part of a number's identity: a mix is named, not hidden
        warnings.append(f"the labels come from {len(judges)} judges or rubric versions ({'; '.join(judges)}): a "
                        "run's figure may move with who labelled its pairs, not with the retriever")
    return GateResult(baseline=comparisons[0].reference if comparisons else "", test=test, alpha=alpha,
                      require_significance=require_significance, passed=not reasons, checks=checks,
                      reasons=reasons, warnings=warnings, corrected=corrected.gold if corrected is not None else None,
                      judges=list(judges or []))
