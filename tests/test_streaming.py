"""The cached-rerun fast path: chunked planning, the prefix-hashed cache key, batched store reads and
labels written as chunks settle. Each fast part is checked against the plain computation it replaces."""

from __future__ import annotations

import asyncio
import json
import math

import pytest
from fakejudge import FakeJudge, expected_grade, sample, write_rubric

import labeller.labelling.engine as engine
from labeller.cache_key import cache_key, user_keyer
from labeller.errors import BadInputError
from labeller.io.tables import read_rows
from labeller.io.writing import RowWriter, write_rows
from labeller.labelling import LabelOptions, label_pairs
from labeller.labelling.rows import label_row
from labeller.records import Doc, Label, Pair, Query, Verdict
from labeller.retry import RetryPolicy
from labeller.rubric import JudgePrompt, load_rubric
from labeller.store.base import CachedVerdict
from labeller.store.directory import DirectoryStore

FAST = RetryPolicy(initial_wait=0, max_wait=0, max_retry_after=0)
AWKWARD = ["", "plain", 'quote " and \\ backslash', "caf\u00e9 \u6587\u5b57 \U0001f600", "line\u2028sep\u0085next",
           "nul \x00 and \x1f controls", "\x00labeller:user\x00", '"user":"x"}', "</document>\n<query>"]


@pytest.mark.parametrize("settings", [{}, {"temperature": 0.0, "seed": 7, "nested": {"b": [1, "\u00e9"]}}])
def test_the_prefix_hashed_key_is_cache_key_byte_for_byte(settings):
    system = "You grade.\n\u00e9 \"quoted\" \\ and \x00 too"
    fields = dict(provider="openai", model="gpt-4.1-mini", base_url="http://127.0.0.1:9/v1/", settings=settings)
    keyer = user_keyer(**fields, prompt=JudgePrompt(system=system, user=""))
    for user in AWKWARD:
        assert keyer(user) == cache_key(**fields, prompt=JudgePrompt(system=system, user=user)), repr(user)


@pytest.mark.parametrize("system", ["You grade.\n\u00e9 \"quoted\"", "\x00labeller:user\x00"])
def test_a_key_hashed_from_a_shared_head_is_cache_key_byte_for_byte(system):
    """keyer.key(keyer.start(head), rest) is cache_key of head + rest, for every split of awkward text (the
    escapes of JSON, newlines, non-ASCII, the placeholder itself, a system prompt that is the placeholder)."""
    fields = dict(provider="openai", model="gpt-4.1-mini", base_url=None, settings={"seed": 1}, sample=2)
    keyer = user_keyer(**fields, prompt=JudgePrompt(system=system, user=""))
    for head in AWKWARD:
        state = keyer.start(head)
        for rest in AWKWARD + ["<document>\nplain\n</document>\nGrade it.", "\n\n"]:
            assert keyer.key(state, rest) == cache_key(**fields, prompt=JudgePrompt(system=system, user=head + rest))
        assert keyer.key(state, "x") == keyer.key(state, "x")  # the state is copied, never changed


def test_the_prompt_parts_compose_into_render(tmp_path):
    from labeller.io.inputs import Records, text_and_fields

    for rubric in (load_rubric("general"), load_rubric("transactions")):
        query = Query(query_id="q", text="a <b> & c", fields={"supplier": "Acme\nx", "amount": 3})
        docs = [Doc(doc_id="d", text="caf\u00e9 <x>", fields={"supplier": "A", "amount": 1.5, "category": ["x", "y"]}),
                Doc(doc_id="e", text="only </document> text")]
        lean = Records(Doc, "doc_id", {d.doc_id: (d.text, d.fields) if d.fields else d.text for d in docs})
        for doc in docs:
            prompt = rubric.render(query, doc)
            assert rubric.user_text(rubric.query_block(query), rubric.doc_block(doc)) == prompt.user
            assert prompt.system == rubric.system_prompt()
            for text_of in (text_and_fields(lean), text_and_fields({d.doc_id: d for d in docs})):
                assert rubric.user_head(rubric.query_block(query)) + rubric.user_rest(*text_of(doc.doc_id)) == \
                    prompt.user


def _run(pairs, queries, corpus, judge, rubric, cache, sink=None, concurrency=3, lines=False):
    options = LabelOptions(progress=False, retry=FAST, concurrency=concurrency)
    return asyncio.run(label_pairs(pairs, queries, corpus, judge, rubric, cache, options, sink=sink, lines=lines))


