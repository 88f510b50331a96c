"""Judge drift: a fixed sample of pairs, re-asked whenever the judge, its model or the rubric changes.

The first regression run picks `drift.sample` pairs of its labelled pool (deterministically: the pairs
whose sha256(query_id, doc_id) sort first) and stores them, with the grades the judge gave and the
judge's identity (provider, model, base URL, decoding settings with the output mode, rubric name,
version and a hash of the rubric text, and a local server's /v1/models entry for the model, so a GGUF
swapped behind the same URL and name is a change), in `drift.json` beside the history. A later run whose judge identity differs grades the
same pairs with the new judge (through the cache: they are usually in today's pool anyway) and compares
old and new verdicts: quadratic-weighted kappa and exact agreement. Below `drift.min_kappa` that is
JUDGE DRIFT, reported apart from retrieval regressions: today's figures are on labels of a judge that
grades differently, so a moved metric says nothing about the retriever.

The reference moves to the new judge when it passes (or with `drift.accept = true`); a drifted judge
keeps the old reference, so the gate keeps failing until someone looks and accepts it.

`[judge] temperature` is a decoding setting, so changing it is a judge change (`settings`) and is checked.
How a label is made is part of the identity too (`grading`, labelling.grading): `[label] grade_probs` and
`top_logprobs` (sent as decoding settings, so also a `settings` change), grade probabilities read from samples
where the judge gives no log-probabilities, and whether labels are sampled (`samples` > 1) or adaptive
(`samples_auto`): a figure from a log-probability run is not silently compared with one from a sampling run.
The number of samples and `aggregate` are not: each sample is a request to the same judge, and more samples
only estimate that judge's grade better; a check after raising N would measure sampling noise, not a changed
judge. (The stored and re-asked grades are the aggregates the run labelled with.)
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from labeller.agreement.kappa import cohen_kappa
from labeller.errors import BadInputError
from labeller.io.validation import validation_error
from labeller.io.writing import write_text
from labeller.records import GRADE_MAX, GRADE_MIN, Label, Record

FORMAT = "labeller-drift-sample/1"
IDENTITY_FIELDS = ("provider", "model", "base_url", "settings", "rubric", "rubric_version", "rubric_hash", "served",
                   "grading")


class JudgeIdentity(Record):
    """Everything about a judge that can change its verdicts (what the cache key holds, minus the pair)."""

    provider: str
    model: str
    base_url: str = ""
    settings: str  # the decoding settings sent, as canonical JSON
    rubric: str
    rubric_version: str
    rubric_hash: str  # sha256 of the rendered system prompt: an edit without a version bump still shows
    served: str | None = None  # a local server's /v1/models entry: another GGUF behind the same name is a change
    # how a label is made (labelling.grading: grade probabilities from log-probabilities or from samples, sampled
    # or adaptive labels); "" for one plain request a pair, as a sample stored before this field was
    grading: str = ""

    def with_grading(self, judge: str) -> str:
        """A judge's name with how labels are made, where that is not one plain request a pair (the history's
        judge column: a value recorded from a log-probability run is not read as one from a sampling run)."""
        return " · ".join([judge, *([self.grading] if self.grading else [])])


class SampleVerdict(Record):
    query_id: str
    doc_id: str
    grade: int


class DriftSample(Record):
    format: str = FORMAT
    judge: JudgeIdentity
    created_at: str
    verdicts: list[SampleVerdict]


class DriftCheck(Record):
    status: Literal["created", "unchanged", "checked", "off"]
    drifted: bool = False
    n: int = 0  # pairs compared (sample pairs still in today's inputs and graded by both judges)
    kappa_quadratic: float | None = None
    exact_agreement: float | None = None
    min_kappa: float
    changed: list[str] = []  # which parts of the judge identity changed
    old: JudgeIdentity | None = None
    new: JudgeIdentity
    accepted: bool = False  # drifted, but drift.accept made the new judge the reference (the run does not fail)


def sample_path(out: Path) -> Path:
    return out / "drift.json"


def read_sample(path: Path) -> DriftSample | None:
    """The stored sample, or None before the first run. A damaged file stops the job before anything is paid."""
    if not path.exists():
        return None
    try:
        return DriftSample.model_validate_json(path.read_text(encoding="utf-8"))
    except (ValidationError, UnicodeDecodeError, ValueError) as exc:
        if isinstance(exc, ValidationError):
            raise validation_error(exc, path=str(path), expected="the drift sample written by `labeller run`") from None
        raise BadInputError("the drift sample cannot be read; expected the JSON `labeller run` wrote. Move it away "
                            "to start a new sample", path=str(path)) from None


def write_sample(path: Path, sample: DriftSample) -> None:
    write_text(path, sample.model_dump_json(indent=2) + "\n")


def judge_identity(spec: str, base_url: str | None, rubric: str, temperature: float | None = None,
                   output_mode: str | None = None, label=None) -> JudgeIdentity:
    """`label`: the pipeline's [label] section, whose --grade-probs and sampling settings say how a label is made
    (they change the decoding settings sent, and the `grading`)."""
    from labeller.judges.registry import make_judge
    from labeller.labelling.grading import plan_grading
    from labeller.labelling.models import LabelOptions
    from labeller.rubric import load_rubric

    loaded = load_rubric(rubric)
    judge = make_judge(spec, base_url=base_url, api_key="identity-only-sends-nothing", temperature=temperature or 0.0,
                       output_mode=output_mode)
    grading = None
    if label is not None:  # asks the judge for log-probabilities as the run does: they join its settings
        grading = plan_grading(judge, LabelOptions(samples=label.samples, aggregate=label.aggregate,
                                                   adaptive=label.samples_auto, grade_probs=label.grade_probs,
                                                   top_logprobs=label.top_logprobs)).label

    async def served() -> str | None:  # what the labels' cache keys hold too (nothing for a provider's own API)
        try:
            return await judge.served_identity()
        finally:
            await judge.aclose()

    settings = json.dumps(judge.decoding_settings(), sort_keys=True, default=str)
    shown_url = (judge.base_url or "").rstrip("/")
    served_as = asyncio.run(served())
    return JudgeIdentity(provider=judge.provider, model=judge.model, base_url=shown_url, settings=settings,
                         rubric=loaded.name, rubric_version=loaded.version,
                         rubric_hash=hashlib.sha256(loaded.system_prompt().encode("utf-8")).hexdigest(),
                         served=served_as, grading=grading or "")


def _order(label: Label) -> str:
    return hashlib.sha256(f"{label.query_id}\t{label.doc_id}".encode("utf-8")).hexdigest()


def pick(labels: list[Label], size: int) -> list[SampleVerdict]:
    """The same `size` pairs for the same pool, whatever order it was labelled in."""
    chosen = sorted(labels, key=_order)[:size]
    return [SampleVerdict(query_id=x.query_id, doc_id=x.doc_id, grade=x.grade) for x in chosen]


def compare(old: list[SampleVerdict], new: list[Label]) -> tuple[int, float | None, float | None]:
    """(pairs compared, quadratic kappa, exact agreement) of the old and the new verdicts."""
    fresh = {(x.query_id, x.doc_id): x.grade for x in new}
    both = [(v.grade, fresh[(v.query_id, v.doc_id)]) for v in old if (v.query_id, v.doc_id) in fresh]
    if not both:
        return 0, None, None
    a, b = [x for x, _ in both], [y for _, y in both]
    exact = sum(x == y for x, y in both) / len(both)
    return len(both), cohen_kappa(a, b, range(GRADE_MIN, GRADE_MAX + 1), "quadratic"), exact


def changed_fields(old: JudgeIdentity, new: JudgeIdentity) -> list[str]:
    return [name for name in IDENTITY_FIELDS if getattr(old, name) != getattr(new, name)]


def is_drift(n: int, kappa: float | None, exact: float | None, min_kappa: float) -> bool:
    """Below the floor is drift; an undefined kappa (one grade on a side) is drift unless every verdict is equal;
    a sample with no pair left to compare cannot vouch for the new judge, so it is drift too."""
    if not n:
        return True
    if kappa is None:
        return exact != 1.0
    return kappa < min_kappa


def summary_line(check: DriftCheck, fail: bool) -> str:
    if check.status == "off":
        return "No drift check: drift.sample = 0."
    if check.status == "created":
        return (f"Drift sample: {check.n} pairs of today's pool with this judge's verdicts stored as the reference "
                "for later judge, model or rubric changes.")
    if check.status == "unchanged":
        return ("No drift check: the judge, model, decoding settings, grading and rubric are those of the drift "
                "sample.")
    figures = (f"quadratic kappa {_f(check.kappa_quadratic)}, exact agreement {_f(check.exact_agreement)} "
               f"on {check.n} sample pairs")
    change = ", ".join(_change(name, check) for name in check.changed)
    if not check.drifted:
        return f"Judge changed ({change}); its verdicts match the old judge's: {figures} (>= drift.min_kappa {check.min_kappa})."
    accepted = (" Accepted as the new reference (drift.accept)." if check.accepted else
                " Accept the new judge with --set drift.accept=true once its labels are trusted.")
    effect = "" if fail or check.accepted else " Not failing the run (drift.fail = false)."
    return (f"JUDGE DRIFT: the judge changed ({change}) and grades differently: {figures} (< drift.min_kappa "
            f"{check.min_kappa}). Today's figures are on the new judge's labels: a moved metric is the judge, not "
            f"the retriever.{accepted}{effect}")


def _change(name: str, check: DriftCheck) -> str:
    old, new = getattr(check.old, name), getattr(check.new, name)
    if name == "grading":  # a log-probability run against a sampling run is named, not hidden
        return f"grading '{old or 'one request a pair'}' -> '{new or 'one request a pair'}'"
    return f"{name} {old} -> {new}" if name in ("provider", "model", "rubric", "rubric_version") else f"{name} changed"


def _f(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.3f}"


def check_drift(cfg, out: Path, stored: DriftSample | None, pool: list[Label], now: str) -> tuple[DriftCheck, int]:
    """Create, keep or check the drift sample; returns the check and the judge requests it sent."""
    from labeller.pipelines.steps import label, write_pairs
    from labeller.records import Pair

    drift = cfg.drift
    identity = judge_identity(cfg.judge.spec, cfg.judge.base_url, cfg.judge.rubric, cfg.judge.temperature,
                              cfg.judge.output_mode, cfg.label)
    if drift.sample == 0:
        return DriftCheck(status="off", min_kappa=drift.min_kappa, new=identity), 0
    if stored is None:
        verdicts = pick(pool, drift.sample)
        write_sample(sample_path(out), DriftSample(judge=identity, created_at=now, verdicts=verdicts))
        return DriftCheck(status="created", n=len(verdicts), min_kappa=drift.min_kappa, new=identity), 0
    if stored.judge == identity:
        return DriftCheck(status="unchanged", n=len(stored.verdicts), min_kappa=drift.min_kappa, old=stored.judge,
                          new=identity), 0
    from labeller.io.inputs import read_corpus, read_queries

    queries, corpus = read_queries(cfg.inputs.queries), read_corpus(cfg.inputs.corpus)
    still = [v for v in stored.verdicts if v.query_id in queries and v.doc_id in corpus]
    pairs = [Pair(query_id=v.query_id, doc_id=v.doc_id) for v in still]
    regraded = label(cfg, write_pairs(pairs, out / "drift" / "pairs.jsonl"), out / "drift" / "labels.jsonl") \
        if pairs else None
    labels = regraded.labels if regraded else []
    n, kappa, exact = compare(still, labels)
    drifted = is_drift(n, kappa, exact, drift.min_kappa)
    accepted = not drifted or drift.accept
    if accepted:  # the reference follows the judge; a drifted one keeps the old reference until accepted
        fresh = {(x.query_id, x.doc_id): x.grade for x in labels}
        write_sample(sample_path(out), DriftSample(judge=identity, created_at=now, verdicts=[
            v.model_copy(update={"grade": fresh[(v.query_id, v.doc_id)]}) for v in still
            if (v.query_id, v.doc_id) in fresh]))
    check = DriftCheck(status="checked", drifted=drifted, n=n, kappa_quadratic=kappa, exact_agreement=exact,
                       min_kappa=drift.min_kappa, changed=changed_fields(stored.judge, identity), old=stored.judge,
                       new=identity, accepted=accepted and drifted)
    return check, regraded.stats.requests if regraded else 0


def markdown_section(check: DriftCheck, fail: bool) -> str:
    lines = ["## Judge drift", "", summary_line(check, fail)]
    if check.status == "checked":
        lines += ["", "| | old judge | new judge |", "|---|---|---|"]
        lines += [f"| {name} | {getattr(check.old, name)} | {getattr(check.new, name)} |"
                  for name in ("provider", "model", "rubric", "rubric_version")]
    return "\n".join(lines) + "\n"
