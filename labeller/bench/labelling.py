"""Each judge grades every gold pair through `labeller label`'s own job (engine, verdict cache, retries,
budget), so a rerun pays nothing and a pair the judge could not grade is a counted failure."""

from __future__ import annotations

from pathlib import Path

from labeller.bench.models import Speed
from labeller.errors import LabellingFailedError
from labeller.io.writing import write_rows
from labeller.labelling import LabelInputs, LabelOptions, LabelRun, label_job
from labeller.records import Pair


def write_pairs(pairs: list[Pair], path: Path) -> Path:
    return write_rows(path, (p.model_dump() for p in pairs))


def label_with(judge: str, *, pairs_path: Path, queries: Path, corpus: Path, rubric: str, out_path: Path,
               cache: str | Path | None, base_url: str | None, options: LabelOptions,
               prices: str | Path | None, timeout: float) -> LabelRun:
    try:
        return label_job(LabelInputs(queries=queries, corpus=corpus, pairs=pairs_path, rubric=rubric, cache=cache,
                                     out=out_path, base_url=base_url, options=options, prices=prices,
                                     timeout=timeout), judge)
    except LabellingFailedError as exc:  # the pairs graded are measured; the failures are counted, never graded
        return exc.run  # type: ignore[attr-defined]


def speed(run: LabelRun) -> Speed:
    s = run.stats
    rate = s.new / s.elapsed_s if s.new and s.elapsed_s > 0 else None
    return Speed(new=s.new, cached=s.cached, failed=s.failed, requests=s.requests, elapsed_s=s.elapsed_s,
                 pairs_per_second=rate)
