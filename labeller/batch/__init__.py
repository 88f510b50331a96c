"""Provider batch APIs: one interface (base.BatchClient), one file per provider, `batch_client` to pick one.

    labeller/batch/base.py       the interface, the limits, and splitting requests to fit them
    labeller/batch/files.py      the OpenAI batch JSONL format (also vLLM run-batch's)
    labeller/batch/openai.py     /v1/files + /v1/batches
    labeller/batch/anthropic.py  /v1/messages/batches
"""

from __future__ import annotations

from labeller.batch.base import BatchClient, BatchLimits, BatchStatus, Outcome, split
from labeller.errors import ConfigError
from labeller.judges.base import Judge

CLIENTS = {  # provider -> "module:class"; a new provider is one file and one line here
    "openai": "labeller.batch.openai:OpenAIBatches",
    "anthropic": "labeller.batch.anthropic:AnthropicBatches",
}


def batch_client(judge: Judge, limits: BatchLimits | None = None) -> BatchClient:
    """The batch API of the judge's provider. ConfigError for a judge that has none (offline:lexical)."""
    import importlib

    target = CLIENTS.get(judge.provider)
    if target is None:
        raise ConfigError(f"--batch needs a provider with a batch API ({', '.join(CLIENTS)}); "
                          f"{judge.name} has none: label without --batch")
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)(judge, limits)


__all__ = ["BatchClient", "BatchLimits", "BatchStatus", "CLIENTS", "Outcome", "batch_client", "split"]
