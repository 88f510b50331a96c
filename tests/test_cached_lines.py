"""A cached rerun's rows built by the store (rows.CACHED_ROW, in SQLite's JSON functions), JSONL written by one
orjson call per batch, and a JSONL corpus kept as offsets into its file (io.corpus_index). Each fast part is
checked against the plain computation it replaces: label_row() and json.loads, read_corpus without lean."""

from __future__ import annotations

import json
import math

import pytest

import labeller.store.directory as directory
from labeller.io.inputs import read_corpus, text_and_fields
from labeller.io.jsonl import jsonl
from labeller.io.writing import RowWriter, write_rows
from labeller.labelling.rows import CACHED_ROW, cached_lines, json_bodies, label_row
from labeller.records import Verdict
from labeller.store.base import CachedVerdict
from labeller.store.directory import DirectoryStore
from labeller.store.projection import Projection


def _record(key: str, **changes) -> dict:
    record = CachedVerdict(cache_key=key, query_id="q", doc_id="d", verdict=Verdict(justification="fits", grade=3),
                           judge="fake:scripted", provider="fake", model="scripted", settings={"seed": 1},
                           schema_version="1", rubric="r", rubric_version="v", input_tokens=12, cost_usd=0.1 + 0.2,
                           latency_s=1e-05, created_at="2026-01-01T00:00:00.000+00:00").model_dump(mode="json")
    record.update(changes)
    return record


ODD_TEXT = 'quote " back \\ nl \n tab \t nul \x00 \u2028 caf\u00e9 \U0001f600 },{ "x":1'
PROJECTABLE = {
    "plain": _record("plain"),
    "odd-text": _record("odd-text", verdict={"grade": 5, "justification": ODD_TEXT}, served_model=ODD_TEXT),
    "older": {k: v for k, v in _record("older").items() if k not in ("served_model", "system_fingerprint",
                                                                    "cost_usd", "latency_s")},
    "numbers": _record("numbers", cost_usd=1e-300, latency_s=123456789.125, input_tokens=2 ** 62),
    "extra": _record("extra", unknown={"nested": [1, {"a": None}]}),
}
NOT_PROJECTABLE = {
    "grade-text": json.dumps(_record("grade-text", verdict={"grade": "3", "justification": "x"})),
    "no-verdict": json.dumps({k: v for k, v in _record("no-verdict").items() if k != "verdict"}),
    "bad-json": '{"cache_key": "bad-json", "verdict": {',
    "array": "[1, 2]",
    "grade-float": json.dumps(_record("grade-float", verdict={"grade": 3.0, "justification": "x"})),
}
DAMAGED = {"no-verdict", "bad-json", "array"}


def _fill(store: DirectoryStore) -> None:
    for key, record in PROJECTABLE.items():
        store._db.set("verdict:" + key, json.dumps(record, ensure_ascii=False))
    for key, raw in NOT_PROJECTABLE.items():
        store._db.set("verdict:" + key, raw)
    long = _record("long", verdict={"grade": 2, "justification": "y" * 70_000})  # past min_file_size: in a file
    store._db.set("verdict:long", json.dumps(long))
    store._db.set("verdict:blob", json.dumps(_record("blob")).encode())  # bytes: a blob, not text


@pytest.mark.parametrize("sqlite_json", [True, False])
def test_a_projected_row_is_label_row_of_the_stored_record(tmp_path, monkeypatch, sqlite_json):
    """SQLite's JSON functions build the same values in label_row's order, numbers as stored; a record they
    cannot read (and every record, for an SQLite without them) comes back as stored, for label_row's reading."""
    monkeypatch.setattr(directory, "_HAS_JSON", directory._HAS_JSON and sqlite_json)
    with DirectoryStore(tmp_path / "cache") as store:
        _fill(store)
        keys = [*PROJECTABLE, *NOT_PROJECTABLE, "long", "blob", "missing"]
        projected, stored = store.get_many_projected(keys, CACHED_ROW)
        raw = store.get_many_raw(keys)
        set_aside = {key for key in keys if store._db.get("failure:" + key) is not None}
    # not a verdict's JSON object: set aside as failures, read as missing (store.damaged, issue 25)
    assert set_aside == DAMAGED
    outside = {*NOT_PROJECTABLE, "long", "blob"} - DAMAGED  # not projectable, kept in a file, a blob
    assert set(projected) == (set(PROJECTABLE) if sqlite_json else set())
    assert stored == {key: raw[key] for key in (outside if sqlite_json else set(raw))}
    assert set(raw) == set(keys) - {"missing"} - DAMAGED
    for key, value in projected.items():
        (line,) = cached_lines(["q\u00e9 \"1\""], ["d\n1"], [value])
        expected = label_row("q\u00e9 \"1\"", "d\n1", json.loads(raw[key]), True)
        assert json.loads(line) == expected and list(json.loads(line)) == list(expected), key
        assert b"\n" not in line
    if sqlite_json:
        assert json.loads(cached_lines(["q"], ["d"], [projected["numbers"]])[0])["input_tokens"] == 2 ** 62
        assert b"1e-300" in projected["numbers"] and b"0.30000000000000004" in projected["plain"]  # as stored


