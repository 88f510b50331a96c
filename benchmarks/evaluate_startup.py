"""Start-up time of `labeller evaluate`: cold (empty numba cache) and warm, interpreted and compiled.

ranx's kernels are numba functions; compiling the ones labeller uses takes ~10-20 s on first use.
labeller runs them interpreted below a size threshold (labeller/evaluation/numba_cache.py), so a
small evaluation never compiles. This script measures whole processes, as a user waits for them:

    python benchmarks/evaluate_startup.py            # small input: 20 queries x 100 documents
    python benchmarks/evaluate_startup.py --large    # also 200 and 1,000 queries x 1,000 documents

Each "cold" run gets a fresh empty NUMBA_CACHE_DIR; "warm" runs reuse one. Medians of --repeat runs.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

METRICS = "ndcg@10,recall@100,mrr@10,map"


def write_data(directory: Path, queries: int, depth: int, seed: int = 0) -> tuple[Path, Path]:
    rng = random.Random(seed)
    run, qrels = [], []
    for q in range(queries):
        docs = list(dict.fromkeys(f"d{rng.randrange(10**6)}" for _ in range(depth)))
        run += [f"q{q} Q0 {d} {i + 1} {len(docs) - i} bench\n" for i, d in enumerate(docs)]
        qrels += [f"q{q} 0 {d} {rng.choice([0, 0, 1, 2, 3])}\n" for d in rng.sample(docs, min(len(docs), 100))]
    (directory / f"run{queries}.trec").write_text("".join(run))
    (directory / f"qrels{queries}.txt").write_text("".join(qrels))
    return directory / f"run{queries}.trec", directory / f"qrels{queries}.txt"


def timed(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr}")
    return elapsed


def median_of(command: list[str], env: dict[str, str], repeat: int, fresh_cache: bool, root: Path) -> float:
    times = []
    for i in range(repeat):
        run_env = dict(env)
        if fresh_cache:
            run_env["NUMBA_CACHE_DIR"] = str(root / f"cold-{time.monotonic_ns()}-{i}")
        times.append(timed(command, run_env))
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--large", action="store_true", help="also time 200 and 1,000 queries x 1,000 documents")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        run, qrels = write_data(root, 20, 100)
        base = {k: v for k, v in os.environ.items() if k not in ("LABELLER_JIT", "NUMBA_CACHE_DIR")}
        warm = dict(base, NUMBA_CACHE_DIR=str(root / "warm"))
        evaluate = ["labeller", "evaluate", "--run", str(run), "--labels", str(qrels), "--metrics", METRICS]
        rows = [
            ("labeller --help", median_of(["labeller", "--help"], warm, args.repeat, False, root)),
            ("python -c 'import ranx' (context)", median_of([sys.executable, "-c", "import ranx"], warm, args.repeat,
                                                             False, root)),
            ("evaluate, small, default (interpreted), cold cache", median_of(evaluate, base, args.repeat, True, root)),
            ("evaluate, small, default (interpreted), warm cache", median_of(evaluate, warm, args.repeat, False, root)),
        ]
        jit = dict(base, LABELLER_JIT="on")
        rows.append(("evaluate, small, LABELLER_JIT=on, cold cache (compiles)",
                     median_of(evaluate, jit, 1, True, root)))
        jit_warm = dict(jit, NUMBA_CACHE_DIR=str(root / "jit-warm"))
        timed(evaluate, jit_warm)  # fill the cache
        rows.append(("evaluate, small, LABELLER_JIT=on, warm cache",
                     median_of(evaluate, jit_warm, args.repeat, False, root)))
        if args.large:
            for queries in (200, 1000):
                big_run, big_qrels = write_data(root, queries, 1000)
                command = ["labeller", "evaluate", "--run", str(big_run), "--labels", str(big_qrels), "--metrics",
                           METRICS + ",recall@1000"]
                for mode in ("off", "on", "auto"):
                    env = dict(jit_warm, LABELLER_JIT=mode)
                    rows.append((f"evaluate, {queries} x 1000, LABELLER_JIT={mode}, warm",
                                 median_of(command, env, max(1, args.repeat // 2), False, root)))
    print(f"{os.cpu_count()} cores; python {sys.version.split()[0]}; medians of {args.repeat} runs\n")
    print("| what | seconds |\n| --- | --- |")
    for name, seconds in rows:
        print(f"| {name} | {seconds:.2f} |")


if __name__ == "__main__":
    main()
