"""Self-consistency against the fake API's noisy judge: does the aggregate recover the planted grade,
and does the sample agreement track the noise? Also counts requests, so N samples cost N per pair.

    python benchmarks/self_consistency.py [--pairs 200] [--noise 0,0.1,0.2,0.3,0.4,0.5] [--samples 1,3,5]

The fake (tests/fakeapi.py) answers each pair's planted grade, moved one grade up or down with
probability `noise` when the request's temperature is above 0. Printed per row: the share of pairs whose
label grade is the planted one, and the mean sample agreement (None at N = 1, shown as 1).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from fakeapi import FakeAPI  # noqa: E402

from labeller.labelling import LabelInputs, LabelOptions, label_job  # noqa: E402


def write_inputs(folder: Path, pairs: int) -> None:
    (folder / "rubric.md").write_text('+++\nname = "noisy"\n+++\n# Grades\n5: exactly ... 1: not relevant.\n')
    rows = {"queries": [{"query_id": f"q{i}", "text": f"question {i}"} for i in range(20)],
            "corpus": [{"doc_id": f"d{i}", "text": f"doc {i} [[grade:{i % 5 + 1}]]"} for i in range(pairs)],
            "pairs": [{"query_id": f"q{i % 20}", "doc_id": f"d{i}"} for i in range(pairs)]}
    for name, items in rows.items():
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in items))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--noise", default="0,0.1,0.2,0.3,0.4,0.5")
    parser.add_argument("--samples", default="1,3,5")
    args = parser.parse_args()
    os.environ["OPENAI_API_KEY"] = "sk-benchmark-fake"
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_inputs(folder, args.pairs)
        print("aggregate noise N requests recovered mean_sample_agreement")
        for aggregate in ("median", "majority"):
            for noise in map(float, args.noise.split(",")):
                for n in map(int, args.samples.split(",")):
                    with FakeAPI(noise=noise, noise_seed=7) as api, tempfile.TemporaryDirectory() as cache:
                        run = label_job(LabelInputs(queries=folder / "queries.jsonl", corpus=folder / "corpus.jsonl",
                                                    pairs=folder / "pairs.jsonl", rubric=folder / "rubric.md",
                                                    cache=cache, out=folder / "out.jsonl", base_url=api.openai_url,
                                                    temperature=0.7,
                                                    options=LabelOptions(samples=n, aggregate=aggregate,
                                                                         progress=False)),
                                        "openai:gpt-4.1-mini")
                    recovered = sum(lb.grade == int(lb.doc_id[1:]) % 5 + 1 for lb in run.labels) / args.pairs
                    agreement = sum(1 if lb.sample_agreement is None else lb.sample_agreement
                                    for lb in run.labels) / args.pairs
                    print(f"{aggregate} {noise:.1f} {n} {api.total} {recovered:.3f} {agreement:.3f}")


if __name__ == "__main__":
    main()
