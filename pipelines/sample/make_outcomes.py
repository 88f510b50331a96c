"""Write outcomes.jsonl: the categorisation the stored baseline's retrieval leads to, for every sample query.

The downstream task of the bookkeeping product: a new transaction takes the category most common among the
top 3 ledger rows the retriever returns (a tie goes to the best-ranked of the tied categories); the outcome is
correct when that is the bookkeeper's category (the query's label-time `category`). Standard library only:

    python pipelines/sample/make_outcomes.py            # from baseline.trec, beside this script
    python pipelines/sample/make_outcomes.py --run RUN --out FILE
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
TOP = 3


def categorise(ranked: list[str], categories: dict[str, str]) -> str | None:
    top = [categories[d] for d in ranked[:TOP] if d in categories]
    if not top:
        return None
    counts = Counter(top)
    best = max(counts.values())
    return next(c for c in top if counts[c] == best)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, default=HERE / "baseline.trec")
    parser.add_argument("--out", type=Path, default=HERE / "outcomes.jsonl")
    args = parser.parse_args()
    categories = {}
    with (HERE / "corpus.jsonl").open(encoding="utf-8") as corpus:
        for line in corpus:
            row = json.loads(line)
            categories[row["doc_id"]] = row["category"]
    ranked: dict[str, list[tuple[float, str]]] = {}
    for line in args.run.read_text(encoding="utf-8").splitlines():
        qid, _, doc, _, score, _ = line.split()
        ranked.setdefault(qid, []).append((float(score), doc))
    rows = []
    with (HERE / "queries.jsonl").open(encoding="utf-8") as queries:
        for line in queries:
            query = json.loads(line)
            # trec_eval's order: score descending, ties by doc id descending
            docs = [d for _, d in sorted(ranked.get(query["query_id"], []), reverse=True)]
            guess = categorise(docs, categories)
            outcome = "correct" if guess == query["category"] else "incorrect"
            rows.append({"query_id": query["query_id"], "outcome": outcome})
    args.out.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


if __name__ == "__main__":
    main()