def _inputs(n_queries=5, docs=9):
    queries, corpus, pairs = sample(n_queries, docs)
    corpus["twin"] = Doc(doc_id="twin", text=corpus["d0-0"].text)  # renders as d0-0 does: one key for both
    pairs.append(Pair(query_id="q0", doc_id="twin"))  # in the last chunk, its twin in the first
    return queries, corpus, pairs


@pytest.mark.parametrize("lines", [False, True])
@pytest.mark.parametrize("chunk", [1, 4, 7, 45, 46, 20_000])
def test_chunk_boundaries_change_nothing(tmp_path, monkeypatch, chunk, lines):
    """Half the pairs cached beforehand, the rest sent: every pair once, rows in input order, twins paid once,
    and the streamed rows equal the rows of the labels returned without a sink (with lines=True, a pair
    answered from the store comes as its JSONL line, built by SQLite)."""
    assert DirectoryStore.reads_ahead
    _check_chunk_boundaries(tmp_path, monkeypatch, chunk, lambda: DirectoryStore(tmp_path / "cache"), lines)


@pytest.mark.parametrize("lines", [False, True])
@pytest.mark.parametrize("chunk", [1, 7, 20_000])
def test_chunk_boundaries_change_nothing_when_the_store_is_read_ahead(tmp_path, monkeypatch, chunk, postgres_url,
                                                                        lines):
    """PostgreSQL is read one chunk ahead on a thread, while the chunk before is settled and sent; a pair
    answered from it comes as the line of the row kept with its verdict."""
    from labeller.store.postgres import PostgresStore

    assert PostgresStore.reads_ahead
    _check_chunk_boundaries(tmp_path, monkeypatch, chunk, lambda: PostgresStore(postgres_url), lines)


def _check_chunk_boundaries(tmp_path, monkeypatch, chunk, open_cache, lines=False):
    queries, corpus, pairs = _inputs()
    rubric = load_rubric(write_rubric(tmp_path))
    monkeypatch.setattr(engine, "PLAN_CHUNK", chunk)
    with open_cache() as cache:
        _run(pairs[::2], queries, corpus, FakeJudge(), rubric, cache)
        judge, got_rows, sizes = FakeJudge(), [], []
        streamed = _run(pairs, queries, corpus, judge, rubric, cache, lines=lines,
                        sink=lambda got: (got_rows.extend(got), sizes.append(len(got))))
        kept = _run(pairs, queries, corpus, FakeJudge(), rubric, cache)
    rows = [json.loads(row) if isinstance(row, bytes) else row for row in got_rows]
    # a pair answered from the store comes as its line
    assert [isinstance(row, bytes) for row in got_rows] == [lines and row["from_cache"] for row in rows]
    assert streamed.labels == [] and streamed.failures == []
    assert [(r["query_id"], r["doc_id"]) for r in rows] == [(p.query_id, p.doc_id) for p in pairs]
    assert [r["grade"] for r in rows[:-1]] == [expected_grade(p.query_id, p.doc_id) for p in pairs[:-1]]
    assert rows[-1]["grade"] == rows[0]["grade"]  # the twin: d0-0's verdict
    sent = sorted(judge.calls)
    assert len(sent) == len(set(sent)) == len(pairs[1::2]) - (1 if len(pairs) % 2 == 0 else 0)
    assert sum(sizes) == len(pairs) and max(sizes) <= chunk
    assert (streamed.stats.new, streamed.stats.cached) == (len(sent), len(pairs) - len(sent))
    assert [lb.model_dump(exclude={"from_cache"}) for lb in kept.labels] == \
           [{k: v for k, v in r.items() if k != "from_cache"} for r in rows]
    assert all(list(lb.model_dump()) == list(r) for lb, r in zip(kept.labels, rows))  # the same keys, in order
    assert all(lb.from_cache for lb in kept.labels)


