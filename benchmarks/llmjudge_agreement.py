"""Reproduce published agreement figures of the LLMJudge challenge (Rahmani et al., "Judging the Judges").

For each of three real LLM label sets, runs the real CLI

    labeller agree --labels ../shared/data/llmjudge/llm_<run>.txt \
                   --gold ../shared/data/llmjudge/human_qrels.txt --from-scale 0-3 --json

and prints ours against published: Cohen's kappa on the 4-point scale, Krippendorff's alpha (ordinal,
two coders: human and LLM), and kappa binarized at 0|123, 01|23 and 012|3, which after mapping 0-3 onto
1-4 are relevant-from 2, 3 and 4. Reads ../shared beside the checkout; exits 0 with a note when absent.
Usage: python benchmarks/llmjudge_agreement.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "llmjudge"
RUNS = ("Olz-gpt4o", "h2oloo-fewself", "willia-umbrela1")
# published column -> how to read it from `labeller agree --json`
COLUMNS = {"kappa_4pt": lambda r: r["kappa"], "kripp_alpha": lambda r: r["alpha_ordinal"],
           "kappa_0|123": lambda r: r["kappa_binary"]["2"], "kappa_01|23": lambda r: r["kappa_binary"]["3"],
           "kappa_012|3": lambda r: r["kappa_binary"]["4"]}


def published(path: Path) -> dict[str, dict[str, float]]:
    """The TSV may repeat its header; each submission's row is read once."""
    lines = [line.split("\t") for line in path.read_text().splitlines() if line.strip()]
    header = lines[0]
    return {row[0]: dict(zip(header[1:], map(float, row[1:]))) for row in lines if row[0] != header[0]}


def ours(run: str) -> tuple[dict, float]:
    command = [sys.executable, "-m", "labeller", "agree", "--labels", str(DATA / f"llm_{run}.txt"),
               "--gold", str(DATA / "human_qrels.txt"), "--from-scale", "0-3", "--json"]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(done.stdout), time.perf_counter() - start


def main() -> int:
    if not (DATA / "published_agreement.tsv").is_file():
        print(f"skipped: {DATA} not found (the shared validation data sits beside the checkout)")
        return 0
    paper = published(DATA / "published_agreement.tsv")
    print(f"{'run':<16} {'figure':<12} {'ours':>8} {'published':>10} {'diff':>8}")
    worst = 0.0
    for run in RUNS:
        result, seconds = ours(run)
        for column, read in COLUMNS.items():
            mine, theirs = read(result), paper[run][column]
            worst = max(worst, abs(mine - theirs))
            print(f"{run:<16} {column:<12} {mine:>8.4f} {theirs:>10.4f} {mine - theirs:>+8.4f}")
        print(f"{run:<16} n={result['n']} pairs, {result['queries']} queries, CLI wall time {seconds:.2f} s "
              f"(1000 query-bootstrap resamples)")
    print(f"largest absolute difference: {worst:.5f} ({'within' if worst < 5e-4 else 'NOT within'} 3 decimals)")
    return 0 if worst < 5e-4 else 1


if __name__ == "__main__":
    sys.exit(main())
