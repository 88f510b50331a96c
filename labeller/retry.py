"""The one retry policy for judge calls. Providers only classify failures; this decides what to do.

- TransientError (429, 5xx, timeout, dropped connection): wait and retry. The server's Retry-After
  wins when it gave one (capped at max_retry_after); otherwise exponential backoff with jitter, so
  many workers hit by the same burst do not come back in lockstep.
- MalformedReplyError (bad JSON, grade 9, missing field, refusal): retry at once — the server is
  fine, waiting would not change the answer — but at most max_malformed times in total.
- Anything else (JudgeError: bad key, unknown model) propagates on the first attempt.

Every attempt counts against max_attempts, whatever went wrong, so one pair can never cost more
than max_attempts requests.

A malformed reply is retried with a short corrective note at the end of the system text (what was
wrong with the last reply): at temperature 0 the same prompt would get the same reply again. The note
is not part of the cache key, which the engine computes from the pair's own prompt: the verdict is
still the answer to that prompt.

A run shares one CircuitBreaker across its pairs. It opens, every retry loop of the run stops at once
(sleeping ones are woken) with CircuitOpenError, and the run stops instead of paying for every pair:
- when `breaker_threshold` attempts in a row could not even connect (a closed port, a dead server, a
  wrong host), with no reply from the server in between;
- when the first `refusal_threshold` answers of the run are the same HTTP error, whatever its status
  (llama-cpp-python answers a json_schema request with HTTP 500 "Input should be 'text' or
  'json_object'"), before any verdict came back: the request itself is wrong, and the error says what
  the server said. Rate limits and "busy/loading" statuses (429, 503, 529) are not counted.
"""

from __future__ import annotations

import asyncio
import random
import re
from collections.abc import Awaitable, Callable
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_attempt, wait_exponential_jitter

from labeller.errors import JudgeError
from labeller.judges.base import Judge, JudgeReply, MalformedReplyError, RejectedRequestError, TransientError
from labeller.rubric import JudgePrompt

T = TypeVar("T")


class RetryPolicy(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    max_attempts: int = Field(default=6, ge=1)  # total attempts per pair, transient and malformed together
    max_malformed: int = Field(default=3, ge=1)  # give up sooner when the model keeps answering badly
    initial_wait: float = Field(default=0.5, ge=0)
    max_wait: float = Field(default=30.0, ge=0)
    max_retry_after: float = Field(default=60.0, ge=0)
    breaker_threshold: int = Field(default=8, ge=1)  # attempts in a row that could not connect: stop the run
    refusal_threshold: int = Field(default=4, ge=1)  # the same error for the first N answers, no verdict: stop


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
    """The judge's server could not be reached by many attempts in a row, or refused the first requests of
    the run all the same way: the run stops, nothing more is sent."""


# Statuses that say "not now" rather than "not like this": never read as a refusal of the request's form.
_BUSY_STATUSES = {408, 409, 425, 429, 503, 529}
# Request ids, timestamps and counts in a server's message do not make two refusals different.
_VARYING = re.compile(r"[0-9a-f]{6,}|\d+", re.IGNORECASE)


class CircuitBreaker:
    """Counts attempts in a row that could not connect, across every pair of a run, and watches the
    first answers of the run for one refusal repeated.

    A reply of any kind (a verdict, a malformed one, an HTTP error) resets the connect count; timeouts
    and dropped connections leave it as it is (the server was there, or may have been). The refusal
    watch ends for good at the first verdict or malformed reply: the server takes the request.
    """

    def __init__(self, threshold: int, refusal_threshold: int = 4) -> None:
        self.threshold, self.streak = threshold, 0
        self.refusal_threshold, self.refusals, self.refusal = refusal_threshold, 0, ""
        self.answered = False  # a verdict or a malformed reply came back: the request's form is fine
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
        self._watch_refusals(exc)
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

    def _watch_refusals(self, exc: BaseException | None) -> None:
        if self.answered or self.error is not None:
            return
        if exc is None or isinstance(exc, MalformedReplyError):
            self.answered = True
            return
        status = exc.status if isinstance(exc, TransientError) and exc.kind == "status" else None
        if status is None or status in _BUSY_STATUSES:
            return
        signature = _VARYING.sub("#", exc.reason)
        if signature != self.refusal:
            self.refusal, self.refusals = signature, 0
        self.refusals += 1
        if self.refusals >= self.refusal_threshold:
            self.error = CircuitOpenError(f"the first {self.refusals} answers were all the same error and no verdict "
                                          f"came back: {exc.reason}; nothing more was sent")
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


def corrected(prompt: JudgePrompt, reason: str) -> JudgePrompt:
    """The prompt for the attempt after a malformed reply: the same, with what was wrong said at the end of
    the system text (the pair's user text is untouched; the rubric prefix stays cacheable)."""
    note = (f"\n\nYour previous reply to this pair could not be used ({reason}). Reply again in the required "
            "format, with a non-empty justification and an integer grade.")
    return prompt.model_copy(update={"system": prompt.system + note})


async def generate_with_retry(judge: Judge, prompt: JudgePrompt, policy: RetryPolicy,
                              breaker: CircuitBreaker | None = None) -> tuple[JudgeReply, int]:
    """Grade one prompt under the policy. Returns (reply, attempts used) or raises RetryExhaustedError,
    CircuitOpenError when the run's breaker opened, or whatever fatal error the judge raised."""
    attempts, spent_in, spent_out = 0, 0, 0
    sent = prompt
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
                    reply = await judge.generate(sent)
                except Exception as exc:
                    if isinstance(exc, MalformedReplyError):
                        spent_in, spent_out = spent_in + exc.input_tokens, spent_out + exc.output_tokens
                        sent = corrected(prompt, exc.reason)
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


async def call_with_retry(call: Callable[[], Awaitable[T]], policy: RetryPolicy) -> T:
    """One batch-API call (upload, create, poll, read results) under the policy's waits and attempts.

    Only TransientError is retried; anything else (JudgeError, RejectedRequestError) propagates at
    once, and the last TransientError propagates when the attempts are spent.
    """
    retrying = AsyncRetrying(stop=stop_after_attempt(policy.max_attempts), wait=_Wait(policy),
                             retry=retry_if_exception_type(TransientError), reraise=True)
    async for attempt in retrying:
        with attempt:
            return await call()
    raise AssertionError("unreachable: tenacity either returns or reraises")  # pragma: no cover
