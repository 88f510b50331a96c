"""--fill-holes: label exactly the unjudged pairs in the top k before scoring.

A new retriever that returns documents nobody graded would otherwise be scored as if they were
not relevant. The holes of every run (and of a baseline run) in the top `depth` of each judged
query go through the labelling engine and its verdict cache, so a pair is paid for once: a second
evaluation sends nothing. Existing judgments always win over new labels. Queries without any
judgment are left alone: they are not part of the evaluation (trec_eval skips them too).
"""

from __future__ import annotations

from pathlib import Path

from labeller.errors import BadInputError
from labeller.evaluation.judged import holes
from labeller.evaluation.qrels import Judgments
from labeller.evaluation.results import HoleFilling
from labeller.evaluation.runs import Ranking
from labeller.records import Pair


def find_holes(rankings: list[Ranking], judgments: Judgments, depth: int) -> list[Pair]:
    """Unjudged pairs in the top `depth` of every judged query of every ranking, once each."""
    found: dict[tuple[str, str], Pair] = {}
    for ranking in rankings:
        judged_queries = sorted(judgments.grades.keys() & ranking.docs.keys())
        for pair in holes(ranking, judgments, depth, judged_queries):
            found.setdefault((pair.query_id, pair.doc_id), pair)
    return list(found.values())


def fill_holes(rankings: list[Ranking], judgments: Judgments, depth: int, *, judge: str, queries_path: str | Path,
               corpus_path: str | Path, rubric: str | Path | None = "general",
               cache_dir: str | Path = ".labeller-cache",
               base_url: str | None = None, options=None, out_path: str | Path | None = None,
               timeout: float = 60.0) -> tuple[Judgments, HoleFilling, list]:
    """Label the holes; return (judgments with the new labels, what happened, the failures)."""
    from labeller.cache import VerdictCache
    from labeller.io.inputs import read_corpus, read_queries
    from labeller.io.tables import table_format, write_rows
    from labeller.judges.registry import make_judge
    from labeller.labelling import label_pairs
    from labeller.labelling.faults import run_labelling
    from labeller.rubric import load_rubric

    if depth < 1:
        raise BadInputError(f"--depth {depth} must be at least 1", field="depth")
    if out_path is not None:
        table_format(out_path)  # a bad extension fails before anything is sent
    pairs = find_holes(rankings, judgments, depth)
    rubric_obj = load_rubric(rubric)
    record = HoleFilling(judge=judge, rubric=rubric_obj.name, depth=depth, holes=len(pairs), labelled=0,
                         from_cache=0, new=0, failed=0, cost_usd=0.0)
    if not pairs:  # nothing to send: no judge is built, so no API key is needed
        return judgments, record, []
    queries, corpus = read_queries(queries_path), read_corpus(corpus_path)
    _check_known(pairs, queries, corpus, rankings, queries_path, corpus_path)
    judge_obj = make_judge(judge, base_url=base_url, timeout=timeout)
    record.judge = judge_obj.name

    async def _label(sender):
        try:
            with VerdictCache(cache_dir) as cache:
                return await label_pairs(pairs, queries, corpus, sender, rubric_obj, cache, options)
        finally:
            await sender.aclose()

    run = run_labelling(_label, judge_obj, cache_dir)
    if out_path is not None:
        record.saved_to = str(write_rows(out_path, (label.model_dump() for label in run.labels)))
    s = run.stats
    record = record.model_copy(update=dict(labelled=len(run.labels), from_cache=s.cached, new=s.new,
                                           failed=len(run.failures), cost_usd=s.cost_usd,
                                           stopped="budget" if s.budget_stopped else s.stopped_by))
    return judgments.with_labels(run.labels), record, run.failures


def _check_known(pairs: list[Pair], queries: dict, corpus: dict, rankings: list[Ranking],
                 queries_path: str | Path, corpus_path: str | Path) -> None:
    for pair in pairs:
        source = next((r.source for r in rankings if pair.query_id in r.docs), None)
        if pair.query_id not in queries:
            raise BadInputError(f"query '{pair.query_id}' of the run has holes to fill but is not in the queries "
                                f"file {queries_path}; expected every judged query there", path=source,
                                field="query_id")
        if pair.doc_id not in corpus:
            raise BadInputError(f"document '{pair.doc_id}' (query '{pair.query_id}') is not in the corpus file "
                                f"{corpus_path}; expected every retrieved document there", path=source,
                                field="doc_id")
