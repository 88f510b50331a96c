"""The Python API reads frames and dicts in memory (labeller.io.memory), through the very readers and checks a file
meets: nothing is written to disk, a frame reads as its CSV would, an in-memory run ranks exactly as its TREC file,
and a bad row is named by its frame or dict and row."""

from __future__ import annotations

import math
import tempfile

import pandas as pd
import pytest

import labeller
from labeller.errors import BadInputError

QUERIES = pd.DataFrame({"query_id": ["q1", "q2", "q3"], "text": ["spinach", "bounty hunter", "green vegetables"]})
GOLD = pd.DataFrame({"query_id": ["q1"] * 4 + ["q2"] * 4 + ["q3"] * 4, "doc_id": ["d1", "d2", "d3", "d4"] * 3,
                     "grade": [3, 0, 2, 0, 0, 3, 0, 1, 1, 0, 3, 2]})  # 0-3
# ties (q1: d2 and d3 at 2.0; q3: d1 and d4 at 1.0, and d3 at a double that rounds to the same float32 as 0.5)
RUN = {"q1": {"d1": 1.0, "d2": 2.0, "d3": 2.0, "d4": 0.5}, "q2": {"d4": 3.0, "d2": 1.0, "d1": 1.5},
       "q3": {"d1": 1.0, "d4": 1.0, "d2": 0.5, "d3": 0.5 + 1e-12}}
METRICS = "ndcg@3,P_2,recip_rank,recall@2"


def run_frame(run: dict) -> pd.DataFrame:
    return pd.DataFrame([(q, d, s) for q, docs in run.items() for d, s in docs.items()],
                        columns=["query_id", "doc_id", "score"])


@pytest.fixture
def no_temporary_files(tmp_path, monkeypatch):
    """Any temporary file or folder the call makes fails: the temporary directory is under a regular file."""
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    monkeypatch.setattr(tempfile, "tempdir", str(blocker / "tmp"))
    with pytest.raises(OSError):
        tempfile.mkdtemp()


def test_evaluate_compare_agree_and_outcomes_write_nothing(no_temporary_files):
    result = labeller.evaluate(GOLD, run_frame(RUN), METRICS, from_scale="0-3")
    assert result.labels == "labels DataFrame" and result.run == "run"
    worst_first = run_frame({q: {d: float(-g) for _, d, g in rows.itertuples(index=False)}
                             for q, rows in GOLD.groupby("query_id")})
    versus = labeller.compare(GOLD, {"a": RUN, "b": worst_first}, "ndcg@3",
                              baseline=RUN, from_scale="0-3", permutations=100, bootstrap=100,
                              thresholds=["ndcg@3=0.01"], alpha=0.5)
    assert set(versus.runs) == {"a", "b", "baseline:baseline"} and versus.gate is not None
    assert not versus.gate.passed  # the least relevant first: the gate fails from memory too
    labels = GOLD.assign(grade=GOLD.grade + 1)
    corrected = labeller.evaluate(labels, RUN, "ndcg@3", gold=GOLD.iloc[::2], from_scale="gold=0-3")
    assert corrected.corrected is not None and corrected.corrected.gold == "gold DataFrame"
    agreement = labeller.agree(labels, GOLD, from_scale="gold=0-3", resamples=50, queries=QUERIES)
    assert agreement.n == len(GOLD) and agreement.kappa == pytest.approx(1.0)
    outcomes = pd.DataFrame({"query_id": ["q1", "q2", "q3"], "outcome": [1, 1, 0]})
    linked = labeller.link_outcomes(outcomes, labels, run_frame(RUN), queries=QUERIES,
                                    evidence=GOLD[GOLD.grade >= 2][["query_id", "doc_id"]], bootstrap=50)
    assert linked.outcomes == "outcomes DataFrame" and linked.joined.outcomes == 3


