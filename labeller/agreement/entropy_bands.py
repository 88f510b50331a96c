"""Agreement with people by the judge's grade entropy: labels made with `labeller label --grade-probs`.

Each compared pair falls in a band by its `grade_entropy` (bits, from the grade's distribution: read from the
judge's token log-probabilities, or the shares of its sample grades where the judge gives none; labelling.grading):
- sure: at most 0.5 bits (judges.grade_probs.ENTROPY_SPREAD: e.g. 0.9 / 0.1 between two grades is 0.47);
- leaning: above 0.5, at most 1 bit (e.g. an even split between two grades is 1 bit);
- spread: above 1 bit (three grades or more carry real mass).
Per band, the figures and the test of labeller.agreement.uncertainty (kappa, exact agreement, disagreement with
a Wilson interval; Fisher's exact test of sure vs leaning + spread): a user sees whether the labels the judge was
sure of are the ones people agree with.
"""

from __future__ import annotations

import math
from pathlib import Path

from labeller.agreement.align import Alignment
from labeller.agreement.uncertainty import UncertaintyBands, banded, label_figures
from labeller.judges.grade_probs import ENTROPY_SPREAD
from labeller.records import GRADE_MAX, GRADE_MIN

SPLIT = 1.0  # bits: an even split between two grades
BANDS = (("sure", f"grade entropy at most {ENTROPY_SPREAD} bits"),
         ("leaning", f"above {ENTROPY_SPREAD}, at most {SPLIT:g} bit"),
         ("spread", f"above {SPLIT:g} bit"))
MAX_ENTROPY = math.log2(GRADE_MAX - GRADE_MIN + 1)  # every grade alike


def band_of(entropy: float) -> str:
    return "sure" if entropy <= ENTROPY_SPREAD else "leaning" if entropy <= SPLIT else "spread"


def grade_entropies(path: str | Path) -> dict[tuple[str, str], float]:
    """(query_id, doc_id) -> grade_entropy for every row of a label table that has one."""
    return label_figures(path, "grade_entropy", 0.0, MAX_ENTROPY + 1e-6,
                         f"an entropy in bits; expected a number from 0 to {MAX_ENTROPY:.3f} (log2 of 5 grades)")


def entropy_bands(alignment: Alignment, entropies: dict[tuple[str, str], float],
                  confidence: float = 0.95) -> UncertaintyBands | None:
    """Agreement per entropy band; None when no compared pair carries a grade distribution."""
    return banded(alignment, entropies, band_of, BANDS, "entropy", confidence,
                  (f"pairs above {ENTROPY_SPREAD} bits", "sure pairs"))
