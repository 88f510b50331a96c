"""labeller: graded LLM relevance labels you can trust.

The public API (see labeller.api): label / alabel, agree, evaluate, compare, probe, judge_answers, link_outcomes,
export. They are imported on first use, so `import labeller` stays light for the command line.
"""

from importlib.metadata import PackageNotFoundError, version as _version

try:  # the installed distribution's version; a bare source tree (no install) falls back to the pinned one
    __version__ = _version("labeller-relevance")
except PackageNotFoundError:  # pragma: no cover - only without any install
    __version__ = "0.1.0"

__all__ = ["EvaluationResult", "OutcomesResult", "__version__", "agree", "alabel", "compare", "evaluate", "export",
           "judge_answers", "label", "link_outcomes", "probe"]


def __getattr__(name: str):
    if name in __all__ and name != "__version__":
        from labeller import api

        return getattr(api, name)
    raise AttributeError(f"module 'labeller' has no attribute {name!r}")
