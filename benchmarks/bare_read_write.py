"""The reference for a cached rerun: read the three inputs and write one output row per pair, streaming.

What `labeller label` must do at the least when every verdict is already in its store: parse every
line of queries, corpus and pairs, and write a row per pair. No store, no judge.

    python benchmarks/bare_read_write.py queries.jsonl corpus.jsonl pairs.jsonl out.jsonl
"""

from __future__ import annotations

import json
import sys


def main(queries: str, corpus: str, pairs: str, out: str) -> None:
    for path in (queries, corpus):
        with open(path, encoding="utf-8") as lines:
            for line in lines:
                json.loads(line)
    with open(pairs, encoding="utf-8") as lines, open(out, "w", encoding="utf-8") as written:
        for line in lines:
            pair = json.loads(line)
            written.write(json.dumps({"query_id": pair["query_id"], "doc_id": pair["doc_id"], "grade": 1,
                                      "justification": ""}) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:5])
