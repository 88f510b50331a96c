"""Which model a local OpenAI-compatible server serves under a name: its `GET /v1/models` entry.

llama-server answers to any model name, so the name a user typed says nothing about the GGUF behind
the URL; swapping the file behind the same URL and name must not return the old model's cached
verdicts. The identity is the entry's id with the stable details some servers add (llama-server's
`meta`: parameter count, file size, context; vLLM's `root`: the weights' path); fields that change on
every call (`created`) are left out. A server without /v1/models, or any error, gives None: the cache
key is then what it was before (the typed name), and nothing fails.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

_STABLE = ("id", "root", "meta", "owned_by")


def identity_of(entries: list[dict[str, Any]], model: str) -> str | None:
    """The served identity for `model` among a /v1/models listing, as compact JSON.

    The entry named `model` (or `model:latest`, Ollama's default tag), else the only entry; None when a
    server lists several models and none by that name (which one answers is not known from the list)."""
    named = [e for e in entries if e.get("id") in (model, f"{model}:latest")]
    chosen = named[0] if named else entries[0] if len(entries) == 1 else None
    if chosen is None:
        return None
    return json.dumps({k: chosen[k] for k in _STABLE if chosen.get(k) is not None}, sort_keys=True,
                      separators=(",", ":"))


async def served_identity(client: Any, model: str, *, timeout: float, warn: Callable[[str], None]) -> str:
    """Ask the server once; "" when it does not say (so the answer is not asked for again)."""
    try:
        page = await client.models.list(timeout=timeout)
        entries = [entry.model_dump() for entry in page.data]
    except Exception:  # no /v1/models (404), not JSON, refused, slow: the server just does not say
        return ""
    identity = identity_of(entries, model)
    ids = sorted({str(e.get("id")) for e in entries if e.get("id")})
    if ids and model not in ids and f"{model}:latest" not in ids:
        warn(f"asked for model '{model}', the server serves {', '.join(ids[:3])}"
             f"{' ...' if len(ids) > 3 else ''}; labels record the served model, and the cache key includes it")
    return identity or ""
