"""labeller: graded LLM relevance labels you can trust."""

__version__ = "0.1.0"