def test_a_failed_key_fails_its_twin_in_a_later_chunk_without_a_second_request(tmp_path, monkeypatch):
    queries, corpus, pairs = _inputs(2, 3)
    rubric = load_rubric(write_rubric(tmp_path))
    monkeypatch.setattr(engine, "PLAN_CHUNK", 2)
    judge = FakeJudge(script={"d0-0": ["malformed"] * 20})
    with DirectoryStore(tmp_path / "cache") as cache:
        result = _run(pairs, queries, corpus, judge, rubric, cache, sink=lambda rows: None, concurrency=1)
    assert [(f.doc_id, f.attempts) for f in result.failures] == [("d0-0", 3), ("twin", 3)]
    assert judge.calls.count(("q0", "d0-0")) == 3 and ("q0", "twin") not in judge.calls
    assert result.stats.failed == 2 and result.stats.new == len(pairs) - 2


def _verdict(key: str, justification: str = "fits") -> CachedVerdict:
    return CachedVerdict(cache_key=key, query_id="q", doc_id="d", verdict=Verdict(justification=justification, grade=3),
                         judge="fake:scripted", provider="fake", model="scripted", schema_version="1", rubric="r",
                         rubric_version="v", input_tokens=None, cost_usd=0.25, created_at="2026-01-01T00:00:00.000+00:00")


def test_the_batched_directory_read_matches_one_get_per_key(tmp_path):
    """Inline values, one long enough for diskcache to keep in a file of its own, a missing key, an expired
    entry under a verdict's name, and more keys than one SELECT takes."""
    records = [_verdict(f"k{i}") for i in range(5003)] + [_verdict("long", "x" * 70_000)]
    with DirectoryStore(tmp_path / "cache") as store:
        store.put_many(records)
        store._db.set("verdict:gone", records[0].model_dump_json(), expire=-1)
        keys = [r.cache_key for r in records] + ["missing", "gone"]
        raw = store.get_many_raw(keys)
        assert set(raw) == {r.cache_key for r in records}
        assert all(raw[r.cache_key] == r.model_dump_json() for r in records)
        assert store.get_many(keys)["long"] == records[-1]
        assert all(store.get(k) is None for k in ("missing", "gone"))


def test_stored_values_that_would_break_the_joined_read_are_read_one_by_one(tmp_path):
    """The batched read joins rows with newlines: a value or a key holding a newline (or the separator
    between key and value) is not what labeller writes, but it is read back exactly all the same."""
    with DirectoryStore(tmp_path / "cache") as store:
        odd = {"k1": "two\nlines", "k2": "rs \x1e inside", "k\n3": "key with a newline", "k\x1e4": "key with rs",
               "k5": "", "k6": _verdict("k6").model_dump_json()}
        for key, value in odd.items():
            store._db.set("verdict:" + key, value)
        store._db.set("verdict:k7", b"bytes value")
        for keys in (list(odd), ["k5", "k6"], ["k6", "k7"], ["k1"], ["k\n3", "missing"]):
            assert store.get_many_raw(keys) == {k: store._db.get("verdict:" + k) for k in keys
                                                if store._db.get("verdict:" + k) is not None}


def test_postgres_records_that_would_break_the_joined_read_are_read_one_by_one(postgres_url):
    """PostgreSQL's batched read joins keys and records with newlines too: a record or a key holding one (valid
    JSON may, between its tokens) is read back exactly all the same, and so is every other key of its chunk."""
    from labeller.store.postgres import PostgresStore

    store = PostgresStore(postgres_url)
    try:
        plain = [_verdict(f"k{i}") for i in range(5)]
        store.put_many(plain)
        other = plain[1].model_dump_json()  # a verdict's JSON (one that is not is set aside: store.damaged)
        odd = {"pretty": json.dumps(json.loads(plain[0].model_dump_json()), indent=2), "key\nwith newline": other,
               "": other}  # a key the server would split into no key at all
        for key, record in odd.items():
            store._conn.execute("INSERT INTO labeller_verdicts (cache_key, record, judge, rubric) "
                                "VALUES (%s, %s, 'j', 'r')", (key, record))
        want = {r.cache_key: r.model_dump_json() for r in plain} | odd
        for keys in (list(want), [r.cache_key for r in plain] + ["missing"], ["pretty"], ["missing"], [""]):
            assert store.get_many_raw(keys) == {k: want[k] for k in keys if k in want}
    finally:
        store.close()


def test_a_row_from_a_stored_record_is_the_label_the_model_would_build():
    record = _verdict("k1")
    row = label_row("q9", "d9", json.loads(record.model_dump_json()), True)
    expected = Label(query_id="q9", doc_id="d9", grade=3, justification="fits", judge=record.judge,
                     provider=record.provider, model=record.model, rubric="r", rubric_version="v", cache_key="k1",
                     cost_usd=0.25, created_at=record.created_at, from_cache=True)
    assert row == expected.model_dump() and list(row) == list(expected.model_dump())  # its keys, in its order


