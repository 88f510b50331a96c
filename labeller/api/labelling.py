"""label / alabel: pairs in, a DataFrame of labels out, through the same job as `labeller label`."""

from __future__ import annotations

import asyncio
import concurrent.futures
from pathlib import Path
from typing import Any

from labeller.api.sources import Source, api_errors, readable
from labeller.errors import LabellingFailedError


def label(pairs: Source | None = None, *, queries: Source, corpus: Source, judge: str = "offline:lexical",
          rubric: str | Path = "general", run: Source | None = None, depth: int | None = None,
          cache: str | Path = ".labeller-cache", out: str | Path | None = None, base_url: str | None = None,
          concurrency: int = 16, max_cost: float | None = None, dry_run: bool = False, timeout: float = 60.0,
          prices: str | Path | None = None, columns: dict[str, str] | str | None = None,
          errors: str = "raise", progress: bool | None = None, judges: list[str] | None = None,
          escalate_to: str | None = None, escalate_below: float | None = None, escalate_near_cut: bool = True,
          relevant_from: int = 3, gold: Source | None = None, samples: int | str = 1, aggregate: str = "median",
          temperature: float | None = None, output_mode: str | None = None, gold_scale: str | None = None,
          grade_probs: bool = False, top_logprobs: int = 10, escalate_above_entropy: float | None = None,
          ray: Any = None):
    """Grade pairs with a judge through the verdict cache; returns one row per label (pandas DataFrame).

    `judges=[A, B, ...]` (instead of `judge`) labels with a jury: one row per pair with the median grade and
    each judge's grade in `judge_grades`; `escalate_to=EXPENSIVE` re-grades with that judge the pairs `judge`
    is unsure of (`escalate_below`, `escalate_near_cut`, `relevant_from`: as `labeller label`). Both put every
    judge's own labels in `frame.attrs["judge_labels"]`; `gold` adds each judge against gold to the stats
    (`gold_scale`: its own scale, e.g. "0-3", as `agree --from-scale` takes it).

    `pairs`, `queries`, `corpus` and `run` are DataFrames, lists of row dicts or file paths (a run may be a
    {query_id: {doc_id: score}} dict or a ranx Run). Give `pairs`, or `run` with `depth`. The frame has
    labeller's label columns (query_id, doc_id, grade, justification, judge, ..., created_at as a UTC
    timestamp, token counts as nullable integers); `out` also writes it to a file. Pairs the judge could
    not grade raise LabellingFailedError (its `.run` holds what was done) unless `errors="keep"`, which
    returns the labels with the failures in `frame.attrs["failures"]`. A dry run returns an empty frame
    with the estimate in `frame.attrs["stats"]`. `samples=N` (with `temperature` above 0 for an OpenAI-compatible
    judge) asks the judge N times per pair: the frame then has samples, sample_grades, sample_agreement,
    sample_spread and aggregate columns (labeller.labelling.samples); samples="auto:N" asks more only where the
    first disagree or the grade is spread (labeller.labelling.adaptive). `grade_probs=True` reads each grade's
    probability from an OpenAI-compatible judge's token log-probabilities (`top_logprobs` alternatives a token):
    grade_probs, expected_grade and grade_entropy columns; `escalate_above_entropy` escalates on it. Usable inside a running event loop (Jupyter): the
    labelling then runs on a worker thread; `await alabel(...)` is the asynchronous form. `output_mode`
    (json_schema, json_object, tool, text) is `--output-mode` for a local server (docs/local-servers.md).
    `ray` judges the pairs on a Ray cluster (`--ray`, docs/ray.md): "local", a cluster's "HOST:PORT", or a
    labeller.distributed.RayOptions (address, workers, block_size); the frame is the same.
    """
    if errors not in ("raise", "keep"):
        raise ValueError(f"errors={errors!r}; expected 'raise' or 'keep'")
    arguments = dict(pairs=pairs, queries=queries, corpus=corpus, judge=judge, rubric=rubric, run=run, depth=depth,
                     cache=cache, out=out, base_url=base_url, concurrency=concurrency, max_cost=max_cost,
                     dry_run=dry_run, timeout=timeout, prices=prices, columns=columns, errors=errors,
                     progress=progress, judges=judges, escalate_to=escalate_to, escalate_below=escalate_below,
                     escalate_near_cut=escalate_near_cut, relevant_from=relevant_from, gold=gold, samples=samples,
                     aggregate=aggregate, temperature=temperature, output_mode=output_mode, gold_scale=gold_scale,
                     grade_probs=grade_probs, top_logprobs=top_logprobs, escalate_above_entropy=escalate_above_entropy,
                     ray=ray)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _label(**arguments)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as worker:  # a notebook's loop is running here
        return worker.submit(_label, **arguments).result()


