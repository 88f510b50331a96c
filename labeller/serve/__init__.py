"""The retrieval-test HTTP API behind `labeller serve` (needs the `serve` extra: fastapi, uvicorn, rapidfuzz)."""

from labeller.serve.app import create_app, create_app_from_file, run_variant
from labeller.serve.config import RetrieverSpec, ServeConfig, build_retrievers, load_config
from labeller.serve.matching import Match, VariantMetrics, match_passage, similarity, variant_metrics
from labeller.serve.runretriever import RunRetriever, UnknownQueryError
from labeller.serve.schemas import JudgeRequest, JudgeResponse, RetrievalTestRequest, RetrievalTestResponse
from labeller.serve.textstats import enhance, keywords, rerank, token_count

__all__ = [
    "JudgeRequest", "JudgeResponse", "Match", "RetrievalTestRequest", "RetrievalTestResponse", "RetrieverSpec",
    "RunRetriever", "ServeConfig", "UnknownQueryError", "VariantMetrics", "build_retrievers", "create_app",
    "create_app_from_file", "enhance", "keywords", "load_config", "match_passage", "rerank", "run_variant",
    "similarity", "token_count", "variant_metrics",
]
