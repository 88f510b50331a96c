"""`labeller cache import`: the bulk inverse of `cache export`, on both backends (a directory, and a real
PostgreSQL server): every verdict comes back exactly as exported, from JSONL, CSV and Parquet; a bad row is an
error naming file, line and field, with nothing stored; a rerun stores nothing twice."""

from __future__ import annotations

import asyncio
import json

import pytest
from fakejudge import FakeJudge, sample, write_rubric

from labeller.cli import main
from labeller.errors import BadInputError
from labeller.labelling import LabelOptions, label_pairs
from labeller.prices import ModelPrice, PriceTable
from labeller.records import Verdict
from labeller.rubric import load_rubric
from labeller.store import CachedVerdict, open_store
from labeller.store.importing import import_verdicts

PRICES = PriceTable({"fake": {"scripted": ModelPrice(input=2.0, cached_input=0.5, output=8.0)}})
KEY = "ab" * 32


def _odd_records() -> list[CachedVerdict]:
    """What the engine does not write on this path: a verdict with no tokens or price, text a spreadsheet would
    run, a newline, non-ASCII; another task's reply (labeller.tasks); a served model and fingerprint."""
    base = dict(judge="openai:m", provider="openai", model="m", schema_version="1", rubric="r", rubric_version="v1",
                created_at="2026-12-02T10:00:00.120+00:00")
    return [
        CachedVerdict(cache_key="1" * 64, query_id="q", doc_id="=d", verdict=Verdict(grade=2, justification="=SUM(A1)\nzwei Äpfel"),
                      settings={"temperature": 0.0, "response_format": {"type": "json_schema"}}, **base),
        CachedVerdict(cache_key="2" * 64, query_id="q", doc_id="d2", verdict={"verdict": "supported", "justification": "ok",
                      "claims": [{"text": "c", "supported": True}]}, input_tokens=10, output_tokens=0, cost_usd=1e-7,
                      latency_s=0.25, attempts=3, served_model="m-2026", system_fingerprint="fp_1", **base),
    ]


@pytest.fixture
def source(tmp_path):
    """A directory store filled by a real labelling run (8 verdicts), plus the odd records."""
    spec = str(tmp_path / "source")
    queries, corpus, pairs = sample(2)
    with open_store(spec) as store:
        asyncio.run(label_pairs(pairs, queries, corpus, FakeJudge(), load_rubric(write_rubric(tmp_path)), store,
                                LabelOptions(progress=False), prices=PRICES))
        store.put_many(_odd_records())
        return spec, sorted(store.records(), key=lambda r: r.cache_key)


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_an_export_imports_back_exactly(store_spec, source, tmp_path, suffix):
    spec, records = source
    out = tmp_path / f"export{suffix}"
    with open_store(spec) as store:
        assert store.export(out) == 10
    result = import_verdicts(out, store_spec)
    assert (result.read, result.imported, result.already) == (10, 10, 0)
    with open_store(store_spec, create=False) as target:
        assert sorted(target.records(), key=lambda r: r.cache_key) == records
        # and each verdict's cached-rerun row is the one the source keeps
        keys = [r.cache_key for r in records]
        from labeller.store.cached_row import CACHED_ROW
        with open_store(spec) as store:
            assert target.get_many_projected(keys, CACHED_ROW) == store.get_many_projected(keys, CACHED_ROW)
    again = import_verdicts(out, store_spec)  # a rerun stores nothing twice
    assert (again.read, again.imported, again.already) == (10, 0, 10)


def test_verdicts_the_store_holds_and_repeated_rows_are_left_alone(store_spec, tmp_path):
    first, other = _odd_records()
    with open_store(store_spec) as store:
        store.put(first)
    changed = first.model_copy(update={"verdict": Verdict(grade=5, justification="another judge's view")})
    rows = [_row(changed), _row(other), _row(other.model_copy(update={"doc_id": "later"}))]
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    result = import_verdicts(path, store_spec)
    assert (result.read, result.imported, result.already) == (3, 1, 2)
    with open_store(store_spec) as store:
        assert store.get(first.cache_key) == first and store.get(other.cache_key) == other


def _row(record: CachedVerdict) -> dict:
    from labeller.store import export_row

    return export_row(record)


BAD = [  # (what is wrong with row 3, field named, words of the message)
    ({"grade": 7}, "grade", "less than or equal to 5"),
    ({"grade": "four"}, "grade", "'four' is not a number"),
    ({"grade": 3.5}, "grade", "whole number"),
    ({"justification": ""}, "justification", "at least 1 character"),
    ({"cache_key": "k1"}, "cache_key", "64 lowercase hex"),
    ({"judge": None}, "judge", "missing"),
    ({"settings": "{temperature: 0}"}, "settings", "not valid JSON"),
    ({"settings": "[1]"}, "settings", "expected a JSON object"),
    ({"created_at": "yesterday"}, "created_at", "ISO-8601"),
    ({"cost_usd": "cheap"}, "cost_usd", "not a number"),
    ({"reply": '{"verdict": "supported"}'}, "grade", "not both"),
    ({"grader": "me"}, "grader", "unknown column"),
    ({"input_tokens": -5}, "input_tokens", "at least 0"),
    ({"attempts": "2.0"}, "attempts", None),  # CSV's integers with gaps: read as 2
]


@pytest.mark.parametrize("change, field, words", BAD, ids=[b[1] + "-" + str(i) for i, b in enumerate(BAD)])
def test_a_bad_row_names_file_line_and_field_and_nothing_is_stored(store_spec, tmp_path, change, field, words):
    rows = [_row(r) for r in _odd_records()]
    rows.insert(1, {**_row(_odd_records()[0]), "cache_key": "3" * 64, **change})
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    if words is None:
        assert import_verdicts(path, store_spec).imported == 3
        return
    with pytest.raises(BadInputError) as caught:
        import_verdicts(path, store_spec)
    assert (caught.value.path, caught.value.line, caught.value.field) == (str(path), 2, field)
    assert words in str(caught.value)
    with open_store(store_spec) as store:  # rows before and after the bad one: none stored
        assert store.stats().entries == 0


def test_a_bad_csv_cell_is_named_by_its_line(store_spec, source, tmp_path):
    spec, _ = source
    out = tmp_path / "export.csv"
    with open_store(spec) as store:
        store.export(out)
    lines = out.read_text(encoding="utf-8").split("\n")
    header = lines[0].split(",")
    cells = lines[3].split(",")
    cells[header.index("attempts")] = "many"
    lines[3] = ",".join(cells)
    out.write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(BadInputError, match=r"export\.csv:4: field 'attempts': 'many' is not a number"):
        import_verdicts(out, store_spec)


def test_the_command_imports_and_refuses_with_exit_2(source, tmp_path, capsys):
    spec, records = source
    out = tmp_path / "export.jsonl"
    with open_store(spec) as store:
        store.export(out)
    target = tmp_path / "target"
    with pytest.raises(SystemExit) as done:
        main(["cache", "import", str(out), "--cache", str(target)])
    assert done.value.code in (0, None)
    assert "imported 10 verdicts" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text(out.read_text(encoding="utf-8") + '{"cache_key": "x"}\n', encoding="utf-8")
    fresh = tmp_path / "fresh"
    with pytest.raises(SystemExit) as done:
        main(["cache", "import", str(bad), "--cache", str(fresh)])
    assert done.value.code == 2
    assert "bad.jsonl:11: field 'query_id': missing" in capsys.readouterr().err
    assert not fresh.exists()  # refused before a store was created
