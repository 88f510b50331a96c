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
from collections.abc import Callable
from typing import Any

from labeller.judges.base import SCHEMA_VERSION
from labeller.rubric import JudgePrompt


def key_material(*, provider: str, model: str, base_url: str | None, settings: dict[str, Any],
                 prompt: JudgePrompt, schema_version: str = SCHEMA_VERSION, sample: int = 0,
                 served: str | None = None) -> str:
    """The exact text cache_key hashes."""
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
    return json.dumps(material, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def cache_key(*, provider: str, model: str, base_url: str | None, settings: dict[str, Any],
              prompt: JudgePrompt, schema_version: str = SCHEMA_VERSION, sample: int = 0,
              served: str | None = None) -> str:
    blob = key_material(provider=provider, model=model, base_url=base_url, settings=settings, prompt=prompt,
                        schema_version=schema_version, sample=sample, served=served)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


_HOLE = "\x00labeller:user\x00"  # stands in for the user text; JSON writes it as an escape no real text yields


def user_keyer(**fields: Any) -> Callable[[str], str]:
    """cache_key(**fields) as a function of the user text alone (fields["prompt"] gives the system text),
    for a run whose prompts share everything else. The same bytes are hashed: the JSON around the user
    text is written once and the hash of its head reused, so a pair costs one string escape and one
    hash update instead of a whole json.dumps of the material."""
    system = fields.pop("prompt").system
    blob = key_material(**fields, prompt=JudgePrompt(system=system, user=_HOLE))
    hole = json.dumps(_HOLE, ensure_ascii=False)
    if blob.count(hole) != 1:  # never expected; the whole computation is always right
        return lambda user: cache_key(**fields, prompt=JudgePrompt(system=system, user=user))
    head, tail = (part.encode("utf-8") for part in blob.split(hole))
    start = hashlib.sha256(head)
    quote = json.JSONEncoder(ensure_ascii=False).encode  # json.dumps(user, ensure_ascii=False), built once

    def key(user: str) -> str:
        digest = start.copy()
        digest.update(quote(user).encode("utf-8"))
        digest.update(tail)
        return digest.hexdigest()

    return key
