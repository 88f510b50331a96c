"""What a run spends, per attempt, and whether the next attempt still fits in --max-cost.

Every attempt is metered, retries included: a verdict or a malformed reply by the usage it reports;
an attempt the provider may have billed without reporting usage (a timeout, a connection dropped
after sending, a 5xx) at its worst case, because its real cost is never learnt. Before each attempt
the worst case of that attempt (input tokens counted as in labeller.tokens, at the full input price,
plus the judge's whole output cap) is reserved; the attempt is sent only if

    spent + possibly billed + reserved for attempts in flight + this worst case <= --max-cost.

When it does not fit but attempts are in flight, it waits for them to settle (they usually cost
less than their worst case); when nothing is in flight, the budget is reached. So a run never
spends more than --max-cost, unless a provider bills beyond the worst case (an input count that
tiktoken could not check, for models without a local tokenizer).
"""

from __future__ import annotations

import asyncio

from labeller.judges.base import Judge, JudgeReply, MalformedReplyError, TransientError
from labeller.labelling.models import LabelStats
from labeller.prices import ModelPrice
from labeller.rubric import JudgePrompt
from labeller.tokens import TokenCounter

DEFAULT_OUTPUT_CAP = 400  # judges that send no output cap: assume the HTTP judges' default


class BudgetReached(Exception):
    """The next attempt would not fit in --max-cost, with nothing in flight to wait for."""


class Spending:
    def __init__(self, stats: LabelStats, price: ModelPrice | None, max_cost: float | None, counter: TokenCounter,
                 output_cap: int | None) -> None:
        self.stats, self.price, self.max_cost, self.counter = stats, price, max_cost, counter
        self.output_cap = output_cap or DEFAULT_OUTPUT_CAP
        self.reserved, self.in_flight = 0.0, 0
        self._settled: asyncio.Event | None = None

    def worst_case(self, prompt: JudgePrompt) -> float:
        if self.price is None:
            return 0.0
        return self.price.cost(self.counter.prompt(prompt), self.output_cap)

    def committed(self) -> float:
        return (self.stats.cost_usd or 0.0) + (self.stats.unconfirmed_cost_usd or 0.0)

    def fits(self, cost: float) -> bool:
        return self.max_cost is None or self.committed() + self.reserved + cost <= self.max_cost + 1e-12

    async def reserve(self, cost: float) -> None:
        while not self.fits(cost):
            if self.in_flight == 0:
                raise BudgetReached
            if self._settled is None:
                self._settled = asyncio.Event()
            await self._settled.wait()
        self.reserved += cost
        self.in_flight += 1

    def settle(self, cost: float) -> None:
        self.reserved = max(self.reserved - cost, 0.0)
        self.in_flight -= 1
        if self._settled is not None:  # wake every waiter; each checks again
            self._settled.set()
            self._settled = None

    def paid(self, tokens_in: int | None, tokens_out: int | None, cached_in: int | None) -> float | None:
        """Usage the provider reported for one attempt; returns its cost."""
        s = self.stats
        s.input_tokens += tokens_in or 0
        s.output_tokens += tokens_out or 0
        s.cached_input_tokens += cached_in or 0
        if self.price is None:
            return None
        cost = self.price.cost(tokens_in, tokens_out, cached_in)
        s.cost_usd = (s.cost_usd or 0.0) + cost
        return cost

    def maybe_paid(self, worst: float) -> None:
        """An attempt that may have been billed with no usage reported: counted at its worst case."""
        self.stats.unconfirmed_attempts += 1
        if self.price is not None:
            self.stats.unconfirmed_cost_usd = (self.stats.unconfirmed_cost_usd or 0.0) + worst


class MeteredJudge(Judge):
    """Wraps the judge a run sends through: each attempt is checked against the budget and metered."""

    def __init__(self, inner: Judge, spending: Spending) -> None:
        self.inner, self.spending = inner, spending
        self.provider, self.model, self.base_url = inner.provider, inner.model, inner.base_url

    def decoding_settings(self):
        return self.inner.decoding_settings()

    async def generate(self, prompt: JudgePrompt) -> JudgeReply:
        spending = self.spending
        worst = spending.worst_case(prompt)
        await spending.reserve(worst)
        spending.stats.requests += 1  # every attempt, retries included
        try:
            reply = await self.inner.generate(prompt)
        except MalformedReplyError as exc:
            spending.paid(exc.input_tokens, exc.output_tokens, None)
            raise
        except TransientError as exc:
            if exc.maybe_billed:
                spending.maybe_paid(worst)
            raise
        except asyncio.CancelledError:  # interrupted in flight: it may have been billed
            spending.maybe_paid(worst)
            raise
        finally:
            spending.settle(worst)  # after the cost above is counted: no moment where it is in neither
        spending.paid(reply.input_tokens, reply.output_tokens, reply.cached_input_tokens)
        return reply
