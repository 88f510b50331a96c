"""label_job: the whole `labeller label` run, from file paths to written output."""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from labeller.errors import BadInputError, BudgetExceededError, JudgeError, LabellingFailedError
from labeller.io.inputs import read_corpus, read_pairs, read_queries
from labeller.io.outputs import check_outputs, existing_files, refuse_inputs
from labeller.io.tables import table_format
from labeller.io.trec import read_known_run
from labeller.io.writing import RowWriter
from labeller.judges.base import Judge
from labeller.judges.registry import make_judge
from labeller.labelling.engine import label_pairs
from labeller.labelling.faults import run_labelling, verdicts_kept
from labeller.labelling.models import LabelInputs, LabelOptions, LabelRun
from labeller.labelling.samples import check_sampling
from labeller.prices import PriceTable, load_prices
from labeller.records import Doc, Pair, Query
from labeller.rubric import Rubric, load_rubric
from labeller.store import default_spec, is_url, open_store
from labeller.store.base import NoStoreError

def failures_path_for(out_path: str | Path) -> Path:
    """labels.jsonl → labels.failures.jsonl, beside the labels."""
    out = Path(out_path)
    return out.with_name(f"{out.stem}.failures.jsonl")


class LoadedPairs(NamedTuple):
    pairs: Sequence[Pair]
    warnings: list[str]  # what was skipped: a run's queries or documents the inputs do not hold


def load_pairs(*, queries: Mapping[str, Query], corpus: Mapping[str, Doc], pairs_path: str | Path | None,
               run_path: str | Path | None, depth: int | None) -> LoadedPairs:
    """The pairs to label: a pairs file, or the top `depth` of each query in a run. A run's entries whose
    query or document the inputs do not hold (an official TREC run over more topics) are skipped and
    counted; only a run of which nothing matches is refused."""
    if (pairs_path is None) == (run_path is None):
        raise BadInputError("give exactly one of --pairs or --run (with --depth)")
    if pairs_path is not None:
        if depth is not None:
            raise BadInputError("--depth applies to --run, not to --pairs")
        return LoadedPairs(read_pairs(pairs_path, queries, corpus, lean=True), [])
    if depth is None or depth < 1:
        raise BadInputError("--run needs --depth K (K >= 1): how many top documents per query to label")
    run = read_known_run(run_path, queries, corpus, depth)
    pairs = [Pair(query_id=e.query_id, doc_id=e.doc_id) for e in run.known]
    return LoadedPairs(pairs, [run.warning] if run.warning else [])


