"""What refusing a JSONL line that gives a key twice costs the line reader (io.tables._read_jsonl).

Every line is checked, a corpus's too: a line with more colons than keys has its key ends counted (and one with
more of those than its objects have keys, nested ones included, is parsed again pair by pair). The same reader
with the check off (`check_keys`, there only for this measurement) is the reference, in the same process. Three
files, generated in a temporary folder: 200,000 label rows shaped as `labeller label` writes them (a justification
with a colon in two of three, a timestamp, token counts, a cost), 200,000 corpus passages of 60 words, one in five
with a colon (22% of LLMJudge's MS MARCO passages hold one), and 200,000 BEIR corpus lines (`_id`, `title`, `text`
and a `metadata` object of two members).
Usage: python benchmarks/jsonl_repeated_keys.py [--rows 200000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
from pathlib import Path

from api_overhead import best  # best of N wall-clock runs


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from labeller.io.gold import read_grades
    from labeller.io.tables import _read_jsonl

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "labels.jsonl"
        with path.open("w", encoding="utf-8") as handle:
            for i in range(args.rows):
                handle.write(json.dumps({
                    "query_id": f"q{i % 500}", "doc_id": f"d{i}", "grade": 1 + i % 5,
                    "justification": "The passage answers the query: it names the fee." if i % 3 else "Off topic.",
                    "judge": "openai:gpt-4.1-mini", "rubric": "general", "rubric_version": "3",
                    "input_tokens": 412, "output_tokens": 38, "cost_usd": 0.00021,
                    "created_at": "2026-12-01T10:00:00.123456Z"}) + "\n")
        passages = Path(folder) / "corpus.jsonl"
        words = "the fee for a wire transfer is charged to the account at month end and shown on it".split()
        draw = random.Random(0)
        with passages.open("w", encoding="utf-8") as handle:
            for i in range(args.rows):
                text = " ".join(draw.choices(words, k=60))
                handle.write(json.dumps({"doc_id": f"d{i}", "text": f"Note: {text}" if i % 5 == 0 else text}) + "\n")
        beir = Path(folder) / "beir.jsonl"  # BEIR's corpus.jsonl, with a "metadata" object as trec-covid's
        with beir.open("w", encoding="utf-8") as handle:
            for i in range(args.rows):
                text = " ".join(draw.choices(words, k=60))
                handle.write(json.dumps({"_id": f"d{i}", "title": "Wire fees", "text": text,
                                         "metadata": {"url": f"https://example.org/{i}", "year": "2020"}}) + "\n")
        for name, table in (("label rows", path), ("corpus passages", passages), ("BEIR corpus lines", beir)):
            unchecked = best(lambda: sum(1 for _ in _read_jsonl(table, check_keys=False)), args.repeat)
            checked = best(lambda: sum(1 for _ in _read_jsonl(table)), args.repeat)
            print(f"the line reader, {args.rows:,} {name}: unchecked {unchecked:.3f} s   checked {checked:.3f} s   "
                  f"ratio {checked / unchecked:.2f}")
        grades = best(lambda: read_grades(path, role="labels"), 1)
    print(f"read_grades, the whole reading of the labels: {grades:.3f} s")


if __name__ == "__main__":
    main()