def test_a_row_built_in_python_is_the_one_sqlite_builds(tmp_path):
    """Projection.json_of (what the PostgreSQL store keeps with each verdict) gives label_row's values in its
    order for every record SQLite projects, and nothing for every record SQLite leaves out."""
    with DirectoryStore(tmp_path / "cache") as store:
        _fill(store)
        projected, _ = store.get_many_projected([*PROJECTABLE, *NOT_PROJECTABLE], CACHED_ROW)
    for key, record in PROJECTABLE.items():
        built = CACHED_ROW.json_of(json.loads(json.dumps(record)))
        assert json.loads(built) == json.loads(projected[key]) and list(json.loads(built)) == list(json.loads(projected[key]))
        (line,) = cached_lines(["q"], ["d"], [built])
        assert json.loads(line) == label_row("q", "d", record, True) and b"\n" not in line, key
    for key, raw in NOT_PROJECTABLE.items():
        try:
            parsed = json.loads(raw)
        except json.JSONDecodeError:
            continue
        assert CACHED_ROW.json_of(parsed) is None, key
    assert CACHED_ROW.json_of(_record("big", input_tokens=2 ** 70)) is None  # past 64 bits: label_row reads it


def _stored_verdict(key: str, **changes) -> CachedVerdict:
    return CachedVerdict.model_validate(_record(key, **changes))


@pytest.mark.parametrize("sqlite_json", [True, False])
def test_the_directory_store_keeps_each_verdicts_row_in_its_entrys_tag(tmp_path, monkeypatch, sqlite_json):
    """put_many keeps CACHED_ROW's object in the entry's tag; get_many_projected hands it back (with or without
    SQLite's JSON functions). A verdict written over by a labeller that knows no tags (set() with no tag, which
    clears it), and a tag of another definition of the row, are read from the record as it is now."""
    monkeypatch.setattr(directory, "_HAS_JSON", directory._HAS_JSON and sqlite_json)
    written = [_stored_verdict("plain"), _stored_verdict("odd", verdict={"grade": 5, "justification": ODD_TEXT},
                                                          served_model=ODD_TEXT),
               _stored_verdict("long", verdict={"grade": 2, "justification": "y" * 70_000}),  # the record in a file
               _stored_verdict("overwritten"), _stored_verdict("other-definition"), _stored_verdict("big", cached_input_tokens=2 ** 70)]
    with DirectoryStore(tmp_path / "cache") as store:
        store.put_many(written)
        assert store._db.get("verdict:plain", tag=True)[1].startswith(CACHED_ROW.fingerprint + ":")
        newer = _record("overwritten", verdict={"grade": 1, "justification": "graded again"})
        store._db.set("verdict:overwritten", json.dumps(newer))
        store._db.set("verdict:other-definition", written[4].model_dump_json(), tag="0123456789abcdef:{}")
        keys = [r.cache_key for r in written] + ["missing"]
        raw = store.get_many_raw(keys)
        projected, stored = store.get_many_projected(keys, CACHED_ROW)
    from_tags = {"plain", "odd", "long"}
    assert set(projected) == (from_tags | {"overwritten", "other-definition", "big"} if sqlite_json else from_tags)
    assert stored == {k: raw[k] for k in raw if k not in projected}
    for key, row in projected.items():
        (line,) = cached_lines(["q"], ["d"], [row])
        expected = label_row("q", "d", json.loads(raw[key]), True)
        assert json.loads(line) == expected and list(json.loads(line)) == list(expected), key
    if sqlite_json:
        assert json.loads(projected["overwritten"])["justification"] == "graded again"


