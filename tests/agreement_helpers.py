"""Shared helpers for the agreement tests: write label/gold files and run the real CLI in-process."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import numpy as np

from labeller.cli import main


def label_row(query_id: str, doc_id: str, grade: int, justification: str = "because") -> dict:
    """A complete `labeller label` output row."""
    return {"query_id": query_id, "doc_id": doc_id, "grade": grade, "justification": justification,
            "judge": "offline:test", "provider": "offline", "model": "test", "rubric": "general",
            "rubric_version": "0123456789ab", "cache_key": f"{query_id}-{doc_id}", "input_tokens": 10,
            "output_tokens": 5, "cached_input_tokens": 0, "cost_usd": None, "latency_s": 0.01,
            "created_at": "2026-01-01T00:00:00Z", "from_cache": False}


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def write_labels(path: Path, grades: dict[tuple[str, str], int], notes: dict | None = None) -> Path:
    return write_jsonl(path, [label_row(q, d, g, (notes or {}).get((q, d), f"judge says {g}"))
                              for (q, d), g in grades.items()])


def write_gold(path: Path, grades: dict[tuple[str, str], int], annotator: str = "ann") -> Path:
    return write_jsonl(path, [{"query_id": q, "doc_id": d, "grade": g, "annotator": annotator,
                               "note": f"human says {g}"} for (q, d), g in grades.items()])


def write_qrels(path: Path, grades: dict[tuple[str, str], int]) -> Path:
    path.write_text("".join(f"{q} 0 {d} {g}\n" for (q, d), g in grades.items()), encoding="utf-8")
    return path


def synthetic(n_queries: int, per_query: int, seed: int = 0, noise: float = 0.8,
              shift: float = 0.0) -> tuple[dict, dict]:
    """Human grades 1-5 and a noisy judge (optionally shifted up: more generous) for the same pairs."""
    rng = np.random.default_rng(seed)
    gold, judge = {}, {}
    for q in range(n_queries):
        for d in range(per_query):
            g = int(rng.integers(1, 6))
            gold[f"q{q}", f"d{q}_{d}"] = g
            judge[f"q{q}", f"d{q}_{d}"] = int(np.clip(round(g + shift + rng.normal(0, noise)), 1, 5))
    return gold, judge


def run_cli(*args: object) -> tuple[int, str, str]:
    """Run `labeller ARGS` through its real entry point; return exit code, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main([str(a) for a in args])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return code, out.getvalue(), err.getvalue()


def agree_json(*args: object) -> dict:
    code, out, err = run_cli("agree", *args, "--json")
    assert code == 0, err
    return json.loads(out)
