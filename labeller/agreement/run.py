"""`labeller agree` as one library call: read the files, measure, gate, check leakage, write reports."""

from __future__ import annotations

from pathlib import Path

from labeller.agreement.align import align
from labeller.agreement.disagreements import find_disagreements
from labeller.agreement.entropy_bands import entropy_bands, grade_entropies
from labeller.agreement.gate import GATE_METRICS, GateResult, run_gate
from labeller.agreement.jury import JudgeAgreement
from labeller.agreement.leakage import LeakedExample, leaked_examples, leakage_warning
from labeller.agreement.measure import MIN_PAIRS, measure
from labeller.agreement.summary import Agreement
from labeller.agreement.uncertainty import UncertaintyBands, sample_agreements, uncertainty_bands
from labeller.errors import BadInputError
from labeller.io.gold import read_grades
from labeller.io.scales import command_scale
from labeller.io.inputs import read_corpus, read_queries
from labeller.io.outputs import check_outputs, existing_files
from labeller.records import Pair


class AgreeResult(Agreement):
    """Everything `labeller agree --json` prints: the agreement figures plus gate, leakage and files."""

    labels: str
    gold: str
    baseline: str | None = None
    gate: GateResult | None = None
    leakage: list[LeakedExample] = []
    warnings: list[str] = []
    stale: list[str] = []  # what no longer matches the rubric/judge asked for (also among warnings)
    reports: list[str] = []
    judges: list[JudgeAgreement] = []  # a jury or escalation file: each judge and the final labels against gold
    uncertainty: UncertaintyBands | None = None  # labels made with --samples: agreement by the judge's uncertainty
    entropy: UncertaintyBands | None = None  # labels made with --grade-probs: agreement by grade entropy band
    scales: list[str] = []  # how a file's grades were shifted onto 1.. (0-3 qrels onto 1-4), one sentence each

    def to_frame(self):
        """The headline figures as a DataFrame: one row per figure (kappa, kappa_linear, ..., kappa_binary@3),
        with its value and bootstrap interval, exactly the numbers of `--json`."""
        import pandas as pd

        rows = [(name, getattr(self, name), getattr(self.ci, name)) for name in _FIGURES]
        rows += [(f"kappa_binary@{cut}", value, self.ci.kappa_binary.get(cut))
                 for cut, value in self.kappa_binary.items()]
        return pd.DataFrame([{"figure": name, "value": value, "ci_low": ci.low if ci else None,
                              "ci_high": ci.high if ci else None, "n": self.n} for name, value, ci in rows])


_FIGURES = ("kappa", "kappa_linear", "kappa_quadratic", "alpha_ordinal", "spearman", "kendall", "exact_agreement",
            "within_one", "mean_signed_difference")