async def alabel(pairs: Source | None = None, **options: Any):
    """`label` for async code: the same arguments and result, without blocking the caller's event loop."""
    return await asyncio.to_thread(_label_checked, pairs, options)


def _label_checked(pairs, options):
    if options.get("errors", "raise") not in ("raise", "keep"):
        raise ValueError(f"errors={options['errors']!r}; expected 'raise' or 'keep'")
    return _label(pairs=pairs, **{"errors": "raise", **options})


def _label(*, pairs, queries, corpus, judge="offline:lexical", rubric="general", run=None, depth=None,
           cache=".labeller-cache", out=None, base_url=None, concurrency=16, max_cost=None, dry_run=False,
           timeout=60.0, prices=None, columns=None, errors="raise", progress=None, judges=None, escalate_to=None,
           escalate_below=None, escalate_near_cut=True, relevant_from=3, gold=None, samples=1, aggregate="median",
           temperature=None, output_mode=None, gold_scale=None, grade_probs=False, top_logprobs=10,
           escalate_above_entropy=None, ray=None):
    from labeller.io.columns import column_mapping
    from labeller.labelling import Judging, LabelInputs, LabelOptions
    from labeller.labelling.adaptive import parse_samples
    from labeller.labelling.several import label_any

    samples, adaptive = parse_samples(samples)
    options = LabelOptions(concurrency=concurrency, max_cost=max_cost, dry_run=dry_run, progress=progress,
                           samples=samples, aggregate=aggregate, adaptive=adaptive, grade_probs=grade_probs,
                           top_logprobs=top_logprobs, ray=_ray_options(ray))
    with api_errors(), column_mapping(columns):
        inputs = LabelInputs(queries=readable(queries, "queries"), corpus=readable(corpus, "corpus"),
                             pairs=readable(pairs, "pairs"),
                             run=readable(run, "run"), depth=depth, rubric=rubric,
                             cache=cache, out=Path(out) if out is not None else None,
                             base_url=base_url, options=options, prices=prices, timeout=timeout,
                             temperature=temperature, output_mode=output_mode)
        judging = Judging(judges=judges or [judge], escalate_to=escalate_to, below=escalate_below,
                          near_cut=escalate_near_cut, above=escalate_above_entropy, relevant_from=relevant_from,
                          gold=readable(gold, "gold"), gold_scale=gold_scale)
        try:
            result = label_any(judging, inputs)
        except LabellingFailedError as exc:
            if errors == "raise":
                raise
            result = exc.run  # type: ignore[attr-defined]
        frame = labels_frame(result)
        if hasattr(result, "judge_labels"):  # a jury or escalation
            from labeller.labelling.models import LabelRun

            frame.attrs["judge_labels"] = labels_frame(LabelRun(labels=result.judge_labels))
        return frame


def _ray_options(ray):
    """label(ray=...) as RayOptions: an address string, RayOptions, or None (one process)."""
    from labeller.distributed import RayOptions

    if ray is None or isinstance(ray, RayOptions):
        return ray
    if isinstance(ray, str):
        return RayOptions(address=ray)
    raise ValueError(f"ray={ray!r}; expected 'local', 'HOST:PORT' or a RayOptions")


def labels_frame(result):
    """A LabelRun's labels as a typed DataFrame; failures and stats in `.attrs`."""
    import pandas as pd

    from labeller.io.parquet_rows import typed_frame
    from labeller.records import OPTIONAL_COLUMNS, Label

    rows = [label.model_dump() for label in result.labels]
    columns = [c for c in Label.model_fields if c not in OPTIONAL_COLUMNS or any(c in row for row in rows)]
    frame = pd.DataFrame(rows, columns=columns)
    frame = typed_frame(frame) if len(frame) else frame
    frame.attrs["failures"] = pd.DataFrame([f.model_dump() for f in result.failures])
    frame.attrs["stats"] = result.stats.model_dump()
    return frame
