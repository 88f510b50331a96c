"""Tokens and USD per 1,000 pairs, from the tokens each verdict recorded when it was bought.

The figure is the mean over the verdicts that recorded their tokens, so a rerun served from the cache
reports the same cost as the run that paid. USD is computed with labeller.prices: the synchronous
rates, and the batch fraction the price table gives (None when the model has no batch price, and
both None when the model has no price at all: never a guessed cost).
"""

from __future__ import annotations

from collections.abc import Sequence

from labeller.bench.models import Cost
from labeller.prices import PriceTable
from labeller.records import Label

PER = 1000


def _per_1k(total: float, n: int) -> float:
    return total / n * PER


def cost_per_1k(labels: Sequence[Label], prices: PriceTable, provider: str, model: str) -> Cost:
    price = prices.lookup(provider, model)
    metered = [label for label in labels if label.input_tokens is not None or label.output_tokens is not None]
    n = len(metered)
    if price is not None and price.input == price.output == 0:  # a free judge (offline) costs nothing, tokens or not
        return Cost(pairs_with_tokens=n, input_tokens_per_1k=None, output_tokens_per_1k=None, usd_per_1k=0.0,
                    usd_per_1k_batch=None if price.batch is None else 0.0, priced=True)
    if not n:
        return Cost(pairs_with_tokens=0, input_tokens_per_1k=None, output_tokens_per_1k=None, usd_per_1k=None,
                    usd_per_1k_batch=None, priced=price is not None)
    inputs = sum(label.input_tokens or 0 for label in metered)
    outputs = sum(label.output_tokens or 0 for label in metered)
    sync = batch = None
    if price is not None:
        sync = _per_1k(sum(price.cost(label.input_tokens, label.output_tokens, label.cached_input_tokens)
                           for label in metered), n)
        if price.batch is not None:
            batch = _per_1k(sum(price.cost(label.input_tokens, label.output_tokens, label.cached_input_tokens,
                                           batch=True) for label in metered), n)
    return Cost(pairs_with_tokens=n, input_tokens_per_1k=_per_1k(inputs, n), output_tokens_per_1k=_per_1k(outputs, n),
                usd_per_1k=sync, usd_per_1k_batch=batch, priced=price is not None)
