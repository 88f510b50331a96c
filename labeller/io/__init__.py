"""Inputs and outputs: row files, TREC runs and qrels."""

from labeller.io.inputs import read_corpus, read_gold, read_labels, read_models, read_pairs, read_queries
from labeller.io.tables import read_rows
from labeller.io.gold import read_grades
from labeller.io.trec import format_qrels, format_run, read_run, top_k
from labeller.io.writing import write_rows, write_text

__all__ = [
    "format_qrels", "format_run", "read_corpus", "read_gold", "read_labels", "read_models", "read_pairs",
    "read_grades", "read_queries", "read_rows", "read_run", "top_k", "write_rows", "write_text",
]
