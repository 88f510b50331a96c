"""How far the offline judge (offline:lexical, a lexical-overlap heuristic, not an LLM) agrees with people.

Runs the real CLI twice per data set, as a user would:

    labeller label --judge offline:lexical --rubric R ...   then   labeller agree --json ...

1. The bundled transactions sample against its human gold (gold/transactions.jsonl), rubric transactions.
2. The LLMJudge test set (TREC DL 2023 passages, NIST grades 0-3 mapped to 1-4), rubric general,
   read from ../shared beside the checkout; skipped with a note when absent.

    python benchmarks/offline_judge_agreement.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LLMJUDGE = REPO / ".." / "shared" / "data" / "llmjudge"
FIGURES = ("kappa", "kappa_linear", "kappa_quadratic", "alpha_ordinal", "spearman", "exact_agreement", "within_one")


def labeller(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "labeller", *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"labeller {args[0]} failed ({done.returncode}): {done.stderr[-2000:]}")
    return done.stdout


def agreement(name: str, tmp: Path, queries: Path, corpus: Path, pairs: Path, rubric: str, gold: Path,
              *gold_options: str) -> None:
    labels = tmp / f"{name}.jsonl"
    labeller("label", "--queries", str(queries), "--corpus", str(corpus), "--pairs", str(pairs),
             "--judge", "offline:lexical", "--rubric", rubric, "--cache", str(tmp / "cache"), "--out", str(labels))
    result = json.loads(labeller("agree", "--labels", str(labels), "--gold", str(gold), "--json", *gold_options))
    ci = result.get("ci", {})
    print(f"\n{name}: {result['n']} pairs, {result['queries']} queries")
    for figure in FIGURES:
        low_high = ci.get(figure)
        interval = f"  [{low_high['low']:.3f}, {low_high['high']:.3f}]" if low_high else ""
        print(f"  {figure:16s} {result[figure]:.3f}{interval}")


def llmjudge_inputs(tmp: Path) -> tuple[Path, Path, Path]:
    queries, corpus, pairs = {}, {}, []
    with open(LLMJUDGE / "pairs_with_text.jsonl", encoding="utf-8") as rows:
        for line in rows:
            row = json.loads(line)
            queries[row["qid"]] = {"query_id": row["qid"], "text": row["query"]}
            corpus[row["docid"]] = {"doc_id": row["docid"], "text": row["passage"]}
            pairs.append({"query_id": row["qid"], "doc_id": row["docid"]})
    paths = []
    for name, rows in (("queries", queries.values()), ("corpus", corpus.values()), ("pairs", pairs)):
        path = tmp / f"llmjudge-{name}.jsonl"
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        paths.append(path)
    return paths[0], paths[1], paths[2]


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        sample = REPO / "pipelines" / "sample"
        gold = REPO / "gold" / "transactions.jsonl"
        agreement("transactions sample", tmp, sample / "queries.jsonl", sample / "corpus.jsonl", gold,
                  "transactions", gold)
        if not (LLMJUDGE / "pairs_with_text.jsonl").is_file():
            print("\nLLMJudge: ../shared/data/llmjudge not found beside the checkout; skipped")
            return
        queries, corpus, pairs = llmjudge_inputs(tmp)
        agreement("LLMJudge (TREC DL 2023)", tmp, queries, corpus, pairs, "general",
                  LLMJUDGE / "human_qrels.txt", "--from-scale", "0-3")


if __name__ == "__main__":
    main()