ROWS = [{"query_id": "q1", "doc_id": "d\u00e9", "grade": 4, "justification": "=HYPERLINK(\"x\")", "cost": 0.5},
        {"query_id": "q2", "doc_id": "d,2", "grade": 1, "justification": "line\nbreak \u2028", "cost": 1.25}]
ODD_ROWS = [{"query_id": "q3", "doc_id": "d\\3", "grade": 2, "justification": "nul \x00 \x1f tab\t \U0001f600 '\"}, {",
             "cost_usd": 2e-05, "latency_s": 1e16, "none": None, "yes": True, "big": 10**20, "nan": float("nan"),
             "inf": float("-inf"), "list": [1, "\u00e9"], "dict": {"a": {"b": None}}, "": 0.1 + 0.2},
            {"%s": "%(x)s %%", "\u00e9\"": []}]


def test_jsonl_rows_read_back_as_the_rows_row_for_row(tmp_path):
    """Compact JSON (orjson's), one row a line, however many batches; a non-finite float is null (JSON has
    no NaN), as in pydantic's JSON."""
    rows = ROWS + ODD_ROWS + [label_row("q\u00e9", "d\n", json.loads(_verdict("k").model_dump_json()), True)]
    with RowWriter(tmp_path / "out.jsonl") as writer:
        writer.write(rows)
        writer.write(rows * 300)  # more than one batch of encoded rows
        writer.close()
    finite = [{k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in row.items()} for row in rows]
    back = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text(encoding="utf-8").split("\n")[:-1]]
    assert back == finite * 301
    assert all(list(row) == list(original) for row, original in zip(back, rows))


@pytest.mark.parametrize("name", ["out.jsonl", "out.csv", "out.parquet"])
def test_rows_written_in_chunks_are_the_file_write_rows_writes(tmp_path, name):
    write_rows(tmp_path / f"whole-{name}", ROWS * 3)
    with RowWriter(tmp_path / name) as writer:
        for rows in ([ROWS[0]], [], [ROWS[1], ROWS[0]], [ROWS[1]] + ROWS):
            writer.write(rows)
        assert not (tmp_path / name).exists()  # nothing in place until the end
        writer.close()
    if name.endswith(".parquet"):
        assert [r for _, r in read_rows(tmp_path / name)] == [r for _, r in read_rows(tmp_path / f"whole-{name}")]
    else:
        assert (tmp_path / name).read_bytes() == (tmp_path / f"whole-{name}").read_bytes()


def test_a_writer_that_fails_midway_leaves_no_output_and_no_temporary_file(tmp_path):
    (tmp_path / "out.jsonl").write_text("old\n")
    with pytest.raises(RuntimeError):
        with RowWriter(tmp_path / "out.jsonl") as writer:
            writer.write(ROWS)
            raise RuntimeError("killed midway")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]
    assert (tmp_path / "out.jsonl").read_text() == "old\n"


def test_pairs_are_folded_by_document_and_query_in_first_seen_order(tmp_path):
    from labeller.io.inputs import PairList, read_pairs

    rows = [("q1", "d1"), ("q2", "d1"), ("q1", "d1"), ("q3", "d1"), ("q2", "d1"), ("q1", "d2"), ("q1", "d2")]
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps({"query_id": q, "doc_id": d}) + "\n" for q, d in rows), encoding="utf-8")
    expected = [("q1", "d1"), ("q2", "d1"), ("q3", "d1"), ("q1", "d2")]
    lean = read_pairs(path, lean=True)
    assert isinstance(lean, PairList) and [(p.query_id, p.doc_id) for p in lean] == expected
    assert read_pairs(path) == [Pair(query_id=q, doc_id=d) for q, d in expected]
    assert [(p.query_id, p.doc_id) for p in lean[1:3]] == expected[1:3]


