"""Retrievers built on real libraries, producing runs to evaluate."""

from labeller.retrieval.base import Hit, Retriever
from labeller.retrieval.bm25 import BM25Retriever
from labeller.retrieval.dense import DenseRetriever
from labeller.retrieval.registry import available_retrievers, make_retriever, register_retriever
from labeller.retrieval.runs import make_run
from labeller.retrieval.tokenize import tokenize

__all__ = ["BM25Retriever", "DenseRetriever", "Hit", "Retriever", "available_retrievers", "make_retriever",
           "make_run", "register_retriever", "tokenize"]
