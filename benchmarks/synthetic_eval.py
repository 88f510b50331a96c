"""Synthetic TREC run and qrels for the evaluation benchmark (written to a temp dir, never committed).

Each query gets `depth` distinct documents from a corpus of 8.8M ids (MS MARCO's size), scores
with ties and with differences below single precision (trec_eval's float32 ranking matters), and
qrels on the 0-3 scale over about 10% of its ranked documents plus some it did not retrieve.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

CORPUS = 8_841_823


def write_eval_data(directory: Path, queries: int, depth: int, seed: int = 0) -> tuple[Path, Path]:
    rng = np.random.default_rng(seed)
    run_path, qrels_path = directory / f"run-{queries}x{depth}.trec", directory / f"qrels-{queries}x{depth}.txt"
    with run_path.open("w") as run, qrels_path.open("w") as qrels:
        for start in range(0, queries, 500):
            lines, judged = [], []
            for q in range(start, min(queries, start + 500)):
                docs = np.unique(rng.integers(0, CORPUS, depth + depth // 10))[:depth]
                rng.shuffle(docs)
                scores = np.sort(np.round(rng.normal(10, 2, len(docs)), 2))[::-1].copy()
                jitter = rng.random(len(docs)) < 0.05  # below float32 resolution: ties for trec_eval
                scores[jitter] += 1e-9
                lines += [f"q{q} Q0 D{d} {i + 1} {s!r} bench\n" for i, (d, s) in enumerate(zip(docs.tolist(),
                                                                                               scores.tolist()))]
                picked = rng.choice(docs, size=max(1, len(docs) // 10), replace=False).tolist()
                picked += rng.integers(0, CORPUS, 10).tolist()
                grades = rng.choice([0, 0, 0, 1, 2, 3], size=len(picked)).tolist()
                judged += [f"q{q} 0 D{d} {g}\n" for d, g in dict(zip(picked, grades)).items()]
            run.write("".join(lines))
            qrels.write("".join(judged))
    return run_path, qrels_path
