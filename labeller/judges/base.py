"""The one interface every judge implements, and the errors judges use to classify failures.

A judge turns one rendered prompt into one Verdict. It does not retry, cache or count:
the retry policy (labeller.retry) and the labelling engine do that, in one place each.
Providers only classify what went wrong:

- TransientError: worth retrying after a wait (429, 5xx, timeout, dropped connection).
- MalformedReplyError: the model answered, but not with a valid verdict (bad JSON, grade 9,
  missing field, refusal). Retried a few times, then recorded as a failure.
- RejectedRequestError: the provider refused this pair's request (400, 413, 422). Not retried;
  the pair becomes a failure and the run goes on (the engine stops it if every request is refused).
- anything derived from labeller.errors.JudgeError: fatal for the run (bad key, unknown model).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from pydantic import BaseModel, ConfigDict

from labeller.records import Verdict
from labeller.rubric import JudgePrompt

# Bump when the verdict schema or the way prompts are sent changes: it is part of every cache key.
SCHEMA_VERSION = "verdict-v1"


class TransientError(Exception):
    """Worth retrying. `kind` says what happened, for the budget and the circuit breaker:

    - "status": the server answered with a retryable status (429, 5xx);
    - "timeout": no reply in time, after the request was sent;
    - "dropped": the connection broke after the request was sent;
    - "unreachable": no connection could be made (refused, unknown host): nothing was sent.

    `maybe_billed`: the provider may have charged for the attempt though no usage came back
    (timeouts, drops, 5xx); the budget counts such an attempt at its worst case.
    `status`: the HTTP status of a "status" failure, for the run's refusal watch (labeller.retry).
    """

    def __init__(self, reason: str, retry_after: float | None = None, *, kind: str = "status",
                 maybe_billed: bool = False, status: int | None = None) -> None:
        super().__init__(reason)
        self.reason, self.retry_after, self.kind, self.maybe_billed = reason, retry_after, kind, maybe_billed
        self.status = status


class MalformedReplyError(Exception):
    def __init__(self, reason: str, input_tokens: int = 0, output_tokens: int = 0) -> None:
        super().__init__(reason)
        self.reason, self.input_tokens, self.output_tokens = reason, input_tokens, output_tokens


class RejectedRequestError(Exception):
    """The provider refused this one request (HTTP 400, 413, 422: e.g. a document past the context
    window). Retrying cannot help, but other pairs may still succeed: the pair is recorded as a failure."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class JudgeReply(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    verdict: Verdict | BaseModel  # the relevance Verdict, or another task's reply model (labeller.tasks)
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_input_tokens: int | None = None
    served_model: str | None = None  # the model the server says answered (response.model)
    system_fingerprint: str | None = None  # the backend configuration the server reports, when it does
    grade_probs: dict[str, float] | None = None  # {"1": p, ..} read from token log-probabilities (judges.grade_probs)


class Judge(ABC):
    """A model that grades pairs. Subclasses set provider and model and implement `generate`."""

    provider: str
    model: str
    base_url: str | None = None  # as shown and hashed into cache keys: credentials masked
    max_output_tokens: int | None = None  # the output cap sent with each request; budgets assume it as the worst case

    @property
    def name(self) -> str:
        return f"{self.provider}:{self.model}"

    def secrets(self) -> list[str]:
        """Values that must never be shown or stored (the API key, credentials in the base URL)."""
        return []

    def decoding_settings(self) -> dict[str, Any]:
        """The settings actually sent that change a verdict (temperature, max tokens, ...). Part of the cache key."""
        return {}

    def settings_for(self, reply: Any = None) -> dict[str, Any]:
        """decoding_settings() as sent for a task's reply spec (labeller.tasks.reply; None: the relevance
        verdict, whose settings are decoding_settings() unchanged). A judge whose request carries the schema
        puts the task's schema here; the default adds the reply's schema version."""
        inner = self.__dict__.get("inner")
        if isinstance(inner, Judge):  # a wrapper (budget, rate limits, Ctrl-C): the settings are the judge's own
            return inner.settings_for(reply)
        if reply is None or reply.name == "verdict":
            return self.decoding_settings()
        return {**self.decoding_settings(), "reply": reply.schema_version}

    def ask_grade_probs(self, top_logprobs: int) -> str | None:
        """Ask every later request for token log-probabilities (`--grade-probs`; judges.grade_probs), which then
        join the decoding settings and so the cache key. None when this judge can; else why it cannot (said
        once in the run's warnings; the run goes on without them)."""
        inner = self.__dict__.get("inner")
        if isinstance(inner, Judge):
            return inner.ask_grade_probs(top_logprobs)
        return f"{self.name} gives no token log-probabilities"

    async def served_identity(self) -> str | None:
        """What the server says it serves under this judge's name (its /v1/models entry), asked once at the
        start of a run; part of the cache key when known, so another model behind the same URL and name
        does not get this one's verdicts. None: the server does not say (or is a provider's own API)."""
        return None

    @abstractmethod
    async def generate(self, prompt: JudgePrompt) -> JudgeReply:
        """Grade one rendered prompt. Raise TransientError or MalformedReplyError to classify failures."""

    async def aclose(self) -> None:
        """Release connections. Called once when a run ends."""
