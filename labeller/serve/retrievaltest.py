"""One retrieval test (the seed's contract, docs/serve.md): run the agent's retriever for the original
query and, when asked, the enhanced one; normalise its scores into 0..1 (scores.py) and drop the
documents below `score_threshold`; credit ground truths to the passages left (matching.py, with
`match_threshold`); score each variant and the whole (score_of_adequate_context)."""

from __future__ import annotations

import math
import time

from fastapi import HTTPException
from fastapi.exceptions import RequestValidationError

from labeller.errors import LabellerError
from labeller.retrieval.base import Retriever
from labeller.serve.matching import assign, candidate_matches, variant_metrics
from labeller.serve.runretriever import UnknownQueryError
from labeller.serve.scores import Normalisation, normalise_scores
from labeller.serve.schemas import (AnalysisData, RetrievalTestRequest, RetrievalTestResponse, RetrievedDocument,
                                    VariantResult)
from labeller.serve.textstats import RERANK_POOL, enhance, keywords, rerank, token_count


def run_variant(retriever: Retriever, query_type: str, query: str, req: RetrievalTestRequest,
                normalisation: Normalisation = "max") -> VariantResult:
    pool = req.top_k * RERANK_POOL if req.enable_rerank else req.top_k
    start = time.perf_counter()
    hits = list(retriever.search(query, pool))[:pool]
    latency_ms = (time.perf_counter() - start) * 1000
    broken = next((h for h in hits if not math.isfinite(h.score)), None)
    if broken is not None:  # the configured retriever's fault, not the caller's: no 422, no crash on serialising
        raise HTTPException(502, f"retriever '{retriever.name}' returned score {broken.score} for document "
                                 f"'{broken.doc_id}'; expected a finite number")
    # Normalised over the whole pool, then filtered: score_threshold is the least score a returned document has.
    scored = {id(h): s for h, s in zip(hits, normalise_scores([h.score for h in hits], normalisation))}
    hits = [h for h in hits if scored[id(h)] >= req.score_threshold]
    ranked = rerank(query, hits, req.top_k) if req.enable_rerank else [(h, None) for h in hits[:req.top_k]]
    candidates = [candidate_matches(hit.text, hit.doc_id, req.ground_truth_texts, req.ground_truth_doc_ids,
                                    req.match_threshold) for hit, _ in ranked]
    assigned = assign(candidates, len(req.ground_truth_texts) + len(req.ground_truth_doc_ids))
    documents = [RetrievedDocument(keywords=keywords(hit.text), chars=len(hit.text), score=round(scored[id(hit)], 6),
                                   tokens=token_count(hit.text), text=hit.text, rank=rank, doc_id=hit.doc_id,
                                   raw_score=hit.score, rerank_score=rerank_score, matches=[found] if found else [])
                 for rank, ((hit, rerank_score), found) in enumerate(zip(ranked, assigned), start=1)]
    metrics = variant_metrics(assigned, len(req.ground_truth_texts) + len(req.ground_truth_doc_ids), req.top_k)
    return VariantResult(query=query, query_type=query_type, documents=documents, metrics=metrics,
                         latency_ms=round(latency_ms, 3))


def retrieval_test(agent_id: str, retriever: Retriever, req: RetrievalTestRequest,
                   normalisation: Normalisation = "max") -> RetrievalTestResponse:
    """One retrieval test: the original query, and the enhanced one when asked (see docs/serve.md)."""
    if not req.ground_truth_texts and not req.ground_truth_doc_ids:
        raise RequestValidationError([{"loc": ("body", "ground_truth_texts"), "type": "too_short",
                                       "msg": "List should have at least 1 item (or give ground_truth_doc_ids)"}])
    queries = [("original", req.query)]
    if req.enable_query_enhancement:
        queries.append(("enhanced", enhance(req.query)))
    try:
        result = [run_variant(retriever, kind, text, req, normalisation) for kind, text in queries]
    except UnknownQueryError as exc:
        raise invalid_field("query", exc, "unknown_query") from None
    # The best share of the ground truths that one query's top_k context holds.
    adequate = max(v.metrics.recall for v in result)
    return RetrievalTestResponse(
        result=result, agent_id=agent_id, ignored_fields=req.ignored_fields,
        analysis_data=AnalysisData(enhanced_queries=[text for _, text in queries],
                                   score_of_adequate_context=round(adequate, 4)))


def invalid_field(field: str, exc: LabellerError, kind: str) -> RequestValidationError:
    message = getattr(exc, "detail", None) or str(exc)
    return RequestValidationError([{"loc": ("body", field), "msg": message, "type": kind}])
