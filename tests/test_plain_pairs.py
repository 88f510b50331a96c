"""A plain JSONL pairs file is read by pyarrow (io.plain_pairs); anything else line by line, as before.
The two must never disagree: every file pyarrow takes gives the values json gives line by line, and every
file it does not take falls back (so its errors keep their line numbers)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from labeller.errors import BadInputError
from labeller.io.inputs import Numbering, read_pairs
from labeller.io.plain_pairs import plain_pairs

KNOWN_QUERIES = {"q1", "q2", "é", "q\u2028", 'q"\\'}
KNOWN_DOCS = {"d1", "d2", "d3", "d 4"}


def _write(tmp_path: Path, content: bytes | str) -> Path:
    path = tmp_path / "pairs.jsonl"
    path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return path


def _by_json(path: Path) -> tuple[list[str], list[str]]:
    rows = [json.loads(line) for line in path.read_text("utf-8-sig").split("\n") if line.strip()]
    return [row["query_id"] for row in rows], [row["doc_id"] for row in rows]


TAKEN = {
    "plain": '{"query_id": "q1", "doc_id": "d1"}\n{"query_id": "q2", "doc_id": "d2"}\n',
    "no final newline": '{"query_id": "q1", "doc_id": "d1"}\n{"query_id": "q1", "doc_id": "d2"}',
    "keys in either order": '{"doc_id": "d1", "query_id": "q1"}\n{"query_id": "q2", "doc_id": "d2"}\n',
    "escapes and non-ASCII": ('{"query_id": "\\u00e9", "doc_id": "d1"}\n{"query_id": "q\\u2028", "doc_id": "d2"}\n'
                              '{"query_id": "q\\"\\\\", "doc_id": "d 4"}\n'),
    "byte-order mark": '\ufeff{"query_id": "q1", "doc_id": "d1"}\n',
    "compact": '{"query_id":"q1","doc_id":"d1"}\n{"query_id":"q2","doc_id":"d3"}\n',
}

LEFT = {
    "blank line": '{"query_id": "q1", "doc_id": "d1"}\n\n{"query_id": "q2", "doc_id": "d2"}\n',
    "two objects on a line, one over two": ('{"query_id": "q1", "doc_id": "d1"} {"query_id": "q2", "doc_id": "d2"}\n'
                                            '{"query_id": "q1",\n"doc_id": "d3"}\n'),
    "another column": '{"query_id": "q1", "doc_id": "d1", "score": 3}\n',
    "a number for an id": '{"query_id": "q1", "doc_id": 7}\n',
    # pyarrow reads ISO dates as timestamps: the ids would come back in another spelling
    "ids that look like dates": '{"query_id": "2020-01-01", "doc_id": "2020-01-02T10:00:00"}\n',
    "a null": '{"query_id": "q1", "doc_id": null}\n',
    "a missing id": '{"query_id": "q1", "doc_id": "d1"}\n{"query_id": "q2"}\n',
    "a blank id": '{"query_id": "q1", "doc_id": "  "}\n',
    "a pair twice": '{"query_id": "q1", "doc_id": "d1"}\n{"query_id": "q2", "doc_id": "d1"}\n'
                    '{"query_id": "q1", "doc_id": "d1"}\n',
    "an unknown document": '{"query_id": "q1", "doc_id": "d1"}\n{"query_id": "q1", "doc_id": "nope"}\n',
    "an unknown query": '{"query_id": "nope", "doc_id": "d1"}\n',
    "bad JSON": '{"query_id": "q1", "doc_id": "d1"\n',
    "not an object": '["q1", "d1"]\n',
    "bad UTF-8": b'{"query_id": "q1", "doc_id": "d\xff"}\n',
    "a lone surrogate": '{"query_id": "q1", "doc_id": "\\ud800"}\n',
    "spaces after the object": '{"query_id": "q1", "doc_id": "d1"}  \n',
    "empty": "",
}


@pytest.mark.parametrize("name", sorted(TAKEN))
def test_a_plain_file_is_read_by_pyarrow_with_the_values_json_gives(tmp_path, name):
    path = _write(tmp_path, TAKEN[name])
    taken = plain_pairs(path, KNOWN_QUERIES.__contains__, KNOWN_DOCS.__contains__)
    assert taken is not None, "this file is plain: the fast path must take it"
    assert taken == _by_json(path)
    pairs = read_pairs(path, dict.fromkeys(KNOWN_QUERIES), dict.fromkeys(KNOWN_DOCS), lean=True)
    assert (list(pairs.query_ids), list(pairs.doc_ids)) == _by_json(path)
    numbered = plain_pairs(path, KNOWN_QUERIES.__contains__, KNOWN_DOCS.__contains__, _numbering())
    assert numbered is not None and tuple(map(list, numbered)) == _by_json(path)


def _numbering(queries=KNOWN_QUERIES, docs=KNOWN_DOCS):
    """The queries' and corpus's numberings a labelling run reads its pairs against (ids as 4-byte numbers)."""
    return Numbering(dict.fromkeys(sorted(queries))), Numbering(dict.fromkeys(sorted(docs)))


@pytest.mark.parametrize("name", sorted(LEFT))
def test_anything_else_is_left_to_the_line_by_line_reading(tmp_path, name):
    path = _write(tmp_path, LEFT[name])
    assert plain_pairs(path, KNOWN_QUERIES.__contains__, KNOWN_DOCS.__contains__) is None


def test_one_string_per_query_id(tmp_path):
    path = _write(tmp_path, "".join(f'{{"query_id": "q{i % 2 + 1}", "doc_id": "d{i + 1}"}}\n' for i in range(3)))
    query_ids, _ = plain_pairs(path, None, None)
    assert query_ids == ["q1", "q2", "q1"] and query_ids[0] is query_ids[2]


def test_what_is_left_keeps_its_error_and_line(tmp_path):
    path = _write(tmp_path, LEFT["an unknown document"])
    with pytest.raises(BadInputError) as caught:
        read_pairs(path, dict.fromkeys(KNOWN_QUERIES), dict.fromkeys(KNOWN_DOCS))
    assert caught.value.line == 2 and "unknown document 'nope'" in str(caught.value)


def test_a_pair_twice_is_still_folded_to_its_first_line(tmp_path):
    path = _write(tmp_path, LEFT["a pair twice"])
    pairs = read_pairs(path, dict.fromkeys(KNOWN_QUERIES), dict.fromkeys(KNOWN_DOCS), lean=True)
    assert (list(pairs.query_ids), list(pairs.doc_ids)) == (["q1", "q2"], ["d1", "d1"])
    folded = plain_pairs(path, None, None, _numbering())  # numbered, a duplicate is found exactly and folded here
    assert folded is not None and tuple(map(list, folded)) == (["q1", "q2"], ["d1", "d1"])
    assert plain_pairs(path, None, None) is None  # by hash: left to the line-by-line reading


def test_a_large_file_is_taken(tmp_path):
    """Many lines, several of pyarrow's blocks, the same query named by many pairs, documents named twice."""
    n = 300_000
    path = _write(tmp_path, "".join(f'{{"query_id":"q{i % 97}","doc_id":"d{i % 200_000}"}}\n' for i in range(n)))
    taken = plain_pairs(path, None, None)
    assert taken is not None and taken == _by_json(path)
    numbering = _numbering({f"q{i}" for i in range(97)}, {f"d{i}" for i in range(200_000)})
    numbered = plain_pairs(path, None, None, numbering)
    assert numbered is not None and tuple(map(list, numbered)) == taken
    assert numbered[1].numbers.itemsize == 4  # ids as numbers into the corpus's own: 4 bytes a pair
    twice = _write(tmp_path, path.read_text() + '{"query_id":"q5","doc_id":"d5"}\n')  # pair 5 again, at the end
    folded = plain_pairs(twice, None, None, numbering)  # folded to its first line, as line by line
    assert folded is not None and tuple(map(list, folded)) == taken
    assert plain_pairs(twice, None, None) is None


@pytest.mark.parametrize("threshold, imported", [(None, False), (0, True)])
def test_pyarrow_is_imported_only_for_a_large_pairs_file(tmp_path, threshold, imported):
    """Below io.inputs.PYARROW_PAIRS_FROM the file is read line by line and pyarrow is never imported (~0.2 s,
    ~50 MB); from it on, a plain file goes to pyarrow. The same pairs either way."""
    import subprocess
    import sys

    path = _write(tmp_path, TAKEN[sorted(TAKEN)[0]])
    code = ("import sys, labeller.io.inputs as inputs\n"
            f"if {threshold!r} is not None:\n    inputs.PYARROW_PAIRS_FROM = {threshold!r}\n"
            f"pairs = inputs.read_pairs(sys.argv[1], lean=True)\n"
            "print('pyarrow.json' in sys.modules, list(pairs.query_ids), list(pairs.doc_ids))\n")
    result = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    query_ids, doc_ids = _by_json(path)
    assert result.stdout.strip() == f"{imported} {query_ids} {doc_ids}"