def test_run_files_under_the_callers_names_are_read_where_they_are(no_temporary_files, tmp_path):
    """compare({name: path}) names each run as the caller does, a path baseline "baseline:baseline", with no link
    or copy made anywhere; a bad line in a named run file is named by that file's own path and line."""
    good, worse = tmp_path / "good.trec", tmp_path / "worse.tsv"
    good.write_text("".join(f"{q} Q0 {d} 0 {s} x\n" for q, docs in RUN.items() for d, s in docs.items()))
    worse.write_text("".join(f"{q} Q0 {d} 0 {-s} x\n" for q, docs in RUN.items() for d, s in docs.items()))
    versus = labeller.compare(GOLD, {"production": good, "candidate": worse}, "ndcg@3", baseline=good,
                              from_scale="0-3", permutations=50, bootstrap=50)
    assert list(versus.runs) == ["production", "candidate", "baseline:baseline"]
    assert versus.runs["production"].metrics == labeller.evaluate(GOLD, good, "ndcg@3", from_scale="0-3").metrics
    listed = labeller.compare(GOLD, [good, worse], "ndcg@3", from_scale="0-3", permutations=50, bootstrap=50)
    assert list(listed.runs) == ["good", "worse"]  # a list's paths keep their files' names
    worse.write_text(worse.read_text() + "q1 Q0 d9 0 not-a-score x\n")
    with pytest.raises(BadInputError) as caught:
        labeller.compare(GOLD, {"production": good, "candidate": worse}, "ndcg@3", from_scale="0-3")
    assert caught.value.path == str(worse) and caught.value.line == 12
    with pytest.raises(BadInputError, match="baseline_name names the baseline run; give baseline too"):
        labeller.evaluation.evaluate(labeller.evaluation.EvaluateOptions(runs=[good], baseline_name="old",
                                                                          labels=tmp_path / "labels.jsonl"))
    with pytest.raises(BadInputError, match="2 run names for 1 runs"):
        labeller.evaluation.evaluate(labeller.evaluation.EvaluateOptions(runs=[good], run_names=["a", "b"],
                                                                          labels=tmp_path / "labels.jsonl"))


def test_label_without_out_keeps_the_labels_in_memory_only(no_temporary_files, api, tmp_path, monkeypatch):
    """label() with no `out`, one judge or a jury: the labels come back as a frame and no file is written, neither
    in the working folder nor as a temporary file; the verdicts are in the store, so a second call sends nothing."""
    corpus = pd.DataFrame({"doc_id": ["d1", "d2", "d3", "d4"],
                           "text": ["spinach is a green vegetable", "a bounty hunter", "kale and spinach", "taxes"]})
    pairs = GOLD[["query_id", "doc_id"]]
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    cache = tmp_path / "cache"
    labels = labeller.label(pairs, queries=QUERIES, corpus=corpus, cache=cache)
    assert len(labels) == len(pairs) and labels.attrs["stats"]["new"] == len(pairs)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-memory")
    jury = labeller.label(pairs, queries=QUERIES, corpus=corpus, cache=cache, base_url=api.openai_url,
                          judges=["offline:lexical", "openai:gpt-4.1-mini"])
    assert len(jury) == len(pairs) and jury.judge.iloc[0].startswith("jury:")
    assert len(jury.attrs["judge_labels"]) == 2 * len(pairs)
    again = labeller.label(pairs, queries=QUERIES, corpus=corpus, cache=cache)
    assert again.attrs["stats"]["cached"] == len(pairs) and again.grade.tolist() == labels.grade.tolist()
    assert list(work.iterdir()) == []


def test_an_in_memory_run_ranks_as_its_trec_file(tmp_path):
    """The dict and the plain frame take the columnar path; a frame with a rank column, or another name for a
    column, the row-by-row one; a TREC file its own: the same trec_eval order, ties and float32 rounding included."""
    (tmp_path / "run.trec").write_text("".join(f"{q} Q0 {d} 0 {s!r} t\n" for q, docs in RUN.items()
                                               for d, s in docs.items()))
    (tmp_path / "gold.txt").write_text("".join(f"{q} 0 {d} {g}\n" for q, d, g in GOLD.itertuples(index=False)))
    from_file = labeller.evaluate(tmp_path / "gold.txt", tmp_path / "run.trec", METRICS)
    ranked = run_frame(RUN).assign(rank=range(1, 12))
    renamed = run_frame(RUN).rename(columns={"query_id": "qid", "doc_id": "docid"})
    for run in (RUN, run_frame(RUN), ranked, renamed, run_frame(RUN).sample(frac=1.0, random_state=3)):
        got = labeller.evaluate(GOLD, run, METRICS, from_scale="0-3")
        assert got.per_query == from_file.per_query and got.metrics == from_file.metrics
    numbered = run_frame(RUN).assign(query_id=lambda f: f.query_id.str[1:].astype(int))  # ids as whole numbers
    by_number = labeller.evaluate(GOLD.assign(query_id=GOLD.query_id.str[1:].astype(int)), numbered, METRICS,
                                  from_scale="0-3")
    assert {q: v for q, v in by_number.per_query["ndcg@3"].items()} == \
        {q[1:]: v for q, v in from_file.per_query["ndcg@3"].items()}


