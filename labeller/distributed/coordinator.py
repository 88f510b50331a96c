"""One budget and one set of rate limits for a whole Ray cluster: a named actor every worker asks before a request.

The single-process engine meters each attempt (labelling.budget.Spending) and paces it (ratelimit.RateLimits) inside
one process; on a cluster each worker would do so alone, and N workers would spend N budgets. So the run's
Spending and RateLimits live in one actor (the coordinator), and every worker's judge is wrapped in a
ClusterJudge that, before each attempt, waits for the cluster's rate limits and reserves the attempt's worst case
from the cluster's budget, and after it reports what the attempt cost. The rule is the engine's own:

    spent + possibly billed + reserved for attempts in flight anywhere + this worst case <= --max-cost

with the same Spending code deciding, so the cluster can never spend more than one process could. The worker's own
engine still meters its attempts as usual (its local check can only be looser than the cluster's); the run's
totals (requests, tokens, cost) are the coordinator's, which counts each attempt actually sent once.
"""

from __future__ import annotations

import asyncio
from typing import Any

from labeller.judges.base import Judge, JudgeReply, MalformedReplyError, TransientError
from labeller.labelling.budget import DEFAULT_OUTPUT_CAP, BudgetReached, Spending
from labeller.labelling.models import LabelStats
from labeller.prices import EXPECTED_OUTPUT_TOKENS, ModelPrice
from labeller.ratelimit import RateLimits
from labeller.rubric import JudgePrompt
from labeller.tokens import TokenCounter

# The run's totals the coordinator keeps: what was sent and paid across the cluster.
TOTALS = ("requests", "input_tokens", "output_tokens", "cached_input_tokens", "cost_usd", "unconfirmed_attempts",
          "unconfirmed_cost_usd")


class Coordinator:
    """The Ray actor (async: waiting workers do not block each other) holding the run's budget and rate limits.
    `credentials` are the driver's API key and base URL (which may hold credentials too), handed to workers
    through Ray's object store rather than their environment or a runtime_env (which Ray shows in its job
    listings and logs)."""

    def __init__(self, price: ModelPrice | None, max_cost: float | None, output_cap: int | None,
                 requests_per_minute: int | None, tokens_per_minute: int | None, credentials: dict[str, str | None],
                 attempt_seconds: float = 60.0) -> None:
        self.stats = LabelStats(cost_usd=0.0 if price is not None else None,
                                unconfirmed_cost_usd=0.0 if price is not None else None)
        self.price, self.output_cap = price, output_cap or DEFAULT_OUTPUT_CAP
        self.spending = Spending(self.stats, price, max_cost, counter=None, output_cap=output_cap)  # type: ignore[arg-type]
        self.limits = RateLimits(requests_per_minute, tokens_per_minute)
        self._credentials = credentials
        self._stopped = ""  # a fatal judge error one worker met (a bad key): the other blocks send nothing
        # No attempt lasts longer than the judge's timeout: a wait for the budget past it means a reservation whose
        # worker died in flight (kept: it may have been billed), so the budget is treated as reached, not awaited.
        self.longest_wait = attempt_seconds + 10.0

    def _worst(self, prompt_tokens: int) -> float:
        return 0.0 if self.price is None else self.price.cost(prompt_tokens, self.output_cap)

    async def permit(self, prompt_tokens: int) -> bool:
        """Wait for the rate limits, then reserve the attempt's worst case; False: the budget is reached."""
        if self.limits.active:
            await self.limits.acquire(prompt_tokens + EXPECTED_OUTPUT_TOKENS)
        try:
            await asyncio.wait_for(self.spending.reserve(self._worst(prompt_tokens)), self.longest_wait)
        except (BudgetReached, asyncio.TimeoutError):
            return False
        self.stats.requests += 1
        return True

    async def settle(self, prompt_tokens: int, usage: tuple[int | None, int | None, int | None] | None) -> None:
        """An attempt ended: `usage` as the provider reported it, or None when it may have been billed unreported."""
        worst = self._worst(prompt_tokens)
        if usage is None:
            self.spending.maybe_paid(worst)
        else:
            self.spending.paid(*usage)
        self.spending.settle(worst)

    async def totals(self) -> dict[str, Any]:
        return self.stats.model_dump(include=set(TOTALS))

    async def credentials(self) -> dict[str, str | None]:
        return self._credentials

    async def stop(self, reason: str) -> None:
        self._stopped = self._stopped or reason

    async def stopped(self) -> str:
        return self._stopped


class ClusterJudge(Judge):
    """A worker's judge (or the driver's final pass's): every attempt asks the coordinator first, as above."""

    def __init__(self, inner: Judge, coordinator: Any) -> None:
        self.inner, self.coordinator = inner, coordinator
        self.provider, self.model, self.base_url = inner.provider, inner.model, inner.base_url
        self.max_output_tokens = inner.max_output_tokens
        self.counter = TokenCounter(inner.provider, inner.model)

    def __getattr__(self, name: str) -> Any:  # anything else a judge offers (only called for missing attributes)
        return getattr(self.inner, name)

    def secrets(self) -> list[str]:
        return self.inner.secrets()

    def decoding_settings(self) -> dict[str, Any]:
        return self.inner.decoding_settings()

    async def served_identity(self) -> str | None:
        return await self.inner.served_identity()

    async def generate(self, prompt: JudgePrompt) -> JudgeReply:
        tokens = self.counter.prompt(prompt)
        if not await self.coordinator.permit.remote(tokens):
            raise BudgetReached  # the engine skips the pair and stops sending, as with its own budget
        settle = self.coordinator.settle.remote
        try:
            reply = await self.inner.generate(prompt)
        except asyncio.CancelledError:  # interrupted in flight: it may have been billed; told without waiting
            settle(tokens, None)
            raise
        except MalformedReplyError as exc:  # answered: its usage was paid
            await settle(tokens, (exc.input_tokens, exc.output_tokens, None))
            raise
        except TransientError as exc:  # billed at its worst case when it may have been
            await settle(tokens, None if exc.maybe_billed else (0, 0, 0))
            raise
        except Exception:  # a refused request or a fatal error: nothing billed
            await settle(tokens, (0, 0, 0))
            raise
        await settle(tokens, (reply.input_tokens, reply.output_tokens, reply.cached_input_tokens))
        return reply

    async def aclose(self) -> None:
        await self.inner.aclose()
