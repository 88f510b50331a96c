"""fill_stores: every pair's verdict written straight into stores, as a cached rerun will look it up: much faster
than grading the pairs first. The cached-rerun benchmarks (run_all.bench_cached, memory_slope) start from it."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

JUDGE_CACHED = "offline:lexical"
BATCH = 10_000


def fill_stores(folder: Path, specs: list[str], workers: int = 1) -> int:
    """Every pair's verdict, under the key `labeller label` computes, written into each store (a directory, a
    PostgreSQL URL) BATCH at a time; a verdict a store holds already is left alone, so a fill cut short is
    resumed. With `workers` > 1 the inputs are read once and that many forked processes each build every
    workers-th pair's verdict (building and keying a verdict is Python, one core's work a process: five million
    took 57 min in one on the loaded machine). They write one at a time (a lock): four writers always
    contending left SQLite no moment without a reader to restart its WAL, which grew to 8 GB by 2.2M verdicts."""
    from labeller.cache_key import user_keyer
    from labeller.io.inputs import pair_ids, read_corpus, read_pairs, read_queries
    from labeller.judges.base import SCHEMA_VERSION
    from labeller.judges.registry import make_judge
    from labeller.records import Verdict
    from labeller.rubric import JudgePrompt, load_rubric
    from labeller.store import CachedVerdict, now_iso, open_store
    from labeller.store.copy import copy_new

    judge = make_judge(JUDGE_CACHED)
    rubric, settings = load_rubric("general"), judge.decoding_settings()
    queries, corpus = read_queries(folder / "queries.jsonl"), read_corpus(folder / "corpus.jsonl", lean=True)
    key_of = user_keyer(provider=judge.provider, model=judge.model, base_url=judge.base_url, settings=settings,
                        prompt=JudgePrompt(system=rubric.system_prompt(), user=""))
    query_ids, doc_ids = pair_ids(read_pairs(folder / "pairs.jsonl", lean=True))

    def fill(part: int) -> None:
        stores = [open_store(spec) for spec in specs]  # in the process writing: a connection is not forked
        try:
            batch = []
            for n in range(part + 1, len(doc_ids) + 1, workers):
                qid, did = query_ids[n - 1], doc_ids[n - 1]
                user = rubric.user_text(rubric.query_block(queries[qid]),
                                        rubric.block("document", *corpus.text_and_fields(did)))
                batch.append(CachedVerdict(
                    cache_key=key_of(user), query_id=qid, doc_id=did,
                    verdict=Verdict(grade=1 + n % 5, justification=f"stored verdict {n} for the benchmark"),
                    judge=judge.name, provider=judge.provider, model=judge.model, settings=settings,
                    schema_version=SCHEMA_VERSION, rubric=rubric.name, rubric_version=rubric.version,
                    input_tokens=400, output_tokens=30, cost_usd=0.0002, latency_s=0.2, created_at=now_iso()))
                if len(batch) == BATCH or n + workers > len(doc_ids):
                    with writing:
                        for store in stores:
                            copy_new(batch, store)
                    batch = []
        finally:
            for store in stores:
                store.close()

    forked = multiprocessing.get_context("fork")
    writing = forked.Lock()
    if workers == 1:
        fill(0)
        return len(doc_ids)
    for spec in specs:  # created (a directory's database, PostgreSQL's tables) before the writers race to
        open_store(spec).close()
    writers = [forked.Process(target=fill, args=(part,)) for part in range(workers)]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()
    failed = [writer.exitcode for writer in writers if writer.exitcode]
    if failed:
        raise RuntimeError(f"fill_stores: {len(failed)} of {workers} writers failed (exit codes {failed})")
    return len(doc_ids)
