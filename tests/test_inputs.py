"""The foundation readers and writers (labeller.io) and rubric loading: records in, precise errors out."""

from __future__ import annotations

import json
import os
import stat

import pandas as pd
import pytest

from labeller.errors import BadInputError, ConfigError
from labeller.io import (format_qrels, read_corpus, read_gold, read_labels, read_pairs, read_queries, read_grades,
                         read_rows, read_run, top_k, write_rows, write_text)
from labeller.io.tomlfile import read_toml
from labeller.io.trec import parse_scale
from labeller.records import Doc, Query, RunEntry
from labeller.rubric import load_rubric

DOCS = [{"doc_id": "d1", "text": "first", "supplier": "ACME"}, {"doc_id": 2, "text": "second", "supplier": "Bolt"}]


def jsonl(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def error(call, *args) -> BadInputError:
    with pytest.raises(BadInputError) as err:
        call(*args)
    return err.value


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_corpus_reads_the_same_from_every_format(tmp_path, suffix):
    path = tmp_path / f"corpus{suffix}"
    if suffix == ".jsonl":
        jsonl(path, DOCS)
    elif suffix == ".csv":
        pd.DataFrame(DOCS).to_csv(path, index=False)
    else:
        pd.DataFrame([{**d, "doc_id": str(d["doc_id"])} for d in DOCS]).to_parquet(path)
    corpus = read_corpus(path)
    assert corpus == {"d1": Doc(doc_id="d1", text="first", fields={"supplier": "ACME"}),
                      "2": Doc(doc_id="2", text="second", fields={"supplier": "Bolt"})}


def test_missing_text_names_file_line_and_field(tmp_path):
    path = jsonl(tmp_path / "q.jsonl", [{"query_id": "a", "text": "x"}, {"query_id": "b"}])
    err = error(read_queries, path)
    assert (err.path, err.line, err.field) == (str(path), 2, "text")
    assert str(err) == f"{path}:2: field 'text': missing; expected a non-empty text"
    jsonl(path, [{"query_id": "a", "text": "  "}])
    assert "empty; expected a non-empty text" in str(error(read_queries, path))


def test_a_duplicate_doc_id_points_at_both_lines(tmp_path):
    path = jsonl(tmp_path / "c.jsonl", [DOCS[0], DOCS[1], {"doc_id": "d1", "text": "again"}])
    err = error(read_corpus, path)
    assert (err.line, err.field) == (3, "doc_id") and "first on line 1" in str(err)


def test_a_pair_naming_an_unknown_document_or_query(tmp_path):
    queries = {"q1": Query(query_id="q1", text="x")}
    corpus = {"d1": Doc(doc_id="d1", text="y")}
    path = jsonl(tmp_path / "p.jsonl", [{"query_id": "q1", "doc_id": "d1"}, {"query_id": "q1", "doc_id": "d9"}])
    err = error(read_pairs, path, queries, corpus)
    assert (err.line, err.field) == (2, "doc_id") and "unknown document 'd9'" in str(err)
    jsonl(path, [{"query_id": "q7", "doc_id": "d1"}])
    assert error(read_pairs, path, queries, corpus).field == "query_id"


def test_duplicate_pairs_are_folded_in_order(tmp_path):
    path = jsonl(tmp_path / "p.jsonl", [{"query_id": "q", "doc_id": d} for d in ("b", "a", "b")])
    assert [p.doc_id for p in read_pairs(path)] == ["b", "a"]


@pytest.mark.parametrize("content", [b"", b"\n  \n"])
def test_an_empty_file(tmp_path, content):
    path = tmp_path / "q.jsonl"
    path.write_bytes(content)
    assert "file is empty" in str(error(read_queries, path))


def test_a_csv_with_a_header_and_no_rows_is_as_empty_as_an_empty_jsonl(tmp_path):
    """A pairs CSV with only its header used to label nothing and exit 0."""
    pairs, queries = tmp_path / "pairs.csv", tmp_path / "queries.csv"
    pairs.write_text("query_id,doc_id\r\n")
    queries.write_text("query_id,text\n")
    for read, path in ((read_pairs, pairs), (read_queries, queries)):
        assert "file has a header but no rows" in str(error(read, path))


def test_a_line_that_is_not_utf8(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_bytes(b'{"doc_id": "a", "text": "ok"}\n{"doc_id": "b", "text": "caf\xe9"}\n')
    err = error(read_corpus, path)
    assert err.line == 2 and "not valid UTF-8 (byte 0xe9)" in str(err)


def test_lines_that_are_not_json_objects(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('{"doc_id": "a", "text": "ok"}\n{"doc_id": \n')
    assert error(read_corpus, path).line == 2
    path.write_text('["doc_id", "a"]\n')
    assert "expected a JSON object, got list" in str(error(read_corpus, path))


def test_unicode_line_separators_inside_json_strings_survive(tmp_path):
    text = "line\u2028separator, next\x85line, para\u2029graph, \u202eRTL and an emoji \U0001f600"
    path = write_rows(tmp_path / "c.jsonl", [{"doc_id": "u", "text": text}, {"doc_id": "v", "text": "plain"}])
    corpus = read_corpus(path)
    assert corpus["u"].text == text and list(corpus) == ["u", "v"]


def test_csv_rows_with_more_values_than_the_header(tmp_path):
    path = tmp_path / "c.csv"
    path.write_text("doc_id,text\nd1,hello\nd2,hello,extra\n")
    assert error(read_corpus, path).line == 3


def test_unknown_extension_and_missing_file(tmp_path):
    (tmp_path / "c.txt").write_text("doc_id text\n")
    assert "expected .jsonl, .csv or .parquet" in str(error(read_corpus, tmp_path / "c.txt"))
    assert "file not found" in str(error(read_corpus, tmp_path / "absent.jsonl"))


def test_parquet_list_and_missing_cells_become_plain_values(tmp_path):
    path = tmp_path / "c.parquet"
    pd.DataFrame({"doc_id": ["a", "b"], "text": ["x", "y"], "tags": [["t1", "t2"], []],
                  "amount": [1.5, None]}).to_parquet(path)
    rows = dict(read_rows(path))
    assert rows[1]["tags"] == ["t1", "t2"] and rows[2]["tags"] == []
    assert rows[1]["amount"] == 1.5 and rows[2]["amount"] is None
    assert read_corpus(path)["b"].fields == {"tags": []}


def test_write_rows_is_atomic_and_readable_by_others(tmp_path):
    path = write_rows(tmp_path / "out.jsonl", [{"a": 1}])

    def broken():
        yield {"a": 2}
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        write_rows(path, broken())
    assert path.read_text() == '{"a":1}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["out.jsonl"]  # no temporary file left behind
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask
    assert stat.S_IMODE(write_text(tmp_path / "r.html", "x").stat().st_mode) == 0o666 & ~umask


def test_trec_and_table_runs(tmp_path):
    trec = tmp_path / "run.txt"
    trec.write_text("q1 Q0 d1 1 2.5 bm25\nq1 Q0 d2 2 1.5 bm25\nq2 Q0 d1 1 9 bm25\n")
    assert read_run(trec)[0] == RunEntry(query_id="q1", doc_id="d1", score=2.5, rank=1)
    table = jsonl(tmp_path / "run.jsonl", [{"query_id": "q1", "doc_id": "d1", "score": 2.5},
                                           {"query_id": "q1", "doc_id": "d2", "score": 1.5}])
    assert [(e.doc_id, e.score, e.rank) for e in read_run(table)] == [("d1", 2.5, None), ("d2", 1.5, None)]
    trec.write_text("q1 Q0 d1 1 2.5\n")
    assert "expected 6 columns" in str(error(read_run, trec))
    trec.write_text("q1 Q0 d1 1 high bm25\n")
    assert error(read_run, trec).field == "score"
    trec.write_text("q1 Q0 d1 1 2 t\nq1 Q0 d1 2 1 t\n")
    assert error(read_run, trec).line == 2


def test_a_malformed_rank_or_a_missing_score_is_one_clear_error(tmp_path):
    trec = tmp_path / "run.txt"
    trec.write_text("q1 Q0 d1 1 2.5 bm25\nq1 Q0 d2 first 1.5 bm25\n")
    err = error(read_run, trec)
    assert (err.line, err.field) == (2, "rank") and "not a whole number" in str(err)
    for rank in ("first", 1.5, True):
        table = jsonl(tmp_path / "run.jsonl", [{"query_id": "q1", "doc_id": "d1", "score": 2.5, "rank": rank}])
        assert (error(read_run, table).line, error(read_run, table).field) == (1, "rank")
    table = jsonl(tmp_path / "run.jsonl", [{"query_id": "q1", "doc_id": "d1", "score": 2.5, "rank": 2.0}])
    assert read_run(table)[0].rank == 2
    table = jsonl(tmp_path / "run.jsonl", [{"query_id": "q1", "doc_id": "d1", "rank": 1}])
    err = error(read_run, table)
    assert err.field == "score" and "missing; expected a number" in str(err)


def test_trec_files_from_windows_read_like_any_other(tmp_path):
    """A byte-order mark must not become part of the first query id; CRLF endings and tabs are whitespace."""
    run, qrels = tmp_path / "run.trec", tmp_path / "qrels.txt"
    run.write_bytes("q1\tQ0\td1\t1\t2.5\tbm25\r\nq1 Q0 d2 2 1.5 bm25\r\n".encode("utf-8-sig"))
    assert [(e.query_id, e.doc_id, e.rank) for e in read_run(run)] == [("q1", "d1", 1), ("q1", "d2", 2)]
    qrels.write_bytes("q1 0 d1 3\r\nq1\t0\td2\t0\r\n".encode("utf-8-sig"))
    assert [(g.query_id, g.doc_id, g.grade) for g in read_grades(qrels).rows] == [("q1", "d1", 4), ("q1", "d2", 1)]


def test_top_k_ranks_by_score_with_trec_eval_ties():
    entries = [RunEntry(query_id="q", doc_id=d, score=s) for d, s in (("a", 1.0), ("b", 3.0), ("c", 3.0), ("d", 2.0))]
    assert [e.doc_id for e in top_k(entries, 3)] == ["c", "b", "d"]  # ties: doc id descending


def test_qrels_map_the_given_scale_onto_one_to_five(tmp_path):
    path = tmp_path / "qrels.txt"
    path.write_text("q1 0 d1 0\nq1 0 d2 3\nq2 0 d1 2\n")
    gold = read_grades(path, from_scale="0-3").rows
    assert [(g.query_id, g.doc_id, g.grade) for g in gold] == [("q1", "d1", 1), ("q1", "d2", 4), ("q2", "d1", 3)]
    assert read_grades(path).rows == gold  # qrels default to TREC's 0-3 scale
    assert format_qrels({(g.query_id, g.doc_id): g.grade for g in gold}, "0-3") == path.read_text()
    path.write_text("q1 0 d1 4\n")
    assert "outside the scale 0-3" in str(error(lambda p, s: read_grades(p, from_scale=s), path, "0-3"))
    path.write_text("q1 0 d1 1\nq1 0 d1 2\n")
    assert error(lambda p, s: read_grades(p, from_scale=s, several_per_pair=False), path, "0-3").line == 2
    for bad in ("0-9", "3-1", "high"):
        with pytest.raises(BadInputError):
            parse_scale(bad)


def test_gold_and_label_files_validate_every_field(tmp_path):
    path = jsonl(tmp_path / "gold.jsonl", [{"query_id": 1, "doc_id": "d", "grade": 3},
                                           {"query_id": "q", "doc_id": "d", "grade": 7}])
    err = error(read_gold, path)
    assert (err.line, err.field) == (2, "grade")
    jsonl(path, [{"query_id": 1, "doc_id": "d", "grade": 3, "annotator": "ann"}])
    assert read_gold(path)[0].query_id == "1"
    jsonl(path, [{"query_id": "q", "doc_id": "d", "grade": 3}])
    assert error(read_labels, path).field in {"justification", "judge", "provider", "model", "rubric",
                                               "rubric_version", "cache_key", "created_at"}


def test_a_missing_or_unknown_field_is_named_without_quoting_the_whole_row(tmp_path):
    row = {"query_id": "q", "doc_id": "d", "grade": 3, "justification": "a long justification " * 20}
    path = jsonl(tmp_path / "labels.jsonl", [row])
    err = error(read_labels, path)
    assert (err.line, err.field) == (1, "judge") and "missing; expected a Label row with" in str(err)
    assert "a long justification" not in str(err)
    full = {**row, "judge": "offline:lexical", "provider": "offline", "model": "lexical", "rubric": "general",
            "rubric_version": "abc", "cache_key": "k", "created_at": "2026-01-01T00:00:00+00:00"}
    jsonl(path, [full, {k: v for k, v in {**full, "doc_id": "d2"}.items() if k != "judge"}])
    err = error(read_grades, path)  # as `labeller agree` and `labeller evaluate` read labels
    assert (err.line, err.field) == (2, "judge") and "missing; expected a label row" in str(err)
    assert "a long justification" not in str(err)
    jsonl(path, [{"query_id": "q", "doc_id": "d", "grade": 3, "score": 0.5}])
    err = error(read_gold, path)
    assert err.field == "score" and "unknown field; expected a GoldLabel row with query_id, doc_id" in str(err)


RUBRIC = """+++
name = "tx"
query_fields = ["text", "supplier"]
doc_fields = ["text", "supplier", "category"]
+++
# Grades
5 means the same kind of expense.
"""


def test_a_rubric_shows_the_fields_it_names_and_is_versioned_by_content(tmp_path):
    path = tmp_path / "tx.md"
    path.write_text(RUBRIC)
    rubric = load_rubric(path)
    prompt = rubric.render(Query(query_id="q", text="Taxi", fields={"supplier": "Uber", "secret": "x"}),
                           Doc(doc_id="d", text="Ride", fields={"supplier": "Bolt", "category": "Travel"}))
    assert "supplier: Uber" in prompt.user and "category: Travel" in prompt.user and "secret" not in prompt.user
    assert "5 means the same kind of expense." in prompt.system
    path.write_text(RUBRIC.replace("same kind", "same sort"))
    assert load_rubric(path).version != rubric.version


@pytest.mark.parametrize("text, match", [
    ("+++\nname = 'x'\n", "never closed"),
    ("+++\nname = \n+++\nbody", "bad TOML header"),
    ("+++\ncolour = 'red'\n+++\nbody", "colour"),
    ("+++\nversion = 'mine'\n+++\nbody", "field 'version'"),
    ("+++\n[[examples]]\nquery = 'q'\ndocument = 'd'\ngrade = 9\njustification = 'j'\n+++\nbody", "examples.0.grade"),
])
def test_rubric_header_errors_are_config_errors(tmp_path, text, match):
    path = tmp_path / "bad.md"
    path.write_text(text)
    with pytest.raises(ConfigError, match=match):
        load_rubric(path)


def test_toml_errors_name_the_line_of_the_file(tmp_path):
    path = tmp_path / "bad.md"
    path.write_text('+++\nname = "x"\n\ncolour = \n+++\nbody\n')  # the value is missing on line 4
    with pytest.raises(ConfigError) as err:
        load_rubric(path)
    assert err.value.line == 4 and str(err.value).startswith(f"{path}:4: bad TOML header")
    path.write_text('+++\nname = "x\n+++\nbody\n')  # an unterminated string on line 2
    with pytest.raises(ConfigError) as err:
        load_rubric(path)
    assert err.value.line == 2
    config = tmp_path / "c.toml"
    config.write_text('a = 1\n[section\nb = 2\n')
    with pytest.raises(BadInputError) as err:
        read_toml(config)
    assert err.value.line == 2 and "(at line" not in str(err.value)


def test_an_unknown_rubric_name_lists_the_shipped_ones():
    with pytest.raises(ConfigError, match="rubric 'no-such-rubric' not found; expected a file path or one of"):
        load_rubric("no-such-rubric")
