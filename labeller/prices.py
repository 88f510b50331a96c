"""What a request costs: a price table per known model (token counts: labeller.tokens).

Prices are USD per million tokens (input, cached input, output). The built-in table was written
in November 2025 from the providers' public price pages; prices change, so users override or
extend it with `--prices FILE` (TOML or JSON, same shape as PRICES below:
``[openai."gpt-4.1-mini"] input = 0.4  cached_input = 0.1  output = 1.6``).

A model missing from the table has no cost (None): labeller reports its tokens and says the cost
is unknown rather than guessing. Anthropic cache *writes* (1.25x input) are not counted: judges
report read tokens only, and the rubric prefix is written once per few minutes at most.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from labeller.errors import ConfigError
from labeller.io.tomlfile import parse_toml
from labeller.io.validation import validation_error
from labeller.rubric import JudgePrompt
from labeller.tokens import ASCII_CHARS_PER_TOKEN as CHARS_PER_TOKEN  # noqa: F401 (re-exported)
from labeller.tokens import MESSAGE_OVERHEAD_TOKENS, conservative_tokens

# Token counting lives in labeller.tokens (tiktoken where its encoding is on disk, else a conservative count).
# A verdict is a JSON object with one to three sentences of justification and a grade.
EXPECTED_OUTPUT_TOKENS = 100


class ModelPrice(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    input: float = Field(ge=0)
    cached_input: float | None = Field(default=None, ge=0)  # None: cached input is billed as input
    output: float = Field(ge=0)

    def cost(self, input_tokens: int | None, output_tokens: int | None, cached_input_tokens: int | None = None) -> float:
        """USD for one request. `input_tokens` includes the cached ones, as both providers' usage does once summed."""
        cached = min(cached_input_tokens or 0, input_tokens or 0)
        fresh = (input_tokens or 0) - cached
        cached_rate = self.input if self.cached_input is None else self.cached_input
        return (fresh * self.input + cached * cached_rate + (output_tokens or 0) * self.output) / 1_000_000


def _p(input: float, cached_input: float, output: float) -> ModelPrice:
    return ModelPrice(input=input, cached_input=cached_input, output=output)


# Written 2025-11 from platform.openai.com/docs/pricing and docs.anthropic.com pricing (standard tier).
PRICES: dict[str, dict[str, ModelPrice]] = {
    "openai": {
        "gpt-5": _p(1.25, 0.125, 10.00),
        "gpt-5-mini": _p(0.25, 0.025, 2.00),
        "gpt-5-nano": _p(0.05, 0.005, 0.40),
        "gpt-4.1": _p(2.00, 0.50, 8.00),
        "gpt-4.1-mini": _p(0.40, 0.10, 1.60),
        "gpt-4.1-nano": _p(0.10, 0.025, 0.40),
        "gpt-4o": _p(2.50, 1.25, 10.00),
        "gpt-4o-mini": _p(0.15, 0.075, 0.60),
        "o4-mini": _p(1.10, 0.275, 4.40),
        "o3": _p(2.00, 0.50, 8.00),
    },
    "anthropic": {
        "claude-opus-4-1": _p(15.00, 1.50, 75.00),
        "claude-opus-4": _p(15.00, 1.50, 75.00),
        "claude-sonnet-4-5": _p(3.00, 0.30, 15.00),
        "claude-sonnet-4": _p(3.00, 0.30, 15.00),
        "claude-haiku-4-5": _p(1.00, 0.10, 5.00),
        "claude-3-5-haiku": _p(0.80, 0.08, 4.00),
    },
    "offline": {"lexical": _p(0.0, 0.0, 0.0)},
}

# Dated snapshots and aliases share their family's price: gpt-4.1-mini-2025-04-14,
# claude-sonnet-4-5-20250929, claude-3-5-haiku-latest.
_SNAPSHOT = re.compile(r"(-\d{4}-\d{2}-\d{2}|-\d{8}|-latest)$")


class PriceTable:
    def __init__(self, prices: dict[str, dict[str, ModelPrice]] | None = None) -> None:
        self.prices = {provider: dict(models) for provider, models in (prices or PRICES).items()}

    def lookup(self, provider: str, model: str) -> ModelPrice | None:
        models = self.prices.get(provider, {})
        return models.get(model) or models.get(_SNAPSHOT.sub("", model))

    def overridden(self, path: str | Path) -> PriceTable:
        """A copy with the prices of a user's TOML or JSON file laid over this table."""
        merged = PriceTable(self.prices)
        for provider, models in _read_price_file(Path(path)).items():
            merged.prices.setdefault(provider, {}).update(models)
        return merged


def load_prices(path: str | Path | None = None) -> PriceTable:
    """The built-in table, overridden by `path` when given."""
    table = PriceTable()
    return table.overridden(path) if path else table


def _read_price_file(path: Path) -> dict[str, dict[str, ModelPrice]]:
    if not path.is_file():
        raise ConfigError("price file not found", path=str(path))
    try:
        raw = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError("not valid UTF-8; expected a TOML or JSON price file", path=str(path)) from None
    if path.suffix.lower() != ".json":
        data = parse_toml(raw, path, ConfigError, what="not valid TOML")
    else:
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"not valid JSON ({exc.msg})", path=str(path), line=exc.lineno) from None
        if not isinstance(data, dict):
            raise ConfigError("expected a JSON object of providers", path=str(path))
    out: dict[str, dict[str, ModelPrice]] = {}
    for provider, models in data.items():
        if not isinstance(models, dict):
            raise ConfigError("expected a table of models per provider", path=str(path), field=provider)
        for model, price in models.items():
            try:
                out.setdefault(provider, {})[model] = ModelPrice.model_validate(price)
            except ValidationError as exc:
                raise validation_error(exc, path=str(path), prefix=(provider, model), error=ConfigError,
                                       expected="input, output (and optional cached_input) in USD per million "
                                                "tokens") from None
    return out


def estimate_tokens(prompt: JudgePrompt) -> int:
    """Input tokens of one request when no tokenizer is known: ASCII characters / 4, one per other
    character, plus a small per-request overhead (labeller.tokens.TokenCounter picks a real tokenizer)."""
    return conservative_tokens(prompt.system) + conservative_tokens(prompt.user) + MESSAGE_OVERHEAD_TOKENS
