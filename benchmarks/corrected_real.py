"""Issue 26's check on any collection you bring: real runs, an LLM's labels of every judged pair, full human qrels.

corrected_coverage.py (LLMJudge: real LLM labels, runs made from the pools) and corrected_heldout.py (TREC DL19:
the official BM25 run and re-rankings of it, simulated judges) measure the corrected intervals on the shared data.
This runs the same measurement (corrected_coverage.measure, or corrected_differences.one_judge with
--differences: the same library calls, the same tables) on files given on the command line, so the check can be
repeated on data held out from this project, e.g. the official runs of a TREC track, its NIST qrels and an LLM's
labels of the same pool:

- truth: each run's metric under the human qrels;
- corrected: for each of many random human subsets (uniform random pairs, whole random queries, or every run's top
  K with certainty plus random pairs), `labeller evaluate --gold SUBSET`'s estimate and 95% intervals;
- human only: the same estimator from the same subset with a judge that knows nothing.

The human qrels are cut to the pairs the LLM labelled (the pool the correction is about; a gold pair outside it
would be warned about, not used); how many were dropped is printed. Documents a run retrieved outside the pool
are not relevant under both, as trec_eval and the corrected path treat them.

    python benchmarks/corrected_real.py --human qrels.txt --labels llm.txt --runs runs/*.trec \\
        [--scale 0-3] [--subsets 100] [--pairs 300,1200] [--queries 10,20] [--top 10:1600] [--exponential]
        [--differences] [--seed 0]
    python benchmarks/corrected_real.py    # with no files: LLMJudge's NIST qrels and Olz-gpt4o's labels, with
                                           # corrected_coverage.py's six runs written as TREC files and read back
Skips cleanly without ../shared when no files are given.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from corrected_coverage import EXPONENTIAL, METRICS, measure, systems  # noqa: E402
from corrected_differences import designs, one_judge  # noqa: E402
from llmjudge_system_ranking import LLMJUDGE  # noqa: E402

from labeller.evaluation.qrels import Judgments, load_judgments  # noqa: E402
from labeller.evaluation.runs import load_run, to_trec  # noqa: E402

DEMO_JUDGE = "Olz-gpt4o"


def within(human: Judgments, labels: Judgments) -> tuple[Judgments, int]:
    """The human qrels cut to the pairs the LLM labelled, and how many pairs that dropped."""
    kept = {q: {d: g for d, g in docs.items() if d in labels.grades.get(q, {})} for q, docs in human.grades.items()}
    kept = {q: docs for q, docs in kept.items() if docs}
    dropped = sum(map(len, human.grades.values())) - sum(map(len, kept.values()))
    return Judgments(kept, human.source, human.kind, human.scale), dropped


def demo_files(tmp: Path) -> tuple[Path, Path, list[Path]]:
    """LLMJudge's qrels, one real LLM label set, and corrected_coverage.py's six runs as TREC files."""
    paths = []
    for ranking in systems(DEMO_JUDGE):
        paths.append(tmp / f"{ranking.name}.trec")
        paths[-1].write_text(to_trec(ranking))
    return LLMJUDGE / "human_qrels.txt", LLMJUDGE / f"llm_{DEMO_JUDGE}.txt", paths


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--human", type=Path, help="the full human qrels (the truth)")
    parser.add_argument("--labels", type=Path, help="the LLM's labels of the same pool (qrels, or labeller's labels)")
    parser.add_argument("--runs", type=Path, nargs="*", default=[], help="run files (TREC, JSONL, CSV, Parquet)")
    parser.add_argument("--scale", default="0-3", help="the qrels' grade scale (as `labeller evaluate --scale`)")
    parser.add_argument("--subsets", type=int, default=100)
    parser.add_argument("--pairs", default="300,1200", help="gold sizes in uniform random pairs (comma-separated)")
    parser.add_argument("--queries", default="10,20", help="gold sizes in whole random queries (comma-separated)")
    parser.add_argument("--top", default="", help="K:pairs, comma-separated: every run's top K with certainty "
                                                   "plus random pairs of the rest (plan top:K)")
    parser.add_argument("--exponential", action="store_true", help="also nDCG@10 with exponential gains")
    parser.add_argument("--differences", action="store_true", help="differences between every pair of runs")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    given = (args.human, args.labels, args.runs)
    if any(given) and not all(given):
        parser.error("--human, --labels and --runs go together (or none of them, for the LLMJudge demo)")
    with tempfile.TemporaryDirectory() as tmp:
        if not any(given):
            if not (LLMJUDGE / "human_qrels.txt").is_file():
                print(f"skipped: {LLMJUDGE} is absent (the shared validation data) and no files were given")
                return 0
            args.human, args.labels, args.runs = demo_files(Path(tmp))
        labels = load_judgments(args.labels, args.scale)
        human, dropped = within(load_judgments(args.human, args.scale, role="gold"), labels)
        rankings = [load_run(path) for path in args.runs]
        print(f"# {args.labels.name} against {args.human.name}: {len(human.grades)} queries, "
              f"{sum(map(len, human.grades.values()))} pairs ({dropped} human pairs the LLM did not label dropped), "
              f"{len(rankings)} runs: {', '.join(r.name for r in rankings)}")
        if args.differences:
            one_judge(args.labels.name, labels, human, rankings, args.subsets,
                      designs(args.pairs, args.queries, args.top), args.seed, exponential=args.exponential)
            return 0
        gains = ((METRICS, "linear"), (EXPONENTIAL, "exponential")) if args.exponential else ((METRICS, "linear"),)
        measure(args.labels.name, labels, human, rankings, args.subsets,
                [int(x) for x in args.pairs.split(",") if x], [int(x) for x in args.queries.split(",") if x],
                args.seed, [tuple(int(y) for y in x.split(":")) for x in args.top.split(",") if x], None, gains)
    return 0


if __name__ == "__main__":
    sys.exit(main())