def label_job(inputs: LabelInputs, judge_spec: str, keep_labels: bool = True) -> LabelRun:
    """Load and check every input, label, write labels (and failures) atomically.

    Nothing is sent until every input has been read and validated. Raises after writing:
    JudgeError if a fatal judge error stopped the run, BudgetExceededError if --max-cost did,
    LabellingFailedError if some pairs failed. The LabelRun is on the exception as `.run`.
    keep_labels=False (the command line) writes the labels as each chunk of pairs is settled and
    returns none of them: memory stays flat however many pairs there are.
    """
    options, out_path, rubric = inputs.options, inputs.out, inputs.rubric
    cache_spec = inputs.cache if inputs.cache is not None else default_spec()
    if out_path is None and not keep_labels:
        raise ValueError("label_job: with no output file (inputs.out is None) the labels must be kept")
    if out_path is not None:
        table_format(out_path)  # a bad output extension fails before anything is read or sent
    _check_outputs(out_path, cache_spec, options.dry_run,
                   [inputs.queries, inputs.corpus, inputs.pairs, inputs.run, rubric, inputs.prices])
    rubric_obj: Rubric = load_rubric(rubric)
    prices: PriceTable = load_prices(inputs.prices)
    # A dry run sends nothing, so it needs no API key: a placeholder lets the client be built.
    judge: Judge = make_judge(judge_spec, base_url=inputs.base_url, timeout=inputs.timeout,
                              temperature=inputs.temperature or 0.0, output_mode=inputs.output_mode,
                              api_key="dry-run-sends-nothing" if options.dry_run else None)
    check_sampling(judge, options.samples, options.aggregate, inputs.temperature)
    _refuse_batch(options)
    queries = read_queries(inputs.queries, lean=True)  # each Query built when asked (a slice may have a million)
    corpus = read_corpus(inputs.corpus, lean=True)  # a large slice's corpus: where each row is, a Doc built per pair
    pairs, skipped = load_pairs(queries=queries, corpus=corpus, pairs_path=inputs.pairs, run_path=inputs.run,
                                depth=inputs.depth)
    rubric_obj.check_fields(queries.values(), corpus.values(), queries_path=inputs.queries,
                            corpus_path=inputs.corpus)
    judging = run_judge
    if options.ray is not None:  # Ray workers fill the store, then this process writes the labels from it
        from labeller.distributed.ray import RayLabelling

        judging = RayLabelling(options, cache_spec, judge_spec, dict(base_url=inputs.base_url, timeout=inputs.timeout,
                                                                     temperature=inputs.temperature or 0.0,
                                                                     output_mode=inputs.output_mode))

    if options.dry_run:  # nothing is written: the rows of pairs the store answers are not kept either
        run = run_judge(pairs, queries, corpus, judge, rubric_obj, prices, options, cache_spec,
                        sink=None if keep_labels else _dropped)
        run.stats.warnings = [*skipped, *run.stats.warnings]
        return run
    if out_path is None:  # nothing written: the labels and failures are only returned (the Python API, --fill-holes)
        run = judging(pairs, queries, corpus, judge, rubric_obj, prices, options, cache_spec)
        run.stats.warnings = [*skipped, *run.stats.warnings]
        _raise_for(run)
        return run
    with verdicts_kept(cache_spec):  # a write that fails (the disk filled) loses no verdict
        writer = RowWriter(out_path)

    def sink(rows: list[dict]) -> None:
        with verdicts_kept(cache_spec):
            writer.write(rows)

    with writer:  # labels go to a temporary file as chunks settle; moved into place only at the end
        run = judging(pairs, queries, corpus, judge, rubric_obj, prices, options, cache_spec,
                      sink=None if keep_labels else sink, lines=writer.kind == "jsonl")
        sink([label.model_dump() for label in run.labels])  # kept labels, and the --batch path's (it returns them)
        with verdicts_kept(cache_spec):
            run.out_path = str(writer.close())
    run.stats.warnings = [*skipped, *run.stats.warnings]
    with verdicts_kept(cache_spec):
        failures_file = failures_path_for(out_path)
        if run.failures:
            run.failures_path = str(_write_failures(failures_file, run.failures))
        else:
            failures_file.unlink(missing_ok=True)  # an old failures file would describe pairs now labelled
    _raise_for(run)
    return run


def _dropped(rows: list[dict]) -> None:
    """The sink of a dry run from the command line: it writes nothing."""


def _write_failures(path: Path, failures) -> Path:
    """The failures file, a few thousand rows at a time (a run's failures may be on disk: FailureLog)."""
    with RowWriter(path) as writer:
        rows: list[dict] = []
        for failure in failures:
            rows.append(failure.model_dump())
            if len(rows) == 4096:
                writer.write(rows)
                rows = []
        writer.write(rows)
        return writer.close()


