"""The claim-verdict judge against people on real data: WiCE (Kamoi et al., EMNLP 2023), 1,070 items: 358
Wikipedia claims, each with chunks of the web page it cites (one item per claim and chunk), labelled supported /
partially_supported / not_supported by people.

Read from ../shared/data/wice beside the checkout (validation data, never copied into the repository); skipped
with a note when absent. Runs the claim_verdict task through the one engine (labeller.labelling.task_run) with the
offline judge (no key): each evidence sentence is a passage. Our rubric counts a partly supported claim as
not_supported, so the human labels map supported -> supported, partially_supported / not_supported ->
not_supported. Printed: kappa, accuracy, confusion and P/R/F1 of unsupported-claim detection
(labeller.answers.agreement), and, for reference, the same figures for the authors' GPT-4 run on its 100 items
(1.0 -> supported, else not_supported).

    python benchmarks/answers_wice.py [--judge openai:gpt-4.1-mini] [--limit N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
# ../shared beside the checkout (a worktree sits one level deeper: ../../shared)
WICE = next((p for p in (REPO / ".." / "shared" / "data" / "wice", REPO / ".." / ".." / "shared" / "data" / "wice")
             if p.is_dir()), REPO / ".." / "shared" / "data" / "wice")

from labeller.answers.agreement import verdict_agreement  # noqa: E402
from labeller.judges.registry import make_judge  # noqa: E402
from labeller.labelling.models import LabelOptions  # noqa: E402
from labeller.labelling.task_run import judge_task  # noqa: E402
from labeller.store import open_store  # noqa: E402
from labeller.tasks.claims import ClaimItem, ClaimVerdictTask, load_claim_rubric  # noqa: E402


def human(label: str) -> str:
    return "supported" if label == "supported" else "not_supported"


def show(name: str, pairs: list[tuple[str, str]]) -> None:
    kappa, accuracy, confusion, u = verdict_agreement(pairs)
    print(f"\n{name}: {len(pairs)} claims; kappa {kappa}, accuracy {accuracy}")
    print(f"  unsupported-claim detection: precision {u.precision}, recall {u.recall}, F1 {u.f1} "
          f"(tp {u.tp}, fp {u.fp}, fn {u.fn}, tn {u.tn})")
    print("  confusion, rows human, columns judge (supported, contradicted, not_supported):")
    for label, row in zip(("supported", "contradicted", "not_supported"), confusion):
        print(f"    {label:14s} {row}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--judge", default="offline:lexical")
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args()
    data = WICE / "claims_test_oracle_chunks.jsonl"
    if not data.is_file():
        print(f"skipped: {data} not found (WiCE validation data lives in ../shared)")
        return
    rows = [json.loads(line) for line in data.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = rows[: args.limit] if args.limit else rows
    key = lambda row: f"{row['meta']['id']}:{row['meta']['chunk_idx']}"  # noqa: E731 - one item per claim and chunk
    items = [ClaimItem(query_id=key(row), claim_id=f"{key(row)}#1", question="(WiCE claim)",
                       claim=row["claim"], passages=[(f"e{i}", text) for i, text in enumerate(row["evidence"], 1)])
             for row in rows]
    with tempfile.TemporaryDirectory() as tmp, open_store(Path(tmp) / "cache") as store:
        async def go():
            judge = make_judge(args.judge)
            try:
                return await judge_task(ClaimVerdictTask(items, load_claim_rubric()), judge, store,
                                        LabelOptions(concurrency=8))
            finally:
                await judge.aclose()
        run = asyncio.run(go())
    judged = {row["query_id"]: row["verdict"]["verdict"] for row in run.rows}
    gold = {key(row): human(row["label"]) for row in rows}
    show(f"{args.judge} on WiCE test ({len(run.failures)} failures)",
         [(gold[i], judged[i]) for i in gold if i in judged])
    scores = WICE / "llm_gpt-4-0613_scores.json"
    if scores.is_file():
        gpt4 = json.loads(scores.read_text())
        by_id = {row["meta"]["id"]: row["label"] for row in reversed(rows)}  # a claim's label: its first chunk's
        show("the authors' GPT-4 run (reference)",
             [(human(by_id[i]), "supported" if s == 1.0 else "not_supported") for i, s in gpt4.items() if i in by_id])


if __name__ == "__main__":
    main()