def test_postgresql_keeps_each_verdicts_row_and_reads_it_back(postgres_url):
    """put_many keeps CACHED_ROW's object beside each record; get_many_projected hands those back, and the
    records of verdicts kept without one (an older labeller's, a row of another definition, one orjson cannot
    read) as stored. A chunk whose joined read does not split (a record with a newline) is read row by row."""
    from labeller.store.postgres import PostgresStore

    written = [_stored_verdict("plain"), _stored_verdict("odd", verdict={"grade": 5, "justification": ODD_TEXT},
                                                          served_model=ODD_TEXT),
               _stored_verdict("numbers", cost_usd=1e-300, latency_s=123456789.125, input_tokens=2 ** 62),
               _stored_verdict("big", cached_input_tokens=2 ** 70)]
    older = {"older": json.dumps(_record("older")), "pretty": json.dumps(_record("pretty"), indent=2),
             "bad-json": NOT_PROJECTABLE["bad-json"]}
    with PostgresStore(postgres_url) as store:
        store.put_many(written)
        store._conn.execute("INSERT INTO labeller_verdicts (cache_key, record, judge, rubric) "
                            "SELECT k, r, 'j', 'r' FROM unnest(%s::text[], %s::text[]) AS t(k, r)",
                            (list(older), list(older.values())))
        store.put_many([_stored_verdict("other-definition")])
        store._conn.execute("UPDATE labeller_verdicts SET label_row_of = 'another' WHERE cache_key = 'other-definition'")
        raw = store.get_many_raw([r.cache_key for r in written] + [*older, "other-definition"])
        assert all(raw[r.cache_key] == r.model_dump_json() for r in written)  # sent as JSON, stored exactly
        for keys in ([*raw, "missing"], ["plain", "odd", "numbers", "big", "other-definition"], ["plain"], ["missing"]):
            projected, stored = store.get_many_projected(keys, CACHED_ROW)
            kept = {"plain", "odd", "numbers"} & set(keys)
            assert set(projected) == kept and stored == {k: raw[k] for k in keys if k in raw and k not in kept}
            for key, row in projected.items():
                (line,) = cached_lines(["q"], ["d"], [row])
                expected = label_row("q", "d", json.loads(raw[key]), True)
                assert json.loads(line) == expected and list(json.loads(line)) == list(expected), key
        other = Projection(fields=(("grade", ("verdict", "grade")),))
        assert store.get_many_projected(["plain", "older"], other) == ({}, {k: raw[k] for k in ("plain", "older")})


def test_a_store_that_cannot_build_rows_hands_back_its_records(tmp_path, postgres_url):
    """VerdictStore's default: every record as stored, for label_row's reading (here PostgreSQL's verdicts
    written without their rows)."""
    from labeller.store.postgres import PostgresStore

    records = {key: json.dumps(record, ensure_ascii=False) for key, record in PROJECTABLE.items()}
    with PostgresStore(postgres_url) as store:
        store._conn.execute("INSERT INTO labeller_verdicts (cache_key, record, judge, rubric) "
                            "SELECT k, r, 'j', 'r' FROM unnest(%s::text[], %s::text[]) AS t(k, r)",
                            (list(records), list(records.values())))
        assert store.get_many_projected([*records, "missing"], CACHED_ROW) == ({}, records)


def test_a_projection_names_only_plain_fields():
    with pytest.raises(ValueError):
        Projection(fields=(("grade", ("verdict", "grade') OR 1=1 --")),))
    with pytest.raises(ValueError):
        Projection(fields=(("grade", "'); DROP TABLE Cache; --"),))


@pytest.mark.parametrize("texts", [["a", 'b","c', "\\", 'x"', "\u00e9\n", ""], [""], ["\ud800"], []])
def test_json_bodies_are_json_dumps_without_quotes(texts):
    expected = [json.dumps(t, ensure_ascii=False)[1:-1] for t in texts]
    try:
        expected = [e.encode("utf-8") for e in expected]
    except UnicodeEncodeError:  # a lone surrogate cannot be written as UTF-8 either way
        with pytest.raises(UnicodeEncodeError):
            json_bodies(texts)
        return
    assert json_bodies(texts) == expected


