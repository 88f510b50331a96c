"""The cache key: a hash of everything that changes a verdict and nothing that doesn't.

In: provider, model, base URL (as the judge shows it: credentials masked, see labeller.redaction),
decoding settings actually sent, schema version and the rendered prompt (which carries the rubric
text and the query and document text and fields).
Out: timeouts, retries, concurrency, rate limits, API keys, passwords and tokens in the base URL.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from labeller.judges.base import SCHEMA_VERSION
from labeller.rubric import JudgePrompt


def key_material(*, provider: str, model: str, base_url: str | None, settings: dict[str, Any],
                 prompt: JudgePrompt, schema_version: str = SCHEMA_VERSION) -> str:
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
    return json.dumps(material, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def cache_key(*, provider: str, model: str, base_url: str | None, settings: dict[str, Any],
              prompt: JudgePrompt, schema_version: str = SCHEMA_VERSION) -> str:
    blob = key_material(provider=provider, model=model, base_url=base_url, settings=settings, prompt=prompt,
                        schema_version=schema_version)
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
