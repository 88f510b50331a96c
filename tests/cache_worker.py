"""Run one labelling process into a shared store (a directory or a postgresql:// URL; used by test_store.py through subprocess).

usage: python cache_worker.py STORE RUBRIC CALLS_FILE RESULT_JSON N_QUERIES LATENCY CONCURRENCY [GO_FILE]
Touches RESULT_JSON.ready, waits for GO_FILE to exist (so two workers start together), labels N_QUERIES x 4 pairs with
FakeJudge, and writes the run's stats as JSON.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fakejudge import FakeJudge, sample  # noqa: E402

from labeller.store import open_store  # noqa: E402
from labeller.labelling import LabelOptions, label_pairs  # noqa: E402
from labeller.rubric import load_rubric  # noqa: E402


def main() -> None:
    store, rubric, calls, result, n, latency, concurrency, *go = sys.argv[1:]
    if go:
        Path(result + ".ready").touch()
        while not Path(go[0]).exists():
            time.sleep(0.005)
    queries, corpus, pairs = sample(int(n))
    judge = FakeJudge(latency=float(latency), calls_file=calls)
    with open_store(store) as cache:
        run = asyncio.run(label_pairs(pairs, queries, corpus, judge, load_rubric(rubric), cache,
                                      LabelOptions(concurrency=int(concurrency), progress=False)))
    Path(result).write_text(json.dumps({"stats": run.stats.model_dump(), "labels": len(run.labels),
                                        "failures": len(run.failures)}))


if __name__ == "__main__":
    main()