def agree_files(labels: str | Path, gold: str | Path, *, baseline: str | Path | None = None,
                queries: str | Path | None = None, corpus: str | Path | None = None, rubric: str | None = None,
                from_scale: str | None = None, clip: bool = False, relevant_from: int = 3, resamples: int = 1000,
                seed: int = 0, confidence: float = 0.95, min_diff: int = 2, min_kappa: float | None = None,
                max_drop: float = 0.02, gate_metric: str = "kappa", judge: str | None = None,
                report_dir: str | Path | None = None) -> AgreeResult:
    """Compare judge labels with human gold (and, with `baseline`, run the prompt-change gate).

    With `rubric` or `judge` ("provider:model"), labels made under another rubric version or by another
    judge are reported as stale (in `stale` and among the warnings)."""
    if min_diff < 1:
        raise BadInputError(f"--min-diff {min_diff} must be at least 1")
    if gate_metric not in GATE_METRICS:
        raise BadInputError(f"--gate-metric '{gate_metric}' is unknown; expected one of {', '.join(GATE_METRICS)}")
    if not 0 < confidence < 1:
        raise BadInputError(f"confidence {confidence} must lie between 0 and 1")
    if seed < 0:
        raise BadInputError(f"--seed {seed} is negative; expected a whole number >= 0", field="seed")
    if max_drop < 0:
        raise BadInputError(f"--max-drop {max_drop} is negative; expected the largest tolerated drop, >= 0",
                            field="max_drop")
    if report_dir is not None:
        from labeller.agreement.report import FILES

        check_outputs(inputs=existing_files([labels, gold, baseline, queries, corpus, rubric]),
                      files={f"--report's {name}": Path(report_dir) / name for name in FILES},
                      dirs={"--report": report_dir})
    from_scale = command_scale(from_scale, [labels, gold, baseline])
    query_map = read_queries(queries) if queries else None
    doc_map = read_corpus(corpus) if corpus else None
    known = {"queries": query_map, "corpus": doc_map}
    gold_file = read_grades(gold, role="gold", from_scale=from_scale, clip=clip, **known)
    labels_file = read_grades(labels, role="labels", from_scale=from_scale, clip=clip, several_per_pair=False, **known)
    alignment = align(labels_file, gold_file)
    agreement = measure(alignment, relevant_from=relevant_from, resamples=resamples, seed=seed,
                        confidence=confidence, min_diff=min_diff, clip=clip)
    judges = _judges(labels, labels_file, gold_file, relevant_from=relevant_from, resamples=resamples, seed=seed,
                     confidence=confidence)
    gate = None
    if baseline is not None or min_kappa is not None:
        old = None
        if baseline is not None:
            old = align(read_grades(baseline, role="baseline", from_scale=from_scale, clip=clip,
                                    several_per_pair=False, **known),
                        gold_file)
        gate = run_gate(alignment, old, metric=gate_metric, relevant_from=relevant_from, max_drop=max_drop,
                        min_kappa=min_kappa, resamples=resamples, seed=seed, confidence=confidence)
    warnings, leaked = _warnings(agreement), []
    if gold_file.not_grades:
        warnings.append(f"{gold_file.not_grades} gold rows are \"can't judge\" or \"later\": not grades, left out")
    loaded = None
    if rubric is not None:
        from labeller.rubric import load_rubric

        loaded = load_rubric(rubric)
    stale = _stale(labels, gold, loaded, judge)
    warnings = stale + warnings
    if loaded is not None:
        compared = [Pair(query_id=p.query_id, doc_id=p.doc_id) for p in alignment.pairs]
        leaked = leaked_examples(loaded, compared, query_map, doc_map)
        message = leakage_warning(loaded, leaked)
        if message:
            warnings.insert(0, message)
        elif loaded.examples and (query_map is None or doc_map is None) and \
                any(e.query_id is None for e in loaded.examples):
            warnings.append("rubric examples without query_id/doc_id can only be matched to gold pairs by text: "
                            "pass --queries and --corpus to check them for leakage")
    result = AgreeResult(**agreement.model_dump(), labels=str(labels), gold=str(gold),
                         baseline=str(baseline) if baseline else None, gate=gate, leakage=leaked, warnings=warnings,
                         stale=stale, judges=judges,
                         scales=[n for n in (gold_file.shift_note("gold"), labels_file.shift_note("labels")) if n],
                         uncertainty=uncertainty_bands(alignment, sample_agreements(labels), confidence),
                         entropy=entropy_bands(alignment, grade_entropies(labels), confidence))
    if report_dir is None:
        return result
    from labeller.agreement.report import write_reports

    entries = find_disagreements(alignment, min_diff, query_map, doc_map)
    files = write_reports(report_dir, result, entries, query_map, doc_map)
    return result.model_copy(update={"reports": [str(f) for f in files]})


def _judges(labels, labels_file, gold_file, **options) -> list[JudgeAgreement]:
    from labeller.agreement.jury import against_gold, label_sets_in_file

    sets = label_sets_in_file(labels, labels_file)
    return against_gold(sets, gold_file, **options) if sets else []


def _stale(labels, gold, rubric, judge) -> list[str]:
    from labeller.agreement.stale import stale_gold, stale_labels

    # the baseline is the old prompt on purpose: only the labels under test must match what is asked
    return stale_labels(labels, rubric=rubric, judge=judge) + stale_gold(gold, rubric=rubric)


def _warnings(agreement: Agreement) -> list[str]:
    out = []
    if agreement.n < MIN_PAIRS:
        out.append(f"only {agreement.n} pair compared: kappa, alpha and the correlations cannot be computed from one "
                   "pair (chance agreement needs at least two); compare more pairs")
    sides = agreement.one_side_only
    if sides.labels_only:
        out.append(f"{sides.labels_only} labelled pairs have no gold grade (listed under one_side_only)")
    if sides.gold_only:
        out.append(f"{sides.gold_only} gold pairs have no label (listed under one_side_only)")
    if agreement.clipping.count:
        out.append(f"{agreement.clipping.count} out-of-scale grades were clipped (listed under clipping)")
    return out
