"""`labeller agree` as one library call: read the files, measure, gate, check leakage, write reports."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

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
from labeller.io.memory import Input
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


class AgreeOptions(BaseModel):
    """What `labeller agree` reads and decides with: one object from the command line, the Python API and the
    pipelines. An input is a path or, from Python, a frame in memory (labeller.io.memory)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    labels: Input
    gold: Input
    baseline: Input | None = None  # the old prompt's labels: the prompt-change gate
    queries: Input | None = None  # texts for the reports, and id checks
    corpus: Input | None = None
    rubric: str | Path | None = None  # its worked examples must not be gold; labels under another version are stale
    judge: str | None = None  # labels by another judge (provider:model) are stale
    from_scale: str | None = None
    clip: bool = False
    relevant_from: int = 3
    resamples: int = 1000  # bootstrap resamples of queries
    seed: int = 0
    confidence: float = 0.95
    min_diff: int = 2  # disagreements listed: pairs this many grades apart or more
    min_kappa: float | None = None  # the gate fails below it
    max_drop: float = 0.02  # ... or when the gate metric drops by more than this from the baseline's
    gate_metric: str = "kappa"
    report_dir: Path | None = None  # agreement.md, agreement.html, disagreements.csv


def agree(options: AgreeOptions) -> AgreeResult:
    """Compare judge labels with human gold (and, with a baseline, run the prompt-change gate).

    With `rubric` or `judge` ("provider:model"), labels made under another rubric version or by another
    judge are reported as stale (in `stale` and among the warnings)."""
    _check(options)
    if options.report_dir is not None:
        from labeller.agreement.report import FILES

        read = [options.labels, options.gold, options.baseline, options.queries, options.corpus, options.rubric]
        check_outputs(inputs=existing_files(read),
                      files={f"--report's {name}": options.report_dir / name for name in FILES},
                      dirs={"--report": options.report_dir})
    from_scale = command_scale(options.from_scale, [options.labels, options.gold, options.baseline])
    query_map = read_queries(options.queries) if options.queries else None
    doc_map = read_corpus(options.corpus) if options.corpus else None
    known = {"queries": query_map, "corpus": doc_map}
    gold_file = read_grades(options.gold, role="gold", from_scale=from_scale, clip=options.clip, **known)
    labels_file = read_grades(options.labels, role="labels", from_scale=from_scale, clip=options.clip,
                              several_per_pair=False, **known)
    alignment = align(labels_file, gold_file)
    bootstrap = dict(resamples=options.resamples, seed=options.seed, confidence=options.confidence)
    agreement = measure(alignment, relevant_from=options.relevant_from, min_diff=options.min_diff, clip=options.clip,
                        **bootstrap)
    judges = _judges(options.labels, labels_file, gold_file, relevant_from=options.relevant_from, **bootstrap)
    gate = None
    if options.baseline is not None or options.min_kappa is not None:
        old = None
        if options.baseline is not None:
            old = align(read_grades(options.baseline, role="baseline", from_scale=from_scale, clip=options.clip,
                                    several_per_pair=False, **known),
                        gold_file)
        gate = run_gate(alignment, old, metric=options.gate_metric, relevant_from=options.relevant_from,
                        max_drop=options.max_drop, min_kappa=options.min_kappa, **bootstrap)
    warnings, leaked = _warnings(agreement), []
    if gold_file.not_grades:
        warnings.append(f"{gold_file.not_grades} gold rows are \"can't judge\" or \"later\": not grades, left out")
    loaded = None
    if options.rubric is not None:
        from labeller.rubric import load_rubric

        loaded = load_rubric(options.rubric)
    stale = _stale(options.labels, options.gold, loaded, options.judge)
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
    result = AgreeResult(**agreement.model_dump(), labels=str(options.labels), gold=str(options.gold),
                         baseline=str(options.baseline) if options.baseline else None, gate=gate, leakage=leaked,
                         warnings=warnings, stale=stale, judges=judges,
                         scales=[n for n in (gold_file.shift_note("gold"), labels_file.shift_note("labels")) if n],
                         uncertainty=uncertainty_bands(alignment, sample_agreements(options.labels),
                                                       options.confidence),
                         entropy=entropy_bands(alignment, grade_entropies(options.labels), options.confidence))
    if options.report_dir is None:
        return result
    from labeller.agreement.report import write_reports

    entries = find_disagreements(alignment, options.min_diff, query_map, doc_map)
    files = write_reports(options.report_dir, result, entries, query_map, doc_map)
    return result.model_copy(update={"reports": [str(f) for f in files]})


def _check(options: AgreeOptions) -> None:
    """The settings, in the command line's words, before any file is read."""
    if options.min_diff < 1:
        raise BadInputError(f"--min-diff {options.min_diff} must be at least 1")
    if options.gate_metric not in GATE_METRICS:
        raise BadInputError(f"--gate-metric '{options.gate_metric}' is unknown; expected one of "
                            f"{', '.join(GATE_METRICS)}")
    if not 0 < options.confidence < 1:
        raise BadInputError(f"confidence {options.confidence} must lie between 0 and 1")
    if options.seed < 0:
        raise BadInputError(f"--seed {options.seed} is negative; expected a whole number >= 0", field="seed")
    if options.max_drop < 0:
        raise BadInputError(f"--max-drop {options.max_drop} is negative; expected the largest tolerated drop, >= 0",
                            field="max_drop")


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
