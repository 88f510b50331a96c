"""What a Ray worker does with one block of pairs: the library's own labelling entry (labelling.job.run_judge) over
the block, against the shared store, with the judge asking the cluster's coordinator before each attempt.

A block is a pandas frame of pairs with the query and document each needs as JSON (so a worker on another machine
needs no input file): it is planned against the store (what is held is skipped), its missing pairs are judged by
the same judge classes, retry policy and engine as a single-process run, and each verdict is in the store the
moment it settles. The worker returns counts only; the labels are written by the driver from the store.
"""

from __future__ import annotations

import json
from typing import Any, Iterator

from pydantic import BaseModel, ConfigDict

from labeller.labelling.models import LabelOptions
from labeller.prices import PriceTable
from labeller.records import Doc, Pair, Query
from labeller.rubric import Rubric

BLOCK_COLUMNS = ("query_id", "doc_id", "query", "doc")
COUNTS = ("pairs", "new", "cached", "failed", "skipped")


class BlockJob(BaseModel):
    """Everything a worker needs besides the block and the coordinator; no secret (that comes from the coordinator)."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)
    judge_spec: str
    timeout: float = 60.0
    temperature: float = 0.0
    output_mode: str | None = None
    rubric: Rubric
    prices: PriceTable
    options: LabelOptions  # the run's, without ray and rate limits (the coordinator holds those)
    cache_spec: str
    identity: str  # the driver's judge as it enters cache keys (judge_identity): a worker's must be the same


def block_frames(pairs, queries, corpus, block_size: int) -> Iterator[Any]:
    """The pairs, in input order, as one frame per block, each row with its query's and document's JSON."""
    import pandas as pd

    query_json: dict[str, str] = {}
    for lo in range(0, len(pairs), block_size):
        block = pairs[lo:lo + block_size]
        rows = []
        for pair in block:
            query = query_json.get(pair.query_id)
            if query is None:
                query = query_json[pair.query_id] = _json(queries[pair.query_id])
            rows.append((pair.query_id, pair.doc_id, query, _json(corpus[pair.doc_id])))
        yield pd.DataFrame(rows, columns=list(BLOCK_COLUMNS))


def judge_identity(judge) -> str:
    """What of a judge enters its cache keys, besides the prompt: name, base URL (masked) and decoding settings."""
    return json.dumps([judge.name, judge.base_url, judge.decoding_settings()], sort_keys=True)


def _json(record: Query | Doc) -> str:
    """A query or document as JSON (a lean reader's record holds its fields as a read-only mapping)."""
    return json.dumps({"text": record.text, "fields": dict(record.fields)}, ensure_ascii=False)


def judge_block(batch: Any, *, job: BlockJob, coordinator: Any) -> Any:
    """Ray Data's map_batches function: label one block through the store; one row of counts back."""
    import pandas as pd
    import ray

    from labeller.distributed.coordinator import ClusterJudge
    from labeller.judges.registry import make_judge
    from labeller.labelling.job import run_judge

    pairs = [Pair(query_id=q, doc_id=d) for q, d in zip(batch["query_id"], batch["doc_id"])]
    queries = {q: Query(query_id=q, **json.loads(text)) for q, text in zip(batch["query_id"], batch["query"])}
    corpus = {d: Doc(doc_id=d, **json.loads(text)) for d, text in zip(batch["doc_id"], batch["doc"])}
    stopped = ray.get(coordinator.stopped.remote())
    if stopped:  # another block's judge failed for good (a bad key): send nothing more
        return _not_sent(len(pairs), stopped)
    credentials = ray.get(coordinator.credentials.remote())
    judge = make_judge(job.judge_spec, base_url=credentials["base_url"], timeout=job.timeout,
                       temperature=job.temperature, output_mode=job.output_mode, api_key=credentials["api_key"])
    if judge_identity(judge) != job.identity:  # its verdicts would be stored under keys the driver never reads
        reason = f"a worker's judge is not the driver's: {judge_identity(judge)} against {job.identity}"
        ray.get(coordinator.stop.remote(reason))
        return _not_sent(len(pairs), reason)
    run = run_judge(pairs, queries, corpus, ClusterJudge(judge, coordinator), job.rubric, job.prices, job.options,
                    job.cache_spec)
    s = run.stats
    if s.stopped_by:
        ray.get(coordinator.stop.remote(s.stopped_by))
    return pd.DataFrame([{"pairs": len(pairs), "new": s.new, "cached": s.cached, "failed": s.failed,
                          "skipped": s.skipped, "budget_stopped": s.budget_stopped, "stopped_by": s.stopped_by or ""}])


def _not_sent(pairs: int, reason: str) -> Any:
    import pandas as pd

    return pd.DataFrame([{**dict.fromkeys(COUNTS, 0), "pairs": pairs, "skipped": pairs, "budget_stopped": False,
                          "stopped_by": reason}])
