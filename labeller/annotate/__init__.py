"""Build a gold set: a frozen sample of pairs, a blind grading page for several people with overlap,
human-human agreement, and adjudication against the judge. See gold/README.md for the whole loop."""

from __future__ import annotations

from pathlib import Path

from labeller.annotate.draw import SampleOptions, draw_sample
from labeller.annotate.sample import Sample, read_sample
from labeller.annotate.session import Session


def make_sample(out: str | Path, **options) -> Sample:
    """Freeze a sample drawn from exactly one of a pairs file, a run's top `depth`, or a judge's labels
    (SampleOptions' fields)."""
    return draw_sample(SampleOptions(out=out, **options))[0]


__all__ = ["Sample", "SampleOptions", "Session", "draw_sample", "make_sample", "read_sample"]