def test_jsonl_rows_read_fast_are_json_loads_values(tmp_path):
    """Rows of plain strings go through orjson straight from the bytes; a byte-order mark, blank lines,
    floats, integers past 64 bits, nested values and escaped surrogates are read as json.loads reads them."""
    lines = ['{"query_id": "q1", "text": "caf\\u00e9 \\ud83d\\ude00", "n": 3, "ok": true, "none": null}',
             "", "   ", '{"query_id": "q2", "text": "x", "amount": 1.10, "big": 123456789012345678901234567890}',
             '{"query_id": "q3", "text": "y", "tags": ["a", {"b": 2.5}]}', '{"query_id": "q4", "text": "\\ud800 lone"}',
             '{"query_id": "q5", "text": "dup", "text": "last wins"}']
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + "\n".join(lines).encode("utf-8") + b"\n")
    expected = [(n, json.loads(line)) for n, line in enumerate(lines, start=1) if line.strip()][:4]
    # every table, a corpus too: the line that gives a key twice is refused, after the four rows before it
    for role in (None, "queries", "corpus"):
        rows = read_rows(path, role=role)
        got = [next(rows) for _ in range(4)]
        assert got == expected
        assert [type(v) for v in got[1][1].values()] == [str, str, float, int]
        with pytest.raises(BadInputError, match=r"rows.jsonl:7: field 'text': field 'text' is given twice"):
            next(rows)


# A line passes at once when it holds no more colons than its object has keys (every key is followed by one);
# any other is looked at key by key: a colon in a text, in a key, escaped, a key escaped, spaces before a colon,
# objects inside the row (a BEIR corpus's "metadata").
KEY_LINES = [
    ('{"doc_id": "d1", "text": "no colon at all"}', None),
    ('{"doc_id": "d2", "text": "Note: a colon, and \\": a quoted one"}', None),
    ('{"doc_id": "d3", "a:b": "a colon in a key", "text": "t"}', None),
    ('{"doc_id": "d4", "text" : "a", "text": "b"}', "text"),
    ('{"doc_id":"d5","text"\t:\t"a","text":"b"}', "text"),
    ('{"doc_id": "d6", "te\\u0078t": "a", "text": "b"}', "text"),
    ('{"doc_id": "d7", "text": "x\\u003ay", "text": "b"}', "text"),
    ('{"doc_id": "d8", "doc_id": "d9"}', "doc_id"),
    ('{"doc_id": "d10", "text": "a", "n": 1.5, "n": 2}', "n"),
    ('{"doc_id": "d11", "text": "t", "metadata": {"url": "https://x.org/a", "year": "2020"}}', None),
    ('{"doc_id": "d12", "text": "t", "tags": [{"a": 1}, {"a": 2}], "empty": {}}', None),
    ('{"doc_id": "d13", "text": "t", "metadata": {"url": "a", "url": "b"}}', "url"),
    ('{"doc_id": "d14", "m": {"a": "x"}, "m": {"b": "y"}}', "m"),
]


@pytest.mark.parametrize(("line", "twice"), KEY_LINES)
def test_a_key_given_twice_is_found_however_the_line_is_written(tmp_path, line, twice):
    path = tmp_path / "corpus.jsonl"
    path.write_text('{"doc_id": "d0", "text": "first"}\n' + line + "\n")
    rows = read_rows(path, role="corpus")
    assert next(rows) == (1, {"doc_id": "d0", "text": "first"})
    if twice is None:
        assert next(rows) == (2, json.loads(line))
        return
    where = "an object inside this line" if twice == "url" else "this line's object"  # d13's is in its metadata
    with pytest.raises(BadInputError, match=rf"corpus.jsonl:2: field '{twice}': .* is given twice in {where}"):
        next(rows)


# Corpus lines for the keys hashed from a file's own bytes: lines that end with their text and hold no escape
# (taken from the file), and lines with an escape anywhere, a text before other members, a renamed column or a
# number as a text (read again); raw non-ASCII, the rubric's own escapes (< and >), a byte-order mark, a "text"
# inside another member, CRLF and spaces, no final newline.
KEYED_LINES = [
    '\ufeff{"doc_id": "d1", "text": "first, after a byte-order mark"}',
    '{"doc_id": "d2", "supplier": "Acme", "amount": 1.5, "text": "tags <b> and </document> & more"}',
    '{"doc_id": "d3", "text": "caf\u00e9 \u6587\u5b57 \U0001f600 raw, line\u2028sep"}',
    '{"doc_id": "d4", "text": "an escaped \\"quote\\" and\\nnewline"}',
    '{"doc_id": "d5", "text": "caf\\u00e9 escaped"}',
    '{"doc_id": "d6\\t", "text": "plain text, escaped id"}',
    '{"text": "text first", "doc_id": "d7"}',
    '{"doc_id": 8, "text": 9}',
    '{"doc_id": "d11", "meta": {"text": "inner"}, "text": "outer"}',
    '{"doc_id": "d12", "text": "before a number", "n": 1}',
    '{"doc_id":"d13","text":"compact, CRLF and spaces"  }  \r',
    '{"doc_id": "d14", "text": "outer first", "x": {"text": "inner last"}}',
    '{"doc_id":"d15","text":"last, no newline"}',
]
TAKEN_FROM_THE_FILE = {"d1", "d2", "d3", "d11", "d13", "d15"}