def run_judge(pairs: list[Pair], queries: dict[str, Query], corpus: dict[str, Doc], judge: Judge, rubric_obj: Rubric,
              prices: PriceTable, options: LabelOptions, cache_spec: str | Path, sink=None,
              lines: bool = False) -> LabelRun:
    """One judge over loaded, checked pairs through the store (the batch API with options.batch); nothing
    written but verdicts. label_job's core, shared by juries and escalation (labelling/jury.py)."""
    _refuse_batch(options)
    if options.batch:  # the batch path: labeller.labelling.batched (a judge with no batch API fails here)
        from labeller.batch import batch_client

        batch_client(judge)

    async def _label(spec: str | Path, sender: Judge, create: bool = True, sink=None) -> LabelRun:
        from labeller.labelling.batch_results import finish_open_batches, label_pairs_batched

        try:
            with open_store(spec, create=create) as store:
                if options.batch:  # the provider's batch API is the judge's own, not the request sender's
                    return await label_pairs_batched(pairs, queries, corpus, judge, rubric_obj, store, options,
                                                     prices=prices)
                if not options.dry_run:  # pairs in a killed --batch run's batches are collected, not bought again
                    await finish_open_batches(pairs, queries, corpus, judge, rubric_obj, store, options, prices=prices)
                return await label_pairs(pairs, queries, corpus, sender, rubric_obj, store, options, prices=prices,
                                         sink=sink, lines=lines)
        finally:
            await sender.aclose()

    if options.dry_run:
        try:
            return run_labelling(lambda sender: _label(cache_spec, sender, create=False, sink=sink), judge, cache_spec)
        except NoStoreError:  # a dry run creates no store: every pair is new
            with tempfile.TemporaryDirectory() as empty:
                return run_labelling(lambda sender: _label(empty, sender, sink=sink), judge, empty)
    return run_labelling(lambda sender: _label(cache_spec, sender, sink=sink), judge, cache_spec)


def _refuse_batch(options: LabelOptions) -> None:
    """The batch path (labelling.batched) does not sample in rounds: each round would be a batch of its own, a
    day's wait apiece. (--grade-probs goes through batches: the request body asks for log-probabilities.)"""
    if options.batch and options.adaptive:
        raise BadInputError("--samples auto does not take --batch (each round of samples would be a batch of its "
                            "own, up to a day each); give a fixed --samples N with --batch, or run without --batch",
                            field="batch")


def _check_outputs(out_path: str | Path | None, cache_dir: str | Path | None, dry_run: bool, inputs: list) -> None:
    """Before anything is sent: no output is an input, and (unless nothing will be written) all can be written.
    A store URL is checked when it is opened, not as a directory."""
    outputs = {} if out_path is None else {"--out": out_path, "the failures file": failures_path_for(out_path)}
    store = cache_dir if cache_dir is not None else default_spec()
    if dry_run:
        refuse_inputs(outputs, existing_files(inputs))
    else:
        check_outputs(inputs=existing_files(inputs), files=outputs, dirs={"--cache": None if is_url(store) else store})


def _written(run: LabelRun) -> int:
    return run.stats.new + run.stats.cached  # every pair not failed or skipped (the labels may not be kept)


def _raise_for(run: LabelRun) -> None:
    stats = run.stats
    error: Exception | None = None
    # with no output file (inputs.out None) the labels and failures are on the error's run, not on disk
    done = f"{_written(run)} labels {'written' if run.out_path else 'kept'}"
    see = f" (see {run.failures_path})" if run.failures_path else ""
    if stats.stopped_by:
        error = JudgeError(f"{stats.stopped_by}; {done}, {len(run.failures)} pairs not labelled{see}")
    elif stats.budget_stopped:
        maybe = (f" (+ up to ${stats.unconfirmed_cost_usd:.4f} for {stats.unconfirmed_attempts} attempts that may "
                 "have been billed)" if stats.unconfirmed_attempts and stats.unconfirmed_cost_usd else "")
        error = BudgetExceededError(f"--max-cost reached after ${stats.cost_usd or 0:.4f}{maybe}; {done}, "
                                    f"{stats.skipped_by_budget} pairs not sent{see}")
    elif run.failures:
        unit = "pairs" if stats.samples == 1 else "samples (pair x sample)"
        error = LabellingFailedError(f"{len(run.failures)} of {stats.requested} {unit} failed; {done}{see}")
    if error is not None:
        error.run = run  # type: ignore[attr-defined]
        raise error
