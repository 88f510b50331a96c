"""io.id_index: a large corpus's ids and their numbers in ~27 bytes an id, answering as the dict it replaced
would (checked against one), and a JSONL corpus indexed with it (duplicates found with their lines)."""

from __future__ import annotations

import json
import random

import pytest

from labeller.errors import BadInputError
from labeller.io.id_index import IdIndex, index_of
from labeller.io.inputs import Numbering, read_corpus, read_pairs

ODD_IDS = ["d1", "", "é", "d 1", "\ud800lone", "\u2028", "x" * 300, "1", "D1"]


def test_every_lookup_answers_as_a_dict_would():
    rng = random.Random(7)
    ids = ODD_IDS + [f"doc-{rng.randrange(10**9)}-{i}" for i in range(5000)]
    index, expected = index_of(ids), {key: n for n, key in enumerate(ids)}
    assert list(index) == ids and len(index) == len(ids)
    assert all(index[key] == n and key in index for key, n in expected.items())
    absent = ["d2", "d", "x" * 299, "doc-1-1", "é ", "\ud801"]
    assert not any(key in index for key in absent) and index.get("d2", -1) == -1
    with pytest.raises(KeyError):
        index["d2"]
    asked = ids[::7] + absent
    assert index.numbers(asked).tolist() == [expected.get(key, -1) for key in asked]
    assert [index.names[n] for n in range(len(ids))] == ids


def test_an_id_given_twice_is_reported_with_both_numbers():
    index = IdIndex()
    for key in ["a", "b", "a", "c", "b"]:
        index.append(key)
    assert index.freeze() == [(0, 2), (1, 4)]


def test_an_empty_index():
    index = index_of([])
    assert len(index) == 0 and "a" not in index and index.numbers(["a"]).tolist() == [-1]


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_a_jsonl_corpus_is_indexed_and_its_duplicates_named_by_line(tmp_path):
    rows = [{"doc_id": key, "text": f"text of {key!r}"} for key in ODD_IDS if key.strip()]
    corpus = read_corpus(_jsonl(tmp_path / "c.jsonl", rows), lean=True)
    assert [corpus[row["doc_id"]].text for row in rows] == [row["text"] for row in rows]
    assert list(corpus) == [row["doc_id"] for row in rows]
    numbering = Numbering(corpus)
    assert numbering.numbers(["é", "nope"]).tolist() == [1, -1]
    _jsonl(tmp_path / "c.jsonl", rows + [{"doc_id": "é", "text": "again"}])
    with pytest.raises(BadInputError) as caught:
        read_corpus(tmp_path / "c.jsonl", lean=True)
    assert caught.value.line == len(rows) + 1 and "first on line 2" in str(caught.value)


def test_pairs_read_against_an_indexed_corpus_name_its_ids(tmp_path):
    corpus = read_corpus(_jsonl(tmp_path / "c.jsonl", [{"doc_id": f"d{i}", "text": "t"} for i in range(50)]), lean=True)
    queries = {"q1": None, "q2": None}
    pairs = _jsonl(tmp_path / "p.jsonl", [{"query_id": f"q{i % 2 + 1}", "doc_id": f"d{49 - i}"} for i in range(50)])
    read = read_pairs(pairs, queries, corpus, lean=True)
    assert list(read.doc_ids) == [f"d{49 - i}" for i in range(50)]
    assert list(read.query_ids) == [f"q{i % 2 + 1}" for i in range(50)]
    assert read.doc_ids[3:5] == ["d46", "d45"] and read[4].doc_id == "d45"


def test_a_jsonl_queries_file_read_lean_gives_the_queries_read_whole(tmp_path):
    from labeller.io.inputs import read_queries

    rows = [{"query_id": "q1", "text": "blanch spinach"}, {"query_id": "q2", "text": "pay", "lang": "en"},
            {"query_id": "é", "text": "tab\there \"quoted\""}]
    path = _jsonl(tmp_path / "q.jsonl", rows)
    lean, whole = read_queries(path, lean=True), read_queries(path)
    assert list(lean) == list(whole) and all(lean[key] == whole[key] for key in whole)
    assert "q9" not in lean and Numbering(lean).numbers(["q2", "q9"]).tolist() == [1, -1]
    _jsonl(path, rows + [{"query_id": "q1", "text": "again"}])
    with pytest.raises(BadInputError, match="duplicate query_id 'q1'"):
        read_queries(path, lean=True)
