"""The verdict of one probe: its figures, and FAIL when the gated shift is beyond the threshold.

The gate reads the point estimate, not an end of the interval: |mean shift| (near-duplicate: the mean
absolute shift) above the threshold fails. Reading the interval's near end instead would let a biased
judge PASS whenever the sample is small enough to make the interval wide; the interval is reported
beside the verdict to say how sure the figure is, and a PASS whose interval reaches past the threshold
says so. A probe whose pairs the judge could not grade at all fails: no evidence is not a pass.
"""

from __future__ import annotations

from collections.abc import Sequence

from labeller.probes.base import Probe
from labeller.probes.models import PairShift, ProbeResult, ProbeSettings
from labeller.probes.stats import mean_and_interval


def probe_result(probe: Probe, shifts: Sequence[PairShift], settings: ProbeSettings) -> ProbeResult:
    graded = [s for s in shifts if s.shift is not None]
    qids = [s.query_id for s in graded]
    values = [float(s.shift) for s in graded]  # type: ignore[arg-type]
    figures = dict(resamples=settings.resamples, seed=settings.seed, confidence=settings.confidence)
    mean, mean_ci = mean_and_interval(qids, values, **figures)
    mean_abs, abs_ci = mean_and_interval(qids, [abs(v) for v in values], **figures)
    threshold = settings.threshold(probe.name)
    stat, ci = (mean, mean_ci) if probe.gated == "mean_shift" else (mean_abs, abs_ci)
    label = "mean shift" if probe.gated == "mean_shift" else "mean absolute shift"
    reasons: list[str] = []
    failed = len(shifts) - len(graded)
    if stat is None:
        verdict = "fail"
        reasons.append(f"the judge failed on all {len(shifts)} pairs: no shift could be measured")
    elif abs(stat) > threshold:
        verdict = "fail"
        reasons.append(f"{label} {stat:+.3f} is beyond the threshold of {threshold:g} grade")
    else:
        verdict = "pass"
        ends = [e for e in (ci.low, ci.high) if e is not None]
        if any(abs(e) > threshold for e in ends):
            reasons.append(f"the {settings.confidence:.0%} interval reaches past {threshold:g}: more pairs would "
                           "make the pass firmer")
    if failed:
        reasons.append(f"{failed} of {len(shifts)} pairs not counted: the judge failed on them")
    return ProbeResult(probe=probe.name, what=probe.what, gated=probe.gated, threshold=threshold, pairs=len(shifts),
                       graded=len(graded), failed=failed, queries=len(set(qids)), mean_shift=mean,
                       mean_shift_interval=mean_ci, mean_abs_shift=mean_abs, mean_abs_shift_interval=abs_ci,
                       share_changed=(sum(1 for v in values if v != 0) / len(values)) if values else None,
                       verdict=verdict, reasons=reasons, shifts=list(shifts))
