"""The dry-run estimate: tokens and cost of the pairs a run would send, at the prices that will apply.

The system prompt (preamble, rubric, worked examples) is the same for every pair, and both
providers bill a repeated prefix at the cached-input rate once it is long enough:

- OpenAI caches automatically any prompt prefix of at least 1,024 tokens, in steps of 128 tokens;
- Anthropic caches the system block labeller marks with cache_control, once it reaches the model's
  minimum (1,024 tokens for Sonnet 4/4.5 and Opus 4/4.1; 2,048 for Sonnet 4.6 and Haiku 3/3.5;
  4,096 for Haiku 4.5 and Opus 4.5/4.6).

The estimate assumes the first `concurrency` requests miss the cache (they start together, before
any of them has written it) and every later one hits it; cache writes (Anthropic bills 1.25x
input for them) and cache expiry in long pauses are not counted. Output is estimated at
EXPECTED_OUTPUT_TOKENS per pair. What was assumed is returned as notes the CLI prints.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from labeller.prices import EXPECTED_OUTPUT_TOKENS, ModelPrice
from labeller.rubric import JudgePrompt
from labeller.tokens import TokenCounter

OPENAI_MIN_PREFIX, OPENAI_STEP = 1024, 128
# Minimum cacheable block per model family; every other Claude model: 1,024.
ANTHROPIC_MIN_PREFIX = (("claude-haiku-4-5", 4096), ("claude-opus-4-5", 4096), ("claude-opus-4-6", 4096),
                        ("claude-sonnet-4-6", 2048), ("claude-3-5-haiku", 2048), ("claude-3-haiku", 2048))


def cached_prefix(provider: str, model: str, system_tokens: int) -> tuple[int, str | None]:
    """(tokens of each request the provider's cache will serve once warm, why), or (0, why not)."""
    if provider == "openai":
        if system_tokens < OPENAI_MIN_PREFIX:
            return 0, (f"no cached-input price assumed: the shared rubric prefix is about {system_tokens:,} tokens, "
                       f"under the {OPENAI_MIN_PREFIX:,} OpenAI needs before it caches a prefix")
        cached = system_tokens // OPENAI_STEP * OPENAI_STEP
        return cached, (f"{cached:,} tokens per request assumed cached (the shared rubric prefix is about "
                        f"{system_tokens:,} tokens; OpenAI caches prefixes of {OPENAI_MIN_PREFIX:,}+ tokens "
                        f"automatically, in steps of {OPENAI_STEP})")
    if provider == "anthropic":
        minimum = next((n for prefix, n in ANTHROPIC_MIN_PREFIX if model.startswith(prefix)), 1024)
        if system_tokens < minimum:
            return 0, (f"no cached-input price assumed: the rubric system block is about {system_tokens:,} tokens, "
                       f"under the {minimum:,} {model} needs before Anthropic caches it")
        return system_tokens, (f"{system_tokens:,} tokens per request assumed cached (the rubric system block, "
                               f"marked cache_control; {model} caches blocks of {minimum:,}+ tokens)")
    return 0, None


@dataclass
class Estimate:
    requests: int = 0
    input_tokens: int = 0
    cached_input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0
    notes: list[str] = field(default_factory=list)


def estimate_requests(prompts: Iterable[JudgePrompt], *, provider: str, model: str, price: ModelPrice | None,
                      counter: TokenCounter, concurrency: int) -> Estimate:
    """The estimate of sending these prompts, read once in order (a run's are rendered a chunk at a time)."""
    est = Estimate()
    cache_note = None
    for i, prompt in enumerate(prompts):
        tokens = counter.prompt(prompt)
        est.input_tokens += tokens
        est.requests += 1
        cached = 0
        if i >= concurrency:
            cached, cache_note = cached_prefix(provider, model, counter.system(prompt))
            cached = min(cached, tokens)
        elif cache_note is None:
            _, cache_note = cached_prefix(provider, model, counter.system(prompt))
        est.cached_input_tokens += cached
        if price is not None:
            est.cost_usd = (est.cost_usd or 0.0) + price.cost(tokens, EXPECTED_OUTPUT_TOKENS, cached)
    est.output_tokens = EXPECTED_OUTPUT_TOKENS * est.requests
    cold = min(concurrency, est.requests)
    if price is None:
        est.cost_usd = None
    est.notes.append(f"input tokens: {counter.method}")
    if cache_note:
        if est.cached_input_tokens:
            cache_note += f"; the first {cold} requests (sent together, --concurrency) assumed to miss the cache"
        est.notes.append(cache_note)
    if price is not None and price.cached_input is None and est.cached_input_tokens:
        est.notes.append("no cached-input price is known for this model: cached tokens priced as input")
    est.notes.append(f"output: {EXPECTED_OUTPUT_TOKENS} tokens per pair assumed (a short justification and a grade)")
    return est
