"""Agreement with people by the judge's own uncertainty: labels made with `labeller label --samples N`.

Each compared pair falls in a band by its `sample_agreement` (the share of the judge's samples equal to
its aggregate grade):
- unanimous: every sample gave the aggregate grade (1.0);
- most: half or more did (0.5 to under 1);
- split: fewer than half did (under 0.5).
Per band: n, exact agreement with the human grade, within-one, Cohen's kappa (unweighted and quadratic;
None when a band is too uniform for one), and the disagreement rate (judge grade != human grade) with a
Wilson interval. Whether the uncertain pairs are where the judge disagrees with people is tested on the
2x2 table certain (unanimous) vs uncertain (most + split) by disagree / agree: Fisher's exact test,
one-sided (uncertain pairs disagree more), from scipy.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

from markupsafe import Markup, escape
from pydantic import BaseModel, ConfigDict

from labeller.agreement.align import Alignment
from labeller.agreement.kappa import cohen_kappa
from labeller.errors import BadInputError
from labeller.io.memory import as_source
from labeller.io.tables import is_headed_tsv, read_rows
from labeller.io.trec import is_table, ranx_json

BANDS = (("unanimous", "every sample gave the label's grade"), ("most", "half or more of the samples did"),
         ("split", "fewer than half of the samples did"))


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Band(Model):
    name: str
    description: str
    n: int
    exact_agreement: float | None = None
    within_one: float | None = None
    kappa: float | None = None
    kappa_quadratic: float | None = None
    disagreement_rate: float | None = None  # judge grade != human grade
    disagreement_low: float | None = None  # Wilson interval at the report's confidence
    disagreement_high: float | None = None


class UncertaintyBands(Model):
    # what the bands are by: "samples" (sample agreement, --samples) or "entropy" (grade entropy, --grade-probs:
    # labeller.agreement.entropy_bands)
    kind: Literal["samples", "entropy"] = "samples"
    pairs: int  # compared pairs whose label carries a sample agreement (entropy: a grade distribution)
    without_samples: int  # compared pairs whose label has none (labelled without --samples; or --grade-probs)
    bands: list[Band]
    certain_disagreement: float | None = None  # the unanimous band's disagreement rate
    uncertain_disagreement: float | None = None  # most + split
    p_value: float | None = None  # Fisher's exact test, one-sided: uncertain pairs disagree more
    confidence: float
    uncertain_disagree_more: bool | None = None  # p_value < 1 - confidence (None: one side is empty)
    verdict: str


def band_of(agreement: float) -> str:
    return "unanimous" if agreement >= 1 else "most" if agreement >= 0.5 else "split"


def sample_agreements(path: str | Path) -> dict[tuple[str, str], float]:
    """(query_id, doc_id) -> sample_agreement for every row of a label table that has one (qrels have none)."""
    return label_figures(path, "sample_agreement", 0.0, 1.0, "a share; expected a number from 0 to 1")


def label_figures(path: str | Path, column: str, low: float, high: float,
                  expected: str) -> dict[tuple[str, str], float]:
    """(query_id, doc_id) -> the number in `column` for every row of a label table that has one (qrels, a ranx
    file and a headed TSV have none); a value outside low..high is refused with its file, line and field."""
    out: dict[tuple[str, str], float] = {}
    path = as_source(path)
    if ranx_json(path) is not None or not is_table(path) or is_headed_tsv(path):
        return out
    for line, row in read_rows(path, role="grades"):
        value = row.get(column)
        if value is None or value == "":
            continue
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = math.nan
        if isinstance(value, bool) or not low <= number <= high:
            raise BadInputError(f"{value!r} is not {expected}", path=str(path), line=line, field=column)
        out[str(row.get("query_id")), str(row.get("doc_id"))] = number
    return out


def _band(name: str, description: str, gold: list[int], judge: list[int], grades: list[int],
          confidence: float) -> Band:
    from scipy.stats import binomtest

    n = len(gold)
    if not n:
        return Band(name=name, description=description, n=0)
    wrong = sum(g != j for g, j in zip(gold, judge))
    ci = binomtest(wrong, n).proportion_ci(confidence_level=confidence, method="wilson")
    return Band(name=name, description=description, n=n, exact_agreement=1 - wrong / n,
                within_one=sum(abs(g - j) <= 1 for g, j in zip(gold, judge)) / n,
                kappa=cohen_kappa(gold, judge, grades), kappa_quadratic=cohen_kappa(gold, judge, grades, "quadratic"),
                disagreement_rate=wrong / n, disagreement_low=float(ci.low), disagreement_high=float(ci.high))


def uncertainty_bands(alignment: Alignment, agreements: dict[tuple[str, str], float],
                      confidence: float = 0.95) -> UncertaintyBands | None:
    """Agreement per uncertainty band; None when no compared pair carries a sample agreement."""
    return banded(alignment, agreements, band_of, BANDS, "samples", confidence,
                  ("pairs whose samples differ", "unanimous pairs"))


def banded(alignment: Alignment, values: dict[tuple[str, str], float], band: Callable[[float], str],
           bands_defined: Sequence[tuple[str, str]], kind: str, confidence: float,
           sides: tuple[str, str]) -> UncertaintyBands | None:
    """Agreement per band of `values` (a pair's uncertainty figure, placed in a band by `band`); the first band
    is the certain one, tested against the others together. None when no compared pair carries a value."""
    from scipy.stats import fisher_exact

    members: dict[str, tuple[list[int], list[int]]] = {name: ([], []) for name, _ in bands_defined}
    without = 0
    for pair in alignment.pairs:
        value = values.get((pair.query_id, pair.doc_id))
        if value is None:
            without += 1
            continue
        gold, judge = members[band(value)]
        gold.append(pair.gold)
        judge.append(pair.judge)
    if without == len(alignment.pairs):
        return None
    bands = [_band(name, text, *members[name], alignment.grades, confidence) for name, text in bands_defined]
    first = bands_defined[0][0]
    certain = members[first]
    uncertain = ([g for name, _ in bands_defined[1:] for g in members[name][0]],
                 [j for name, _ in bands_defined[1:] for j in members[name][1]])
    wrong = [sum(g != j for g, j in zip(*side)) for side in (uncertain, certain)]
    sizes = [len(uncertain[0]), len(certain[0])]
    result = UncertaintyBands(kind=kind, pairs=len(alignment.pairs) - without, without_samples=without, bands=bands,
                              confidence=confidence, verdict="")
    if not all(sizes):
        side = first if not sizes[1] else "uncertain"
        return result.model_copy(update={"verdict": f"Cannot tell whether uncertain pairs are where the judge "
                                                    f"disagrees with people: no pair is {side}."})
    rates = [w / s for w, s in zip(wrong, sizes)]
    _, p = fisher_exact([[wrong[0], sizes[0] - wrong[0]], [wrong[1], sizes[1] - wrong[1]]], alternative="greater")
    more = bool(p < 1 - confidence)
    said = ("Yes: the uncertain pairs are where the judge disagrees with people" if more else
            "Not shown: the uncertain pairs do not disagree with people significantly more")
    verdict = (f"{said} (disagreement {rates[0]:.0%} of {sizes[0]} {sides[0]} vs {rates[1]:.0%} of "
               f"{sizes[1]} {sides[1]}; Fisher's exact test, one-sided, p = {p:.3g}).")
    return result.model_copy(update={"certain_disagreement": rates[1], "uncertain_disagreement": rates[0],
                                     "p_value": float(p), "uncertain_disagree_more": more, "verdict": verdict})


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def band_rows(bands: UncertaintyBands) -> list[list[object]]:
    conf = int(round(bands.confidence * 100))
    return [[b.name, b.description, b.n, _num(b.exact_agreement), _num(b.within_one), _num(b.kappa),
             _num(b.kappa_quadratic),
             "n/a" if b.disagreement_rate is None else
             f"{b.disagreement_rate:.1%} ({conf}% CI {b.disagreement_low:.1%} to {b.disagreement_high:.1%})"]
            for b in bands.bands]


HEADER = ["band", "samples", "pairs", "exact agreement", "within one", "kappa", "quadratic kappa",
          "disagreement with people"]


def heading(bands: UncertaintyBands) -> str:
    return ("Agreement by judge uncertainty (--samples)" if bands.kind == "samples" else
            "Agreement by grade entropy (--grade-probs)")


def _carried(bands: UncertaintyBands) -> str:
    return "sample agreement" if bands.kind == "samples" else "grade distribution"


def markdown_lines(bands: UncertaintyBands | None) -> list[str]:
    if bands is None:
        return []
    header = HEADER if bands.kind == "samples" else ["band", "grade entropy", *HEADER[2:]]
    out = [f"## {heading(bands)}", "", bands.verdict, "",
           "| " + " | ".join(header) + " |", "|---" * len(header) + "|"]
    out += ["| " + " | ".join(map(str, row)) + " |" for row in band_rows(bands)]
    if bands.without_samples:
        out += ["", f"{bands.without_samples} compared pairs carry no {_carried(bands)} and are in no band."]
    return out + [""]


def html_section(bands: UncertaintyBands) -> Markup:
    from labeller.reports import Estimate, interval_chart, table

    note = (f"<p>{bands.without_samples} compared pairs carry no {_carried(bands)} and are in no band.</p>"
            if bands.without_samples else "")
    rates = [Estimate(figure=f"{b.name} ({b.n} pairs)", side="disagreement with people", value=b.disagreement_rate,
                      low=b.disagreement_low, high=b.disagreement_high) for b in bands.bands if b.n]
    chart = Markup(f'<p class="note">Share of each band\'s pairs where the judge\'s grade differs from the '
                   f"person's, with its {bands.confidence:.0%} Wilson interval.</p>") + interval_chart(
        rates, x_range=(0.0, 1.0))
    header = HEADER if bands.kind == "samples" else ["band", "grade entropy", *HEADER[2:]]
    return (Markup(f"<p><b>{escape(bands.verdict)}</b></p>") + chart + table(header, band_rows(bands), (2,))
            + Markup(note))
