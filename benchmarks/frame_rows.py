"""A table's rows built a column at a time (io.tables.frame_rows) against the cell-by-cell conversion it replaced
(pandas' records, each cell through io.tables._plain), in one process: a generated 200,000-row labels table
shaped as `labeller label` writes it, read from a Parquet file by io.tables.read_rows. The rows are checked equal
before anything is timed. Usage: python benchmarks/frame_rows.py [--rows 200000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from api_overhead import best  # best of N wall-clock runs


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    import pandas as pd

    from labeller.io.tables import _plain, read_rows

    n = args.rows
    frame = pd.DataFrame({
        "query_id": [f"q{i % 500}" for i in range(n)], "doc_id": [f"d{i}" for i in range(n)],
        "grade": [1 + i % 5 for i in range(n)], "justification": ["The passage names the fee."] * n,
        "judge": ["openai:gpt-4.1-mini"] * n, "input_tokens": [412] * n, "cost_usd": [0.00021] * n})
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "labels.parquet"
        frame.to_parquet(path)

        def cell_by_cell():
            records = pd.read_parquet(path).to_dict(orient="records")
            return ((i, {k: _plain(v) for k, v in row.items()}) for i, row in enumerate(records, start=1))

        assert list(read_rows(path)) == list(cell_by_cell())
        reference = best(lambda: sum(1 for _ in cell_by_cell()), args.repeat)
        columns = best(lambda: sum(1 for _ in read_rows(path)), args.repeat)
    print(f"Parquet table, {n:,} rows: cell by cell {reference:.3f} s, a column at a time {columns:.3f} s, "
          f"ratio {columns / reference:.2f}")


if __name__ == "__main__":
    main()
