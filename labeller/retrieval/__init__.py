"""Retrievers built on real libraries, producing runs to evaluate."""