def test_a_frame_reads_as_its_csv_file_would(tmp_path):
    """Ids of mixed types (a spreadsheet's 7 beside 'd7') read as the CSV of the same frame reads: as text."""
    gold = GOLD.assign(doc_id=[1, "d2", 3, "d4"] * 3)
    run = run_frame(RUN).assign(doc_id=lambda f: f.doc_id.map({"d1": 1, "d2": "d2", "d3": 3, "d4": "d4"}))
    gold.to_csv(tmp_path / "gold.csv", index=False)
    run.to_csv(tmp_path / "run.csv", index=False)
    from_files = labeller.evaluate(tmp_path / "gold.csv", tmp_path / "run.csv", METRICS, from_scale="0-3")
    in_memory = labeller.evaluate(gold, run, METRICS, from_scale="0-3")
    assert in_memory.per_query == from_files.per_query and in_memory.metrics == from_files.metrics
    assert not math.isnan(in_memory.metrics["ndcg@3"])


@pytest.mark.parametrize("run, message", [
    (run_frame(RUN).assign(score=[1.0, math.nan] + [1.0] * 9), r"run 'run' DataFrame:2: field 'score'"),
    (run_frame(RUN).assign(score=[1.0, math.inf] + [1.0] * 9), r"run 'run' DataFrame:2: field 'score': .*finite"),
    (run_frame(RUN).assign(doc_id=["d1", None] + ["d9"] * 9), r"run 'run' DataFrame:2: field 'doc_id'"),
    (run_frame(RUN).assign(doc_id=["d1", " "] + [f"x{i}" for i in range(9)]), r"DataFrame:2: field 'doc_id'"),
    (run_frame(RUN).assign(doc_id=["d1", None] + [f"x{i}" for i in range(9)]), r"DataFrame:2: field 'doc_id': empty"),
    (run_frame(RUN).assign(query_id=lambda f: f.query_id.astype("string").mask(f.index == 1)),  # pd.NA
     r"DataFrame:2: field 'query_id': empty"),
    (run_frame(RUN).assign(doc_id="d1"), r"run 'run' DataFrame:2: field 'doc_id': .*twice"),
    (run_frame(RUN).assign(score=["1.5", "x"] + ["1"] * 9), r"run 'run' DataFrame:2: field 'score': .*not a number"),
    ({"q1": {"d1": 1.0, "d2": "high"}}, r"run 'run' dict:2: field 'score': .*not a number"),
    ({"q1": {"d1": 1.0, "d2": None}}, r"run 'run' dict:2: field 'score': missing"),
    ({"q1": {1: 1.0, "1": 2.0}}, r"run 'run' dict:2: field 'doc_id': .*twice"),
    ({}, r"the run dict is empty"),
    (run_frame(RUN).set_axis(["query_id", "doc_id", "doc_id"], axis=1),
     r"run 'run' DataFrame: field 'doc_id': column 'doc_id' appears twice"),
    ({"q1": {}}, r"run 'run' dict: file is empty"),
])
def test_a_bad_in_memory_run_is_named_by_its_row(run, message):
    with pytest.raises(BadInputError, match=message) as caught:
        labeller.evaluate(GOLD, run, "ndcg@3", from_scale="0-3")
    assert "labeller-api-" not in str(caught.value) and "/tmp" not in str(caught.value)


def test_text_scores_read_as_a_csv_files_do():
    """A file's score column is text that parses as a number; a frame's or dict's may be too."""
    as_text = {q: {d: str(s) for d, s in docs.items()} for q, docs in RUN.items()}
    assert labeller.evaluate(GOLD, as_text, METRICS, from_scale="0-3").per_query == \
        labeller.evaluate(GOLD, RUN, METRICS, from_scale="0-3").per_query


def _held_and_file(source, tmp_path):
    """An in-memory frame or dict of grades, and the file the same data makes (CSV, ranx JSON)."""
    import json

    from labeller.io.memory import InMemory

    if isinstance(source, dict):
        path = tmp_path / "qrels.json"
        path.write_text(json.dumps(source))
        return InMemory("labels dict", "labels", mapping=source), path
    path = tmp_path / "labels.csv"
    source.to_csv(path, index=False)
    return InMemory("labels DataFrame", "labels", frame=source), path


def _read(given, from_scale, role):
    """What evaluation reads from grades: the judgments' figures, or the error's row, field and words."""
    from labeller.evaluation.qrels import load_judgments

    try:
        j = load_judgments(given, from_scale, role)
        return j.grades, j.kind, j.scale, j.judges, j.probs
    except BadInputError as exc:
        return "error", exc.line, exc.field, exc.detail


