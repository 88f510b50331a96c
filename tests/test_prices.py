"""The price table: known models, dated snapshots, user overrides, unknown models, token estimates."""

from __future__ import annotations

import math

import pytest

from labeller.errors import ConfigError
from labeller.prices import CHARS_PER_TOKEN, MESSAGE_OVERHEAD_TOKENS, ModelPrice, estimate_tokens, load_prices
from labeller.rubric import JudgePrompt


def test_known_models_and_their_dated_snapshots_have_prices():
    table = load_prices()
    mini = table.lookup("openai", "gpt-4.1-mini")
    assert (mini.input, mini.cached_input, mini.output) == (0.40, 0.10, 1.60)
    assert table.lookup("openai", "gpt-4.1-mini-2025-04-14") == mini
    assert table.lookup("anthropic", "claude-sonnet-4-5-20250929") == table.lookup("anthropic", "claude-sonnet-4-5")
    for provider, model in [("openai", m) for m in ("gpt-4.1", "gpt-4.1-nano", "gpt-4o", "gpt-4o-mini", "gpt-5",
                                                    "gpt-5-mini")] + [("anthropic", "claude-haiku-4-5"),
                                                                      ("anthropic", "claude-opus-4-1")]:
        assert table.lookup(provider, model) is not None, model


def test_unknown_models_have_no_price_rather_than_a_wrong_one():
    table = load_prices()
    assert table.lookup("openai", "llama3.1:8b") is None
    assert table.lookup("openai", "gpt-4.1-mini-finetuned") is None  # not a dated snapshot
    assert table.lookup("anthropic", "gpt-4.1") is None  # prices are per provider


def test_cost_counts_cached_input_at_its_own_rate():
    price = ModelPrice(input=2.0, cached_input=0.5, output=8.0)
    assert price.cost(1_000_000, 0) == pytest.approx(2.0)
    assert price.cost(1_000_000, 1_000_000, 400_000) == pytest.approx(0.6 * 2.0 + 0.4 * 0.5 + 8.0)
    assert ModelPrice(input=2.0, output=8.0).cost(1_000_000, 0, 1_000_000) == pytest.approx(2.0)
    assert price.cost(None, None) == 0.0


def test_a_user_file_overrides_and_extends_the_table(tmp_path):
    toml = tmp_path / "prices.toml"
    toml.write_text('[openai."gpt-4.1-mini"]\ninput = 1.0\noutput = 2.0\n\n[openai."llama3.1:8b"]\ninput = 0\noutput = 0\n')
    table = load_prices(toml)
    assert table.lookup("openai", "gpt-4.1-mini") == ModelPrice(input=1.0, output=2.0)
    assert table.lookup("openai", "llama3.1:8b").cost(1000, 1000) == 0.0
    assert table.lookup("openai", "gpt-4o") == load_prices().lookup("openai", "gpt-4o")
    js = tmp_path / "prices.json"
    js.write_text('{"anthropic": {"claude-next": {"input": 3, "cached_input": 0.3, "output": 15}}}')
    assert load_prices(js).lookup("anthropic", "claude-next").output == 15


@pytest.mark.parametrize("text, match", [
    ('[openai."gpt-x"]\ninput = -1\noutput = 2\n', "openai.gpt-x.input"),
    ('[openai."gpt-x"]\ninput = 1\n', "openai.gpt-x.output"),
    ('[openai."gpt-x"]\ninput = 1\noutput = 2\ncurrency = "EUR"\n', "openai.gpt-x.currency"),
    ('openai = 3\n', "field 'openai'"),
    ('not toml at all [', r"prices.toml:1: not valid TOML"),
])
def test_a_bad_price_file_is_a_config_error_naming_the_field(tmp_path, text, match):
    path = tmp_path / "prices.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=match):
        load_prices(path)


def test_estimate_tokens_is_the_conservative_count_plus_overhead():
    prompt = JudgePrompt(system="s" * 400, user="u" * 200)
    assert estimate_tokens(prompt) == math.ceil(400 / CHARS_PER_TOKEN) + math.ceil(200 / CHARS_PER_TOKEN) \
        + MESSAGE_OVERHEAD_TOKENS
    # CJK at 1.5 tokens a character (3 UTF-8 bytes), dates by their digit groups: never a quarter of them
    assert estimate_tokens(JudgePrompt(system="", user="办公椅" * 100)) == 450 + MESSAGE_OVERHEAD_TOKENS
    assert estimate_tokens(JudgePrompt(system="", user="2026-01-13")) == 6 + MESSAGE_OVERHEAD_TOKENS  # 202|6|-|01|-|13
