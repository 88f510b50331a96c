"""Does the regression gate fire on degraded runs and stay quiet on unchanged ones? (TREC DL19)

Takes the official BM25 run as the baseline and gates, through the CLI with --fail-on-regression:
- an unchanged copy (rewritten, so only the bytes differ) -> must pass;
- the run with each query's top 100 shuffled, five seeds -> must fail;
- milder damage reported as measured, with no expectation: top 10 shuffled, and the first two
  documents of every query swapped;
- on the first 5 judged queries only (a small sample, where no test reaches significance unless
  every query lost): the unchanged copy must pass, the top 100 shuffled must fail, and the run
  with 2 of the 5 queries removed (vanished, scored 0) must fail.
Skips cleanly without ../shared.

    python benchmarks/dl19_gate.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from labeller.evaluation.runs import Ranking, load_run, shuffle_top, to_trec

DL19 = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "trec-dl19"
QRELS, RUN = DL19 / "qrels-pass.txt", DL19 / "run.bm25base_p.gz"
METRICS = "ndcg@10,recall@100,map"


def swap_first_two(ranking: Ranking) -> Ranking:
    docs = {q: ds[1:2] + ds[:1] + ds[2:] for q, ds in ranking.docs.items()}
    return Ranking(name="top-2-swapped", source=ranking.source, docs=docs)


def gate(run: Path, qrels: Path = QRELS) -> tuple[int, dict]:
    command = ["labeller", "evaluate", "--run", str(run), "--baseline", str(RUN), "--labels", str(qrels),
               "--metrics", METRICS, "--threshold", "ndcg@10=0.02", "--fail-on-regression", "--json"]
    done = subprocess.run(command, capture_output=True, text=True)
    return done.returncode, json.loads(done.stdout)


def main() -> int:
    if not QRELS.is_file() or not RUN.is_file():
        print(f"skipped: {DL19} not found (../shared is only beside the developers' checkout)")
        return 0
    base = load_run(RUN)
    cases = [("unchanged copy", base, 0)]
    cases += [(f"top 100 shuffled, seed {s}", shuffle_top(base, 100, seed=s), 1) for s in range(5)]
    cases += [("top 10 shuffled, seed 0", shuffle_top(base, 10, seed=0), None),
              ("top 2 swapped", swap_first_two(base), None)]
    five = sorted({line.split()[0] for line in QRELS.read_text().splitlines()})[:5]
    vanished = Ranking(name="vanished", source="", docs={q: d for q, d in base.docs.items() if q not in five[:2]})
    small = [("5 queries: unchanged copy", base, 0), ("5 queries: top 100 shuffled", shuffle_top(base, 100, seed=0), 1),
             ("5 queries: 2 of them vanished", vanished, 1)]
    failures = 0
    print(f"baseline {RUN.name}; metrics {METRICS}; thresholds ndcg@10=0.02, others 0.01; "
          "one-sided randomization test, alpha 0.05\n")
    print("| run | exit | gate | ndcg@10 drop (p) | map drop (p) | recall@100 drop (p) | expected |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        subset = Path(tmp) / "qrels-5.txt"
        subset.write_text("".join(line + "\n" for line in QRELS.read_text().splitlines() if line.split()[0] in five))
        for name, ranking, expected in cases + small:
            path = Path(tmp) / "run.trec"
            path.write_text(to_trec(ranking))
            code, result = gate(path, subset if name.startswith("5 queries") else QRELS)
            checks = {c["metric"]: c for c in result["gate"]["checks"]}
            cells = [f"{checks[m]['drop']:+.4f} (p {checks[m]['p_value']:.4f}"
                     + (", threshold alone)" if checks[m]["decided_by"] == "threshold alone" else ")")
                     for m in ("ndcg@10", "map", "recall@100")]
            verdict = "FAILED" if not result["gate"]["passed"] else "passed"
            wanted = {0: "pass", 1: "fail", None: "–"}[expected]
            if expected is not None and code != expected:
                failures += 1
            print(f"| {name} | {code} | {verdict} | {' | '.join(cells)} | {wanted} |")
    print(f"\n{'OK' if not failures else f'{failures} cases did not behave as expected'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
