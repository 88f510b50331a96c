"""The retrieval-test HTTP API behind `labeller serve` (needs the `serve` extra: fastapi, fastapi-offline, uvicorn, rapidfuzz)."""

from labeller.serve.app import create_app, create_app_from_file
from labeller.serve.retrievaltest import retrieval_test, run_variant
from labeller.serve.config import RetrieverSpec, ServeConfig, build_retrievers, load_config
from labeller.serve.matching import Match, VariantMetrics, assign, candidate_matches, similarity, text_match, variant_metrics
from labeller.serve.runretriever import RunRetriever, UnknownQueryError
from labeller.serve.schemas import JudgeRequest, JudgeResponse, RetrievalTestRequest, RetrievalTestResponse
from labeller.serve.textstats import enhance, keywords, rerank, token_count

__all__ = [
    "JudgeRequest", "JudgeResponse", "Match", "assign", "candidate_matches", "RetrievalTestRequest", "RetrievalTestResponse", "RetrieverSpec",
    "RunRetriever", "ServeConfig", "UnknownQueryError", "VariantMetrics", "build_retrievers", "create_app",
    "create_app_from_file", "enhance", "keywords", "load_config", "rerank", "retrieval_test", "run_variant",
    "similarity", "text_match", "token_count", "variant_metrics",
]