@pytest.mark.parametrize("rubric_name", ["general", "transactions"])
@pytest.mark.parametrize("served", [None, "llama-3-8b.Q4.gguf"])
def test_keys_hashed_from_the_corpus_file_are_cache_key_byte_for_byte(tmp_path, rubric_name, served):
    from labeller.io.inputs import read_corpus
    from labeller.labelling.planning import PairKeys

    path = tmp_path / "corpus.jsonl"
    path.write_bytes("\n".join(KEYED_LINES).encode("utf-8"))
    lean, whole = read_corpus(path, lean=True), read_corpus(path)
    assert {key for key in lean if lean.text_bytes(key) is not None} == TAKEN_FROM_THE_FILE
    rubric = load_rubric(rubric_name)
    queries = {"q": Query(query_id="q", text="a <query> \u00e9", fields={"supplier": "Acme", "amount": 3}),
               "r": Query(query_id="r", text="another")}
    pairs = [(q, d) for d in whole for q in queries]
    samples = [0, 1, 2]
    judge = FakeJudge()
    settings = judge.decoding_settings()
    keys = PairKeys(judge=judge, settings=settings, served=served, rubric=rubric, queries=queries, corpus=lean,
                    query_ids=[q for q, _ in pairs] * 3, doc_ids=[d for _, d in pairs] * 3,
                    sample_of=lambda i: samples[i // len(pairs)])
    assert (keys.text_bytes is not None) == (rubric.doc_fields == ["text"])  # the fast path is the one tested
    got = keys(0, 2 * len(pairs)) + keys(2 * len(pairs), 3 * len(pairs))  # heads kept across calls
    for i, key in enumerate(got):
        qid, did = pairs[i % len(pairs)]
        prompt = rubric.render(queries[qid], whole[did])
        assert key == cache_key(provider=judge.provider, model=judge.model, base_url=judge.base_url,
                                settings=settings, prompt=prompt, sample=samples[i // len(pairs)], served=served)


def test_a_corpus_written_over_after_it_was_indexed_fails_its_keys(tmp_path):
    """Keys read the text where the file held it: a file written over in place is refused; one replaced by
    another file (a new inode) is still the mapped old file, read whole."""
    import os

    from labeller.io.inputs import read_corpus
    from labeller.labelling.planning import PairKeys

    path = tmp_path / "corpus.jsonl"
    path.write_text('{"doc_id": "d1", "text": "one"}\n{"doc_id": "d2", "text": "two"}\n')
    judge = FakeJudge()

    def keys_of(corpus):
        return PairKeys(judge=judge, settings=judge.decoding_settings(), served=None, rubric=load_rubric("general"),
                        queries={"q": Query(query_id="q", text="q")}, corpus=corpus, query_ids=["q", "q"],
                        doc_ids=["d1", "d2"], sample_of=lambda i: 0)

    keys = keys_of(read_corpus(path, lean=True))
    before = keys(0, 2)
    other = tmp_path / "other.jsonl"
    other.write_text('{"doc_id": "d1", "text": "six"}\n{"doc_id": "d2", "text": "ten"}\n')
    os.replace(other, path)
    assert keys(0, 2) == before  # still the old file's texts
    os.utime(path, ns=(10**18, 10**18))  # file times tick coarsely (a few ms): the write below must be later
    keys = keys_of(read_corpus(path, lean=True))
    assert keys(0, 2) != before
    with open(path, "r+b") as handle:  # the same length, another text where the first one was
        handle.write(b'{"doc_id": "d1", "text": "one"}\n')
    with pytest.raises(BadInputError, match="the corpus changed"):
        keys(0, 2)