NUMBERED = pd.DataFrame({"query_id": [101, 101, 102], "doc_id": [7, 8, 7], "grade": [0, 3, 2]})


@pytest.mark.parametrize("source, from_scale, role, columnar", [
    (GOLD, "judgments=0-3", "judgments", True),
    (GOLD.assign(grade=GOLD.grade + 1), None, "judgments", True),
    (GOLD, "gold=0-3", "gold", True),
    (NUMBERED, "labels=0-3", "labels-alt", True),  # whole-number ids read as their digits, as a CSV's
    ({"q1": {"d1": 0, "d2": 3}, "q2": {"d1": 2}}, None, "judgments", True),  # ranx Qrels: TREC's 0-3
    ({"q1": {"d1": 0, "d2": 4}}, "0-4", "judgments", True),
    ({"q1": {"d1": 0, "d2": 2.0}}, None, "judgments", False),  # a float grade: the row reader's rules
    (GOLD.assign(annotator="ann"), "judgments=0-3", "judgments", False),  # another column
    (GOLD.assign(grade=[0, None] + [1] * 10), "judgments=0-3", "judgments", False),  # no grade on row 2
    (GOLD.assign(grade=[0, 7] + [1] * 10), "judgments=0-3", "judgments", False),  # out of its scale
    (GOLD.assign(doc_id=["d1", " "] + [f"x{i}" for i in range(10)]), "judgments=0-3", "judgments", False),
    (GOLD.assign(doc_id="d1"), "judgments=0-3", "judgments", False),  # one pair graded twice
    (GOLD.assign(grade=GOLD.grade + 1), None, "labels", False),  # a labels table: the judge's own rows
])
def test_in_memory_grades_read_as_their_files_do(source, from_scale, role, columnar, tmp_path, monkeypatch):
    """A frame or dict of grades gives exactly what its file gives (grades, kind, scale; or the same error on the
    same row), in columns where the rows need no judging: there the row reader is never called."""
    held, path = _held_and_file(source, tmp_path)
    in_memory = _read(held, from_scale, role)
    assert in_memory == _read(path, from_scale, role)
    if columnar:
        import labeller.evaluation.qrels as qrels

        def refuse(*args, **kwargs):
            raise AssertionError("the row reader was called")

        monkeypatch.setattr(qrels, "read_grades", refuse)
        assert _read(held, from_scale, role) == in_memory


def test_a_frame_reads_column_by_column_as_cell_by_cell(tmp_path):
    """io.tables.frame_rows (a frame's rows a column at a time) equals io.tables._plain applied to every cell, for
    every dtype a frame may hold: whole numbers, booleans, floats with NaN, strings, strings with None, nullable
    integers, dates, lists, categories, 32-bit floats and mixed objects; in memory and from a Parquet file."""
    import numpy as np

    from labeller.io.memory import InMemory
    from labeller.io.tables import _plain

    frame = pd.DataFrame({
        "int": [1, 2, 3], "uint": np.array([1, 2, 3], dtype=np.uint8), "bool": [True, False, True],
        "float": [1.0, float("nan"), 2.5], "text": ["a", "b", "c"], "text_none": ["a", None, "c"],
        "nullable": pd.array([1, None, 3], dtype="Int64"), "when": pd.to_datetime(["2026-01-01", None, "2026-01-03"]),
        "list": [[1, 2], [], [3]], "category": pd.Categorical(["x", "y", "x"]),
        "float32": np.array([0.1, 0.2, np.nan], dtype=np.float32), "mixed": ["1", 2, np.int64(3)],
        "text_nan": ["a", float("nan"), "c"], "str_dtype": pd.Series(["a", None, "c"], dtype="string")})
    held = InMemory("labels DataFrame", "labels", frame=frame)
    expected = [(n, {str(c): _plain(v) for c, v in zip(frame.columns, values)})
                for n, values in enumerate(frame.itertuples(index=False, name=None), start=1)]
    got = list(held.rows())
    assert got == expected
    assert [type(v) for v in got[0][1].values()] == [type(v) for v in expected[0][1].values()]
    assert got[1][1]["float"] is None and got[1][1]["nullable"] is None and got[1][1]["when"] is None
    from labeller.io.tables import read_rows

    parquet = tmp_path / "labels.parquet"
    frame.drop(columns=["mixed", "text_nan"]).to_parquet(parquet)
    written = pd.read_parquet(parquet)
    assert list(read_rows(parquet)) == [(n, {str(c): _plain(v) for c, v in row.items()})
                                        for n, row in enumerate(written.to_dict(orient="records"), start=1)]
