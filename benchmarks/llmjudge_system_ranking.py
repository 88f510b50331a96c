"""Would LLM labels pick the same retriever as people? System-ranking agreement on real labels.

The LLMJudge test set (../shared/data/llmjudge) has NIST human grades and three real LLM label sets
for the same 4,423 passages of 25 TREC DL 2023 queries. We do not have the challenge's retrieval
runs, so we make systems that re-rank every query's judged pool (every document has a label under
both label sets, judged@k = 1):
- lexical ones: two BM25 variants (bm25s), longest passage first, chance;
- stronger ones: for the LLM label set Y being checked, the *other two* LLM label sets' grades plus
  Gaussian noise of three sizes (a spread of quality that neither the human labels nor Y built).
Then, for each Y:

    labeller evaluate --run sys1.trec ... --run sysN.trec --labels human_qrels.txt --from-scale 0-3 \
                      --labels-alt llm_<Y>.txt --metrics ndcg@10,map,mrr@10 --json

and print Kendall's tau and Spearman's rho between the human and the LLM ordering of the systems.
The published figures are for the challenge's own systems, given for scale only: different systems,
so not a target. Skips cleanly without ../shared.

    python benchmarks/llmjudge_system_ranking.py
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

LLMJUDGE = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "llmjudge"
LABEL_SETS = ["Olz-gpt4o", "h2oloo-fewself", "willia-umbrela1"]
METRICS = "ndcg@10,map,mrr@10"


def pools() -> dict[str, tuple[str, list[tuple[str, str]]]]:
    out: dict[str, tuple[str, list[tuple[str, str]]]] = {}
    for line in (LLMJUDGE / "pairs_with_text.jsonl").read_text().splitlines():
        row = json.loads(line)
        out.setdefault(row["qid"], (row["query"], []))[1].append((row["docid"], row["passage"]))
    return out


def bm25_scores(query: str, docs: list[str], method: str, k1: float, b: float) -> list[float]:
    import bm25s

    retriever = bm25s.BM25(method=method, k1=k1, b=b)
    retriever.index(bm25s.tokenize(docs, stopwords="en", show_progress=False), show_progress=False)
    vocab = retriever.vocab_dict
    tokens = [t for t in bm25s.tokenize([query], stopwords="en", return_ids=False, show_progress=False)[0]
              if t in vocab]
    return retriever.get_scores(tokens).tolist() if tokens else [0.0] * len(docs)


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for line in path.read_text().splitlines():
        q, _, d, g = line.split()
        out.setdefault(q, {})[d] = int(g)
    return out


def lexical_systems(data) -> dict[str, dict[str, dict[str, float]]]:
    rng = random.Random(0)
    runs = {name: {q: dict(zip([d for d, _ in docs], bm25_scores(text, [p for _, p in docs], method, k1, b),
                               strict=True)) for q, (text, docs) in data.items()}
            for name, (method, k1, b) in {"bm25-lucene": ("lucene", 0.9, 0.4),
                                          "bm25-robertson": ("robertson", 1.2, 0.75)}.items()}
    runs["longest-first"] = {q: {d: float(len(p)) for d, p in docs} for q, (_, docs) in data.items()}
    runs["random"] = {q: {d: rng.random() for d, _ in docs} for q, (_, docs) in data.items()}
    return runs


def label_systems(others: list[str], seed: int = 1) -> dict[str, dict[str, dict[str, float]]]:
    rng = random.Random(seed)
    runs = {}
    for other in others:
        grades = read_qrels(LLMJUDGE / f"llm_{other}.txt")
        for noise in (0.5, 1.5, 3.0):
            runs[f"{other}+noise{noise}"] = {q: {d: g + rng.gauss(0, noise) for d, g in ds.items()}
                                             for q, ds in grades.items()}
    return runs


def write_run(path: Path, run: dict[str, dict[str, float]]) -> Path:
    path.write_text("".join(f"{q} Q0 {d} {i} {s:.6f} bench\n" for q, ds in run.items()
                            for i, (d, s) in enumerate(sorted(ds.items(), key=lambda x: -x[1]), start=1)))
    return path


def published() -> dict[str, tuple[str, str]]:
    lines = (LLMJUDGE / "published_agreement.tsv").read_text().splitlines()
    header = lines[0].split("\t")
    rows = [dict(zip(header, line.split("\t"), strict=True)) for line in lines[1:]]
    return {r["submission"]: (r["kendall_tau"], r["spearman_rho"]) for r in rows}


def main() -> int:
    if not (LLMJUDGE / "pairs_with_text.jsonl").is_file():
        print(f"skipped: {LLMJUDGE} not found (../shared is only beside the developers' checkout)")
        return 0
    data = pools()
    lexical = lexical_systems(data)
    paper = published()
    print(f"systems re-rank the judged pools of {len(data)} queries; metrics {METRICS}\n")
    print("| LLM labels (Y) | systems | metric | Kendall τ | Spearman ρ | published τ / ρ (challenge systems) |")
    print("| --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        for label_set in LABEL_SETS:
            runs = {**lexical, **label_systems([s for s in LABEL_SETS if s != label_set])}
            paths = [write_run(Path(tmp) / f"{name}.trec", run) for name, run in runs.items()]
            command = ["labeller", "evaluate", *[a for p in paths for a in ("--run", str(p))],
                       "--labels", str(LLMJUDGE / "human_qrels.txt"), "--from-scale", "0-3",
                       "--labels-alt", str(LLMJUDGE / f"llm_{label_set}.txt"), "--metrics", METRICS, "--json"]
            done = subprocess.run(command, capture_output=True, text=True)
            if done.returncode:
                print(done.stderr)
                return 1
            for m in json.loads(done.stdout)["system_ranking"]["metrics"]:
                tau, rho = paper[label_set]
                print(f"| {label_set} | {len(runs)} | {m['metric']} | {m['kendall_tau']:.3f} | "
                      f"{m['spearman_rho']:.3f} | {tau} / {rho} |")
            if label_set == LABEL_SETS[-1]:
                human = json.loads(done.stdout)["system_ranking"]["metrics"][0]["primary"]
                print("\nhuman ndcg@10 of the last set of systems: "
                      + ", ".join(f"{r} {v:.3f}" for r, v in sorted(human.items(), key=lambda x: -x[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
