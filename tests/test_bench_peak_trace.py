"""benchmarks/peak_trace.py: the pairs done of an in-process first labelling (LinesWritten, read from the output's
temporary file while labeller's RowWriter writes it) and the slope of a trace (least_squares against numpy)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from peak_trace import LinesWritten, least_squares  # noqa: E402

from labeller.io.writing import RowWriter  # noqa: E402


def _rows(lo: int, hi: int) -> list[dict]:
    return [{"query_id": f"q{i}", "doc_id": f"d{i}", "grade": i % 4, "justification": "x" * 40} for i in range(lo, hi)]


def test_lines_written_counts_the_rows_of_a_run_still_writing(tmp_path: Path) -> None:
    out = tmp_path / "labels.jsonl"
    done = LinesWritten(out)
    assert done() == 0  # nothing written yet: no temporary file
    writer = RowWriter(out)
    counts = []
    for lo in range(0, 3000, 1000):
        writer.write(_rows(lo, lo + 1000))
        counts.append(done())  # read on from where the last call stopped
    writer.close()
    done.close()
    assert counts == [1000, 2000, 3000]
    assert sum(1 for _ in open(out, "rb")) == 3000  # the same count, independently, from the file moved into place


def test_lines_written_counts_nothing_of_another_output(tmp_path: Path) -> None:
    writer = RowWriter(tmp_path / "other.jsonl")
    writer.write(_rows(0, 1000))
    done = LinesWritten(tmp_path / "labels.jsonl")
    assert done() == 0  # another output's temporary file is not this run's
    writer.close()


@pytest.mark.parametrize("points", [[(0.04, 185.0), (0.06, 186.0), (0.1, 186.5), (1.0, 190.0)],
                                    [(0.1, 400.0), (2.0, 380.0), (5.0, 420.0)]])
def test_least_squares_is_numpys_slope(points: list[tuple[float, float]]) -> None:
    expected = np.polyfit([x for x, _ in points], [y for _, y in points], 1)[0]
    assert least_squares(points) == pytest.approx(expected)


def test_least_squares_needs_two_distinct_x() -> None:
    assert least_squares([(1.0, 5.0)]) is None
    assert least_squares([(1.0, 5.0), (1.0, 7.0)]) is None
