"""Flat memory for what a run writes (issue 28): Parquet labels written a row group at a time are the bytes of
the whole-table write, whatever the chunks and row groups; JSONL, CSV and Parquet outputs the same across plan
chunk sizes; failures kept on disk (FailureLog) reported and written as when held; a dry run keeps no rows."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from fakeapi import FakeAPI

import labeller.io.parquet_rows as parquet_rows
import labeller.labelling.engine as engine
import labeller.labelling.failure_log as failure_log
from labeller.errors import BudgetExceededError, LabellingFailedError
from labeller.io.parquet_rows import whole_table
from labeller.io.writing import RowWriter, write_rows
from labeller.labelling import LabelInputs, LabelOptions
from labeller.labelling.failure_log import FailureLog
from labeller.labelling.job import label_job
from labeller.records import LabelFailure
from labeller.retry import RetryPolicy


def _row(i: int) -> dict:
    """Rows whose columns change kind along the file: what a schema taken from the first chunk would get wrong."""
    row = {"query_id": f"q{i % 7}", "doc_id": f"d{i}", "grade": i % 4 + 1, "justification": "x" * (i % 13),
           "cost_usd": None if i < 50 else 0.001 * i,  # null in the first chunks, float after
           "input_tokens": None if i % 3 else i,  # whole numbers with gaps: Int64
           "score": i if i < 90 else i + 0.5,  # int, then float: float64
           "big": i if i < 80 else 2**63 + i,  # past int64: uint64
           "served_model": None,  # never a value: null
           "created_at": f"2026-12-0{1 + i % 3}T10:00:{i % 60:02d}.{i % 1000:03d}Z",
           "from_cache": i % 2 == 0, "flag": None if i < 30 else True,
           "grades": [] if i < 40 else [i % 4 + 1, 2]}
    if i > 120:
        row["extra"] = 1.5  # a column that appears late
    if i == 200:
        del row["justification"]  # and one missing from a row
    return row


ROWS = [_row(i) for i in range(300)]


def _streamed(path: Path, rows: list[dict], chunk: int) -> bytes:
    with RowWriter(path) as writer:
        for lo in range(0, len(rows), chunk):
            writer.write(rows[lo:lo + chunk])
        writer.close()
    return path.read_bytes()


@pytest.mark.parametrize("chunk", [1, 7, 50, 300])
@pytest.mark.parametrize("group", [None, 64, 7])
def test_parquet_written_a_row_group_at_a_time_is_the_whole_table_write(tmp_path, monkeypatch, chunk, group):
    whole = io.BytesIO()
    pq.write_table(whole_table(ROWS), whole, compression="snappy", row_group_size=group)  # pyarrow's own split
    if group is None:
        assert write_rows(tmp_path / "whole.parquet", ROWS).read_bytes() == whole.getvalue()
    else:
        monkeypatch.setattr(parquet_rows, "ROW_GROUP", group)
    got = _streamed(tmp_path / "streamed.parquet", ROWS, chunk)
    assert got == whole.getvalue()
    table = pq.read_table(tmp_path / "streamed.parquet")
    assert table.equals(whole_table(ROWS)) and table.schema.field("cost_usd").type == "double"
    assert pq.ParquetFile(tmp_path / "streamed.parquet").num_row_groups == -(-len(ROWS) // (group or 1 << 20))


def test_a_chunk_the_witnesses_misread_is_written_the_whole_way(tmp_path):
    """A time string of a known length that does not parse, after the witnesses: the schema they give (a
    timestamp) does not take it, and the file is written from every row at once, as write_rows writes it."""
    rows = [dict(_row(i), created_at="2026-12-01T10:00:00Z") for i in range(40)]
    rows[33]["created_at"] = "not-a-time-but-twenty!"[:20]
    expected = write_rows(tmp_path / "whole.parquet", rows).read_bytes()
    assert str(pq.read_table(tmp_path / "whole.parquet").schema.field("created_at").type).endswith("string")
    assert _streamed(tmp_path / "streamed.parquet", rows, 10) == expected


def test_a_parquet_writer_aborted_leaves_nothing(tmp_path):
    with pytest.raises(RuntimeError), RowWriter(tmp_path / "out.parquet") as writer:
        writer.write(ROWS[:10])
        raise RuntimeError("the run stopped")
    assert list(tmp_path.iterdir()) == []


def _inputs(folder: Path, n: int = 40) -> Path:
    folder.mkdir()
    rows = {"queries": [{"query_id": f"q{i}", "text": f"expense question {i}"} for i in range(5)],
            "corpus": [{"doc_id": f"d{i}", "text": f"receipt {i} for office supplies"} for i in range(n)],
            "pairs": [{"query_id": f"q{i % 5}", "doc_id": f"d{i}"} for i in range(n)] + [{"query_id": "q1", "doc_id": "d1"}]}
    for name, these in rows.items():
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in these), encoding="utf-8")
    return folder


def _job(folder: Path, out: Path, cache: Path, judge: str = "offline:lexical", base_url: str | None = None,
         **options):
    try:
        settings = LabelOptions(**{"progress": False, "concurrency": 4, **options},
                                retry=RetryPolicy(initial_wait=0, max_wait=0, max_retry_after=0))
        return label_job(LabelInputs(queries=folder / "queries.jsonl", corpus=folder / "corpus.jsonl",
                                     pairs=folder / "pairs.jsonl", cache=cache, out=out, base_url=base_url,
                                     options=settings), judge, keep_labels=False)
    except (LabellingFailedError, BudgetExceededError) as exc:
        return exc.run


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_outputs_are_the_same_bytes_whatever_the_chunk(tmp_path, monkeypatch, suffix):
    folder = _inputs(tmp_path / "in")
    first = _job(folder, tmp_path / f"first{suffix}", tmp_path / "store")
    assert first.stats.new == 40
    outputs = []
    for chunk, group in ((20_000, None), (3, None), (1, 4), (7, 16)):
        with monkeypatch.context() as small:
            small.setattr(engine, "PLAN_CHUNK", chunk)
            if group:
                small.setattr(parquet_rows, "ROW_GROUP", group)
            run = _job(folder, tmp_path / f"rerun-{chunk}{suffix}", tmp_path / "store")
        assert run.stats.cached == 40 and run.stats.new == 0
        outputs.append((tmp_path / f"rerun-{chunk}{suffix}").read_bytes())
    if suffix == ".parquet":  # smaller row groups: more of them, the same table
        tables = [pq.read_table(io.BytesIO(data)) for data in outputs]
        assert all(table.equals(tables[0]) for table in tables) and len(tables[0]) == 40
        assert [pq.ParquetFile(io.BytesIO(data)).num_row_groups for data in outputs] == [1, 1, 10, 3]
        outputs = outputs[:2]
    assert all(data == outputs[0] for data in outputs)


@pytest.fixture
def api(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-flat-outputs")
    with FakeAPI() as server:
        yield server


def test_failures_kept_on_disk_are_reported_and_written_as_when_held(tmp_path, api, monkeypatch):
    """A run stopped by --max-cost before its first request: every pair is a failure ("not sent"). With two
    kept in memory and the rest on disk, the run's failures and the failures file are those of a run that held
    them all."""
    folder = _inputs(tmp_path / "in")
    held = _job(folder, tmp_path / "held.jsonl", tmp_path / "store-held", "openai:gpt-4.1-mini",
                api.url + "/v1", max_cost=1e-9, concurrency=1)
    monkeypatch.setattr(failure_log, "KEPT", 2)
    monkeypatch.setattr(engine, "PLAN_CHUNK", 3)
    spilled = _job(folder, tmp_path / "spilled.jsonl", tmp_path / "store-spilled", "openai:gpt-4.1-mini",
                   api.url + "/v1", max_cost=1e-9, concurrency=1)
    assert isinstance(spilled.failures, FailureLog) and spilled.failures.spilled == len(spilled.failures) - 2
    n = len(held.failures)
    assert n == 40 and len(spilled.failures) == n and spilled.stats.skipped_by_budget == n
    drop = {"created_at"}
    assert [f.model_dump(exclude=drop) for f in spilled.failures] == [f.model_dump(exclude=drop) for f in held.failures]
    assert [f.doc_id for f in spilled.failures[1:4]] == [f.doc_id for f in held.failures[1:4]]
    assert spilled.failures[-1].doc_id == held.failures[-1].doc_id == "d39"  # the pair given twice is folded
    assert spilled.model_dump()["failures"] == [f.model_dump() for f in spilled.failures]
    written = [json.loads(line) for line in Path(spilled.failures_path).read_text().splitlines()]
    assert written == [f.model_dump() for f in spilled.failures]
    assert [{k: v for k, v in r.items() if k not in drop} for r in written] == \
           [{k: v for k, v in json.loads(line).items() if k not in drop}
            for line in Path(held.failures_path).read_text().splitlines()]


def test_a_failure_log_reads_back_what_was_added():
    log = FailureLog(kept=3)
    added = [LabelFailure(query_id="q", doc_id=f"d{i}", judge="j", rubric="r", rubric_version="1", cache_key="k",
                          reason=f"reason {i} \u2028 é", attempts=i, created_at="t") for i in range(8)]
    for failure in added:
        log.append(failure)
    assert (len(log), log.spilled) == (8, 5) and log == added and list(log) == added and list(log) == added
    assert log[6] == added[6] and log[-1] == added[-1] and log[2:7] == added[2:7] and log + [] == added
    with pytest.raises(IndexError):
        log[8]
    assert FailureLog() == [] and not FailureLog()


@pytest.mark.parametrize("chunk", [20_000, 3])
def test_a_dry_run_counts_as_before_and_keeps_no_rows(tmp_path, monkeypatch, chunk):
    folder = _inputs(tmp_path / "in")
    _job(folder, tmp_path / "half.jsonl", tmp_path / "store", max_cost=None)
    (folder / "pairs.jsonl").write_text("".join(json.dumps({"query_id": f"q{i % 5}", "doc_id": f"d{i}"}) + "\n"
                                                for i in [*range(40), *range(0, 40, 2)]), encoding="utf-8")
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"doc_id": f"d{i}", "text": f"receipt {i} for office "
                                                             f"supplies{' again' * (i % 2)}"}) + "\n" for i in range(40)),
                                         encoding="utf-8")  # odd documents changed: new prompts
    monkeypatch.setattr(engine, "PLAN_CHUNK", chunk)
    dry = _job(folder, tmp_path / "dry.jsonl", tmp_path / "store", dry_run=True)
    assert (dry.stats.requested, dry.stats.cached, dry.stats.new) == (40, 20, 20)  # the repeats folded
    assert dry.labels == [] and dry.failures == [] and not (tmp_path / "dry.jsonl").exists()