ROWS = [{"query_id": "q1", "doc_id": "d\u00e9", "grade": 4, "justification": "=HYPERLINK(\"x\")", "cost": 0.5},
        {"query_id": "q2", "justification": "},{ inside }, {", "nested": [{"a": 1}, {"b": 2}], "cost": 1.25},
        {"big": 10 ** 20, "float": 0.1 + 0.2, "tiny": 2e-05, "huge": 1e16, "none": None, "yes": True},
        {1: "an int key", "u": "\u2028 \x00 \U0001f600"}, {}]


def test_jsonl_lines_read_back_as_the_rows(tmp_path):
    """Compact JSON, one row a line, however the rows hold '},{' (in a string, in a list of objects), integers
    past 64 bits or keys that are not strings; a row given as bytes is written as it is."""
    rows = ROWS + [{"nan": float("nan"), "inf": float("-inf")}]
    lines = jsonl([*rows, b'{"already":"encoded"}']).decode("utf-8").split("\n")
    assert lines[-1] == "" and len(lines) == len(rows) + 2
    back = [json.loads(line) for line in lines[:-1]]
    assert back[:-2] == [{str(k): v for k, v in row.items()} for row in ROWS]
    assert back[-2] == {"nan": None, "inf": None}  # JSON has no NaN: null, as pydantic writes it
    assert back[-1] == {"already": "encoded"}
    assert lines[0] == json.dumps(ROWS[0], ensure_ascii=False, separators=(",", ":"))
    assert jsonl([]) == b""
    assert not math.isnan(back[2]["float"])


def test_lines_among_rows_are_decoded_for_csv_and_parquet(tmp_path):
    encoded = jsonl(ROWS[:1])[:-1]
    for name in ("out.csv", "out.parquet", "out.jsonl"):
        with RowWriter(tmp_path / name) as writer:
            writer.write([encoded, ROWS[0]])
            writer.close()
        write_rows(tmp_path / f"whole-{name}", [ROWS[0], ROWS[0]])
        assert (tmp_path / name).read_bytes() == (tmp_path / f"whole-{name}").read_bytes()


CORPUS_LINES = [
    '\ufeff{"doc_id": "d1", "text": "first, after a byte-order mark"}',
    "",
    '{"doc_id": "d2", "text": "fields", "supplier": "Acme", "amount": 1.5, "tags": ["a"], "gone": null}',
    '{"doc_id": 3, "text": "a number as an id"}',
    '{"doc_id": "d4", "text": "line\u2028separator and \u0085 next"}',
    '{"doc_id": "d5", "text": "caf\u00e9 \\ud83d\\ude00 escaped"}',
    '   ',
    '{"doc_id": "d6", "text": "last, no newline"}',
]


@pytest.mark.parametrize("reads_mapped", [1, 4096])
def test_an_indexed_corpus_reads_what_read_corpus_reads(tmp_path, monkeypatch, reads_mapped):
    import labeller.io.corpus_index as corpus_index

    monkeypatch.setattr(corpus_index, "_READS_MAPPED", reads_mapped)  # pages released after every read, or not
    path = tmp_path / "corpus.jsonl"
    path.write_bytes("\n".join(CORPUS_LINES).encode("utf-8"))
    whole, lean = read_corpus(path), read_corpus(path, lean=True)
    assert type(lean).__name__ == "IndexedCorpus"
    assert list(lean) == list(whole) == ["d1", "d2", "3", "d4", "d5", "d6"]
    read = text_and_fields(lean)
    for _ in range(3):
        for key, doc in whole.items():
            assert lean[key] == doc and read(key) == (doc.text, doc.fields)


def test_an_indexed_corpus_renames_columns_as_read_rows_does(tmp_path):
    path = tmp_path / "corpus.jsonl"
    path.write_text('{"_id": "d1", "contents": "renamed"}\n{"_id": "d2", "contents": "too", "title": "t"}\n')
    assert read_corpus(path, lean=True)["d2"] == read_corpus(path)["d2"]
    assert text_and_fields(read_corpus(path, lean=True))("d1") == ("renamed", {})


