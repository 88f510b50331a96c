"""The one retry policy for judge calls. Providers only classify failures; this decides what to do.

- TransientError (429, 5xx, timeout, dropped connection): wait and retry. The server's Retry-After
  wins when it gave one (capped at max_retry_after); otherwise exponential backoff with jitter, so
  many workers hit by the same burst do not come back in lockstep.
- MalformedReplyError (bad JSON, grade 9, missing field, refusal): retry at once — the server is
  fine, waiting would not change the answer — but at most max_malformed times in total.
- Anything else (JudgeError: bad key, unknown model) propagates on the first attempt.

Every attempt counts against max_attempts, whatever went wrong, so one pair can never cost more
than max_attempts requests.

A run shares one CircuitBreaker across its pairs: when `breaker_threshold` attempts in a row could
not even connect (a closed port, a dead server, a wrong host), with no reply from the server in
between, it opens, every retry loop of the run stops at once (sleeping ones are woken) with
CircuitOpenError, and the run stops instead of spending seconds of backoff on every pair.
"""

from __future__ import annotations

import asyncio
import random

from pydantic import BaseModel, ConfigDict, Field
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, wait_exponential_jitter

from labeller.errors import JudgeError
from labeller.judges.base import Judge, JudgeReply, MalformedReplyError, RejectedRequestError, TransientError
from labeller.rubric import JudgePrompt


class RetryPolicy(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    max_attempts: int = Field(default=6, ge=1)  # total attempts per pair, transient and malformed together
    max_malformed: int = Field(default=3, ge=1)  # give up sooner when the model keeps answering badly
    initial_wait: float = Field(default=0.5, ge=0)
    max_wait: float = Field(default=30.0, ge=0)
    max_retry_after: float = Field(default=60.0, ge=0)
    breaker_threshold: int = Field(default=8, ge=1)  # attempts in a row that could not connect: stop the run


class RetryExhaustedError(Exception):
    """A pair could not be graded within the policy. `reason` is the last failure's reason.

    input_tokens/output_tokens add up what the malformed replies consumed: they were paid for.
    """

    def __init__(self, reason: str, attempts: int, input_tokens: int = 0, output_tokens: int = 0) -> None:
        super().__init__(f"gave up after {attempts} attempt{'s' if attempts != 1 else ''}: {reason}")
        self.reason, self.attempts = reason, attempts
        self.input_tokens, self.output_tokens = input_tokens, output_tokens


class PairRejectedError(RetryExhaustedError):
    """The provider refused this pair's request outright (HTTP 400/413/422); it was not retried."""


class CircuitOpenError(JudgeError):
    """The judge's server could not be reached by many attempts in a row: the run stops, nothing more is sent."""


class CircuitBreaker:
    """Counts attempts in a row that could not connect, across every pair of a run.

    A reply of any kind (a verdict, a malformed one, an HTTP error) resets the count; timeouts and
    dropped connections leave it as it is (the server was there, or may have been).
    """

    def __init__(self, threshold: int) -> None:
        self.threshold, self.streak = threshold, 0
        self.error: CircuitOpenError | None = None
        self._opened: asyncio.Event | None = None

    @property
    def opened(self) -> asyncio.Event:
        if self._opened is None:  # created on first use, inside the running event loop
            self._opened = asyncio.Event()
        return self._opened

    def check(self) -> None:
        if self.error is not None:
            raise self.error

    def record(self, exc: BaseException | None) -> None:
        if isinstance(exc, TransientError) and exc.kind in ("timeout", "dropped"):
            return
        if not (isinstance(exc, TransientError) and exc.kind == "unreachable"):
            self.streak = 0
            return
        self.streak += 1
        if self.streak >= self.threshold and self.error is None:
            self.error = CircuitOpenError(f"{exc.reason}, {self.streak} attempts in a row; the server looks down, "
                                          "so nothing more was sent")
            self.opened.set()

    async def sleep(self, seconds: float) -> None:
        """Back off, but wake at once when the breaker opens."""
        try:
            await asyncio.wait_for(self.opened.wait(), timeout=seconds)
        except asyncio.TimeoutError:
            pass


class _Wait:
    def __init__(self, policy: RetryPolicy) -> None:
        self.policy = policy
        self.backoff = wait_exponential_jitter(multiplier=policy.initial_wait, max=policy.max_wait,
                                               jitter=policy.initial_wait)

    def __call__(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, MalformedReplyError):
            return 0.0
        if isinstance(exc, TransientError) and exc.retry_after is not None:
            # Honour the server, plus a little jitter above it (never below) to spread the herd.
            wait = min(max(exc.retry_after, 0.0), self.policy.max_retry_after)
            return wait + random.uniform(0, 0.1 * wait)
        return self.backoff(state)


class _Stop:
    def __init__(self, policy: RetryPolicy) -> None:
        self.policy = policy
        self.malformed = 0

    def __call__(self, state: RetryCallState) -> bool:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, MalformedReplyError):
            self.malformed += 1
        return state.attempt_number >= self.policy.max_attempts or self.malformed >= self.policy.max_malformed


async def generate_with_retry(judge: Judge, prompt: JudgePrompt, policy: RetryPolicy,
                              breaker: CircuitBreaker | None = None) -> tuple[JudgeReply, int]:
    """Grade one prompt under the policy. Returns (reply, attempts used) or raises RetryExhaustedError,
    CircuitOpenError when the run's breaker opened, or whatever fatal error the judge raised."""
    attempts, spent_in, spent_out = 0, 0, 0
    retrying = AsyncRetrying(
        stop=_Stop(policy), wait=_Wait(policy),
        retry=retry_if_exception_type((TransientError, MalformedReplyError)), reraise=True,
        **({"sleep": breaker.sleep} if breaker is not None else {}),
    )
    try:
        async for attempt in retrying:
            with attempt:
                if breaker is not None:
                    breaker.check()
                attempts = attempt.retry_state.attempt_number
                try:
                    reply = await judge.generate(prompt)
                except Exception as exc:
                    if isinstance(exc, MalformedReplyError):
                        spent_in, spent_out = spent_in + exc.input_tokens, spent_out + exc.output_tokens
                    if breaker is not None:
                        breaker.record(exc)
                    raise
                if breaker is not None:
                    breaker.record(None)
    except (TransientError, MalformedReplyError) as exc:
        raise RetryExhaustedError(exc.reason, attempts, spent_in, spent_out) from None
    except RejectedRequestError as exc:
        raise PairRejectedError(exc.reason, attempts, spent_in, spent_out) from None
    return reply, attempts
