"""`labeller judge-bench` on real human labels: the LLMJudge test set (TREC DL 2023 passages, NIST grades
0-3 mapped onto 1-4), with the offline judge, and four systems re-ranking every judged pool (two BM25
variants, longest passage first, chance) for the system-ranking tau. Run twice: the second run must be
served from the cache (pairs per second: "cached"). Reads ../shared beside the checkout; skips without it.

    python benchmarks/judge_bench_llmjudge.py

The published figures to compare with (Rahmani et al., arXiv 2502.13908; ../shared/data/llmjudge/
published_agreement.tsv): the best submitted label sets reach kappa 0.29 and ordinal alpha 0.50.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from llmjudge_system_ranking import lexical_systems, pools, write_run  # noqa: E402
from offline_judge_agreement import LLMJUDGE, llmjudge_inputs  # noqa: E402


def main() -> int:
    if not (LLMJUDGE / "pairs_with_text.jsonl").is_file():
        print(f"skipped: {LLMJUDGE} not found (../shared is only beside the developers' checkout)")
        return 0
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        queries, corpus, _ = llmjudge_inputs(tmp)
        runs = [write_run(tmp / f"{name}.trec", run) for name, run in lexical_systems(pools()).items()]
        command = [sys.executable, "-m", "labeller", "judge-bench", "--gold", str(LLMJUDGE / "human_qrels.txt"),
                   "--from-scale", "0-3", "--queries", str(queries), "--corpus", str(corpus),
                   "--judge", "offline:lexical", "--cache", str(tmp / "cache"),
                   *[a for r in runs for a in ("--run", str(r))]]
        for attempt in ("first run", "rerun (cache)"):
            started = time.perf_counter()
            done = subprocess.run(command, capture_output=True, text=True)
            if done.returncode:
                print(done.stderr)
                return 1
            print(f"## {attempt}: {time.perf_counter() - started:.1f} s wall\n\n{done.stdout}")
        clipped = subprocess.run([*command, "--clip-to-gold"], capture_output=True, text=True)
        print(f"## with --clip-to-gold (grade 5 compared as TREC 3)\n\n{clipped.stdout}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
