"""labeller: graded LLM relevance labels you can trust."""

from importlib.metadata import PackageNotFoundError, version as _version

try:  # the installed distribution's version; a bare source tree (no install) falls back to the pinned one
    __version__ = _version("labeller-relevance")
except PackageNotFoundError:  # pragma: no cover - only without any install
    __version__ = "0.1.0"