def test_a_corpus_rewritten_in_place_is_an_error_not_a_wrong_text(tmp_path):
    from labeller.errors import BadInputError

    path = tmp_path / "corpus.jsonl"
    path.write_text('{"doc_id": "d1", "text": "one"}\n{"doc_id": "d2", "text": "two"}\n')
    lean = read_corpus(path, lean=True)
    with open(path, "r+b") as handle:  # the same bytes' length, another document
        handle.write(b'{"doc_id": "d9", "text": "one"}\n')
    with pytest.raises(BadInputError, match="the corpus changed"):
        text_and_fields(lean)("d1")
    assert text_and_fields(lean)("d2") == ("two", {})


def test_an_indexed_corpus_refuses_what_read_corpus_refuses(tmp_path):
    from labeller.errors import BadInputError

    for body, message in (('{"doc_id": "d1", "text": "a"}\n{"doc_id": "d1", "text": "b"}\n', "duplicate doc_id"),
                          ('{"doc_id": "d1", "text": "  "}\n', "text"), ('{"doc_id": "d1"}\n', "text"),
                          ("", "empty"), ('{"doc_id": "d1", "text": "a"}\n{"doc_id": \n', "not valid JSON")):
        path = tmp_path / "corpus.jsonl"
        path.write_text(body)
        with pytest.raises(BadInputError, match=message) as lean:
            read_corpus(path, lean=True)
        with pytest.raises(BadInputError) as whole:
            read_corpus(path)
        assert str(lean.value) == str(whole.value)


def test_a_rerun_from_a_jsonl_corpus_writes_what_the_first_run_wrote(tmp_path):
    """End to end (label_job, the offline judge): a first run, a rerun answered wholly by the store (cached lines,
    the corpus kept as offsets) and a rerun reading the same corpus as
    CSV (texts kept) write the same labels, in the same order, and the reruns pay for nothing."""
    import csv

    from labeller.labelling import LabelInputs, LabelOptions
    from labeller.labelling.job import label_job

    docs = [{"doc_id": f"d{i}", "text": f"invoice {i} <b>caf\u00e9</b> \"{i}\" line\nbreak"} for i in range(30)]
    (tmp_path / "queries.jsonl").write_text("".join(json.dumps({"query_id": f"q{i}", "text": f"invoice {i}"}) + "\n"
                                                    for i in range(4)))
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    with open(tmp_path / "corpus.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=["doc_id", "text"])
        writer.writeheader()
        writer.writerows(docs)
    pairs = [{"query_id": f"q{i % 4}", "doc_id": f"d{(i * 7) % 30}"} for i in range(40)]  # any order
    pairs += pairs[:5]  # and repeated: folded
    (tmp_path / "pairs.jsonl").write_text("".join(json.dumps(p) + "\n" for p in pairs))

    def run(corpus: str, out: str):
        return label_job(LabelInputs(queries=tmp_path / "queries.jsonl", corpus=tmp_path / corpus,
                                     pairs=tmp_path / "pairs.jsonl", cache=tmp_path / "c", out=tmp_path / out,
                                     options=LabelOptions(progress=False)), "offline:lexical")

    first, again, from_csv = run("corpus.jsonl", "a.jsonl"), run("corpus.jsonl", "b.jsonl"), run("corpus.csv", "c.jsonl")
    assert first.stats.new == 40 and again.stats.new == from_csv.stats.new == 0
    rows = {name: [json.loads(line) for line in (tmp_path / name).read_text(encoding="utf-8").splitlines()]
            for name in ("a.jsonl", "b.jsonl", "c.jsonl")}
    assert [(r["query_id"], r["doc_id"]) for r in rows["a.jsonl"]] == list(dict.fromkeys(
        (p["query_id"], p["doc_id"]) for p in pairs))
    strip = [[{k: v for k, v in r.items() if k != "from_cache"} for r in rows[name]] for name in rows]
    assert strip[0] == strip[1] == strip[2]
    assert [list(r) for r in rows["a.jsonl"]] == [list(r) for r in rows["b.jsonl"]]
    assert all(r["from_cache"] for r in rows["b.jsonl"] + rows["c.jsonl"])
