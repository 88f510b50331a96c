"""The cache key: a hash of everything that changes a verdict and nothing that doesn't.

In: provider, model, base URL (as the judge shows it: credentials masked, see labeller.redaction),
decoding settings actually sent (the output mode's response_format or tools among them), schema
version, the rendered prompt (which carries the rubric text and the query and document text and
fields), and what a local server says it serves under the model name (its /v1/models entry) when it
says anything: another GGUF behind the same URL and name is another judge. Keys without a served
identity are exactly what they were before it existed, so OpenAI's API keeps its cached verdicts.
Out: timeouts, retries, concurrency, rate limits, API keys, passwords and tokens in the base URL.

`sample` (self-consistency, `--samples N`): sample k > 0 of a pair is its own verdict, so k is hashed
too; sample 0 is hashed exactly as before, so caches written without --samples stay valid.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from labeller.judges.base import SCHEMA_VERSION
from labeller.rubric import JudgePrompt


def cache_key(*, provider: str, model: str, base_url: str | None, settings: dict[str, Any],
              prompt: JudgePrompt, schema_version: str = SCHEMA_VERSION, sample: int = 0,
              served: str | None = None) -> str:
    material = {
        "schema": schema_version,
        "provider": provider,
        "model": model,
        "base_url": (base_url or "").rstrip("/"),
        "settings": settings,
        "system": prompt.system,
        "user": prompt.user,
    }
    if sample:
        material["sample"] = sample
    if served:
        material["served"] = served
    blob = json.dumps(material, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()
