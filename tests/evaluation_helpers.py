"""Synthetic judgments and runs for the evaluation tests, and a way to run the CLI in-process.

The data are random but seeded, with what trips evaluators up: tied scores, doc ids whose string
order differs from their numeric order (d9 > d10), a query whose judgments are all grade 0 (no
answer), a judged query the run lacks, and a run query nobody judged.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from labeller.cli import main

SHARED = Path(__file__).resolve().parents[1] / ".." / "shared"
DL19 = SHARED / "data" / "trec-dl19"


def synthetic(seed: int = 0, queries: int = 25, depth: int = 40, ties: bool = True):
    """(qrels on TREC's 0-3 scale, run scores): dicts query -> doc -> value."""
    rng = random.Random(seed)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(queries):
        qid = f"q{q}"
        pool = [f"d{rng.randrange(1, 400)}" for _ in range(depth * 2)]
        judged = rng.sample(sorted(set(pool)), k=min(len(set(pool)), rng.randrange(5, 30)))
        qrels[qid] = {d: rng.choice([0, 0, 0, 1, 1, 2, 3]) for d in judged}
        docs = list(dict.fromkeys(pool))[: rng.randrange(depth // 2, depth)]
        # Scores on a coarse grid tie often; ranx, pytrec_eval and we must break ties the same way.
        run[qid] = {d: (round(rng.random(), 1) if ties else rng.random() + i * 1e-9) for i, d in enumerate(docs)}
    qrels["q0"] = {d: 0 for d in qrels["q0"]}  # no answer
    run.pop("q1")  # judged, not in the run
    run["unjudged"] = {"d1": 1.0, "d2": 0.5}  # in the run, never judged
    return qrels, run


def write_qrels(path: Path, qrels: dict[str, dict[str, int]]) -> Path:
    path.write_text("".join(f"{q} 0 {d} {g}\n" for q, ds in qrels.items() for d, g in ds.items()))
    return path


def write_run(path: Path, run: dict[str, dict[str, float]], tag: str = "synthetic") -> Path:
    lines = []
    for q, ds in run.items():
        # Ranks deliberately not in score order: trec_eval (and we) ignore the rank column.
        lines += [f"{q} Q0 {d} {i} {s} {tag}\n" for i, (d, s) in enumerate(ds.items(), start=1)]
    path.write_text("".join(lines))
    return path


def cli(*args: object, capsys=None) -> tuple[int, str, str]:
    """Run `labeller ...` in this process; (exit code, stdout, stderr)."""
    try:
        main([str(a) for a in args])
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr() if capsys is not None else ("", "")
    return code, out, err


def cli_json(*args: object, capsys) -> dict:
    code, out, err = cli(*args, "--json", capsys=capsys)
    assert code == 0, err
    return json.loads(out)


needs_dl19 = pytest.mark.skipif(not (DL19 / "qrels-pass.txt").is_file(), reason="../shared/data/trec-dl19 not present")
