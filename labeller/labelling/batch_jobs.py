"""`labeller batch ...`: see and stop provider batches in flight; export and import OpenAI batch files.

list/status/cancel read the batch records the store holds (labeller.labelling.batched writes
them) and ask the provider about one. export/import take the same inputs as `labeller label`
and compute the same cache keys, so the custom_id of every line is the pair's cache key: an
output file imported into the store is read by the next `labeller label` with no request.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from labeller.batch import BatchStatus, batch_client
from labeller.batch.base import Outcome
from labeller.batch.files import output_outcome
from labeller.errors import BadInputError, ConfigError, JudgeError
from labeller.io.inputs import read_corpus, read_queries
from labeller.io.tables import read_rows, table_format
from labeller.io.writing import write_rows
from labeller.judges.base import TransientError
from labeller.judges.registry import make_judge
from labeller.labelling.batch_results import relevance_run
from labeller.labelling.batched import WRITE_CHUNK, BatchRun
from labeller.labelling.job import load_pairs
from labeller.labelling.models import LabelInputs, LabelOptions
from labeller.prices import load_prices
from labeller.rubric import load_rubric
from labeller.store import open_store
from labeller.store.base import BatchRecord, NoStoreError, chunks


class ImportResult(BaseModel):
    model_config = ConfigDict(extra="forbid")
    lines: int
    imported: int  # verdicts written to the store
    already_stored: int  # keys that had a verdict already: never overwritten
    failures: int  # lines with an error or a reply that is not a valid verdict (recorded as failures)


def list_batches(cache: str | None) -> list[BatchRecord]:
    """The batches in flight that the store knows, oldest first."""
    with open_store(cache, create=False) as store:
        return store.open_batches()


def _find(cache: str | None, batch_id: str) -> BatchRecord:
    with open_store(cache, create=False) as store:
        for provider in ("openai", "anthropic"):
            if (record := store.get_batch(provider, batch_id)) is not None:
                return record
    raise BadInputError(f"the store holds no batch '{batch_id}'; `labeller batch list` shows the batches in flight")


def _ask(cache: str | None, batch_id: str, base_url: str | None, cancel: bool) -> BatchStatus:
    record = _find(cache, batch_id)
    judge = make_judge(record.meta.get("judge") or f"{record.provider}:unknown", base_url=base_url)
    client = batch_client(judge)

    async def ask() -> BatchStatus:
        try:
            return await (client.cancel(batch_id) if cancel else client.status(batch_id))
        except TransientError as exc:  # unreachable, timed out, 5xx: one line, not a traceback (no retry: a look)
            raise JudgeError(f"batch {batch_id}: {exc}; try again, or give the --base-url it was sent to") from None
        finally:
            await judge.aclose()

    return asyncio.run(ask())


def batch_status(cache: str | None, batch_id: str, base_url: str | None = None) -> BatchStatus:
    return _ask(cache, batch_id, base_url, cancel=False)


def cancel_batch(cache: str | None, batch_id: str, base_url: str | None = None) -> BatchStatus:
    """Ask the provider to stop a batch. Its results (cancelled requests become failures) are read by
    the run polling it, or by the next run of the same command."""
    return _ask(cache, batch_id, base_url, cancel=True)


def _plan(inputs: LabelInputs, judge_spec: str, store) -> tuple[BatchRun, set[str]]:
    """Inputs read and checked as `labeller label` does; the keys the store lacks. Sends nothing."""
    rubric_obj = load_rubric(inputs.rubric)
    prices = load_prices(inputs.prices)
    judge = make_judge(judge_spec, base_url=inputs.base_url, api_key="batch-files-send-nothing")
    if judge.provider != "openai":
        raise ConfigError(f"batch files are in the OpenAI batch format (vLLM run-batch reads and writes it); "
                          f"use an openai:<model> judge, not {judge.name}", field="judge")
    queries, corpus = read_queries(inputs.queries), read_corpus(inputs.corpus)
    pairs, skipped = load_pairs(queries=queries, corpus=corpus, pairs_path=inputs.pairs, run_path=inputs.run,
                                depth=inputs.depth)
    if skipped:  # `label --run` skips these with a warning; a batch file has nowhere to say it, so it stops
        raise BadInputError(f"{skipped[0]}; a batch file is written for the inputs' own ids: give a run or pairs "
                            "over them", field="run")
    run = relevance_run(pairs, queries, corpus, judge, rubric_obj, store, LabelOptions(batch=True), prices)
    run.served = asyncio.run(_served_identity(judge))  # a local server's /v1/models entry, as `label` asks it
    return run, run.plan()


async def _served_identity(judge: Any) -> str | None:
    """What `labeller label` puts in the keys for this judge (a GET /v1/models, not a paid request)."""
    try:
        return await judge.served_identity()
    finally:
        await judge.aclose()


def _check_output(out: str | Path, inputs: list[Any]) -> None:
    if table_format(out) != "jsonl":
        raise BadInputError("a batch file is JSONL; expected a .jsonl name", path=str(out))
    target = Path(out).resolve()
    if any(isinstance(p, (str, Path)) and Path(p).resolve() == target for p in inputs):  # (not one in memory)
        raise BadInputError("the output would overwrite an input file; choose another --out", path=str(out))


def export_batch(inputs: LabelInputs, judge_spec: str, out: str | Path) -> int:
    """Write the OpenAI batch input lines for the pairs not in the store (inputs.cache). Returns the line count."""
    _check_output(out, [inputs.queries, inputs.corpus, inputs.pairs, inputs.run])
    with tempfile.TemporaryDirectory() as empty:
        try:
            store = open_store(inputs.cache, create=False)
        except NoStoreError:  # no store yet: every pair is missing, and exporting creates none
            store = open_store(empty)
        with store:
            run, pending = _plan(inputs, judge_spec, store)
            keys = sorted(pending, key=lambda k: run.by_key[k][0])
            write_rows(out, (run.client.entry(key, run.prompt(key)) for key in keys))
    return len(keys)


def import_batch(inputs: LabelInputs, judge_spec: str, results: str | Path) -> ImportResult:
    """Read an OpenAI batch output file (vLLM run-batch writes the same) into the store.

    Every line is checked before the store is opened: a custom_id that is no pair of these inputs
    (a file from another judge, base URL, rubric or slice) is an error naming the line, and
    nothing is written.
    """
    with tempfile.TemporaryDirectory() as empty, open_store(empty) as scratch:
        run, _ = _plan(inputs, judge_spec, scratch)
        outcomes: list[Outcome] = []
        first_line: dict[str, int] = {}
        for line, row in read_rows(results):
            custom_id = row.get("custom_id")
            if not isinstance(custom_id, str) or custom_id not in run.by_key:
                raise BadInputError(f"custom_id {str(custom_id)[:80]!r} is no pair of these inputs; expected a "
                                    "file written for them by `labeller batch export` with the same --judge, "
                                    "--base-url and --rubric", path=str(results), line=line, field="custom_id")
            if custom_id in first_line:  # two results for one request: which one is the verdict is not ours to guess
                raise BadInputError(f"custom_id {custom_id[:16]}... is also on line {first_line[custom_id]}; expected "
                                    "one result per request (files concatenated twice, or two runs' outputs?)",
                                    path=str(results), line=line, field="custom_id")
            first_line[custom_id] = line
            outcomes.append(output_outcome(row, run.judge, service="the batch"))
    keys = sorted({o.custom_id for o in outcomes}, key=lambda k: run.by_key[k][0])
    record = BatchRecord(provider=run.judge.provider, batch_id=f"import:{Path(results).name}", keys=keys,
                         meta=run.meta(keys), created_at="")
    with open_store(inputs.cache) as store:
        run.store = store
        stored: set[str] = set()
        for group in chunks(keys):
            stored.update(store.get_many(group))
        verdicts = []
        failures = 0
        for outcome in outcomes:
            if outcome.custom_id in stored:
                continue
            if outcome.reply is not None:
                verdicts.append(run.verdict(record, outcome))
            else:
                run.failed(record, outcome)
                failures += 1
            stored.add(outcome.custom_id)
        for start in range(0, len(verdicts), WRITE_CHUNK):
            run.save(verdicts[start:start + WRITE_CHUNK])
    return ImportResult(lines=len(outcomes), imported=len(verdicts),
                        already_stored=len(outcomes) - len(verdicts) - failures, failures=failures)
