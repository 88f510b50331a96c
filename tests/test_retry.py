"""The retry policy, around the real judges over real HTTP: what is retried, how long it waits, when it stops."""

from __future__ import annotations

import asyncio
import email.utils
import time

import pytest
from fakeapi import FakeAPI, Faults

from labeller.errors import JudgeError
from labeller.judges.anthropic import AnthropicJudge
from labeller.judges.openai import OpenAIJudge
from labeller.judges.wire import retry_after_seconds
from labeller.retry import RetryExhaustedError, RetryPolicy, generate_with_retry
from labeller.rubric import JudgePrompt

KEY = "sk-test-retry-0123456789abcdef"
PROMPT = JudgePrompt(system="rubric " * 30, user="<query>\nq\n</query>\n<document>\nd [[grade:3]]\n</document>")
FAST = RetryPolicy(initial_wait=0.01, max_wait=0.05)


def run(judge, policy: RetryPolicy = FAST):
    async def go():
        try:
            return await generate_with_retry(judge, PROMPT, policy)
        finally:
            await judge.aclose()
    return asyncio.run(go())


def openai_judge(api: FakeAPI) -> OpenAIJudge:
    return OpenAIJudge("m", base_url=api.openai_url, api_key=KEY)


def test_success_first_time(api):
    reply, attempts = run(openai_judge(api))
    assert (reply.verdict.grade, attempts, api.total) == (3, 1, 1)


def test_retry_after_is_honoured(api):
    api.script(["429", "ok"])
    started = time.monotonic()
    reply, attempts = run(openai_judge(api), RetryPolicy(initial_wait=0.0, max_wait=0.0))
    waited = time.monotonic() - started
    assert reply.verdict.grade == 3 and attempts == 2 and api.total == 2
    assert waited >= 0.2, "the wait follows the server's Retry-After even when backoff alone would not wait"


def test_retry_after_is_capped():
    with FakeAPI(faults=Faults(retry_after=30)) as server:
        server.script(["429", "ok"])
        started = time.monotonic()
        _, attempts = run(openai_judge(server), RetryPolicy(max_retry_after=0.05))
        assert attempts == 2 and time.monotonic() - started < 10


def test_server_errors_and_dropped_connections_are_retried(api):
    api.script(["500", "drop", "500", "ok"])
    reply, attempts = run(openai_judge(api))
    assert reply.verdict.grade == 3 and attempts == 4 and api.total == 4


def test_overloaded_anthropic_is_retried(api):
    api.script(["529", "ok"])
    reply, attempts = run(AnthropicJudge("m", base_url=api.url, api_key=KEY))
    assert reply.verdict.grade == 3 and attempts == 2


@pytest.mark.parametrize(("kind", "reason"), [
    ("malformed", "invalid JSON"), ("range", "less than or equal to 5"),
    ("missing", "Field required"), ("refusal", "refusal"),
])
def test_bad_replies_are_retried_then_given_up(api, kind, reason):
    api.script([kind] * 10)
    with pytest.raises(RetryExhaustedError, match=reason) as caught:
        run(openai_judge(api), RetryPolicy(initial_wait=0.01, max_malformed=3, max_attempts=6))
    assert caught.value.attempts == 3 and api.total == 3, "max_malformed stops before max_attempts"
    assert reason in caught.value.reason
    assert caught.value.input_tokens > 0 and caught.value.output_tokens == 3 * 20


def test_one_bad_reply_then_a_good_one(api):
    api.script(["range", "ok"])
    reply, attempts = run(openai_judge(api))
    assert reply.verdict.grade == 3 and attempts == 2


def test_attempts_are_bounded_whatever_the_mix(api):
    api.script(["500", "malformed", "429", "500", "malformed", "500", "ok"])
    with pytest.raises(RetryExhaustedError, match="HTTP 500") as caught:
        run(openai_judge(api), RetryPolicy(initial_wait=0.01, max_wait=0.02, max_attempts=6, max_retry_after=0.01))
    assert caught.value.attempts == 6 and api.total == 6


def test_rejected_key_is_not_retried():
    with FakeAPI(api_key="the-right-key") as server:
        with pytest.raises(JudgeError) as caught:
            run(openai_judge(server))
        assert server.total == 1
    assert KEY not in str(caught.value)


def test_unknown_model_is_not_retried(api):
    api.script(["404", "ok"])
    with pytest.raises(JudgeError, match="does not know model"):
        run(openai_judge(api))
    assert api.total == 1


def test_backoff_grows_between_server_errors(api):
    api.script(["500", "500", "500", "ok"])
    started = time.monotonic()
    _, attempts = run(openai_judge(api), RetryPolicy(initial_wait=0.05, max_wait=1.0))
    # waits of at least 0.05, 0.1 and 0.2 s: exponential, never immediate
    assert attempts == 4 and time.monotonic() - started >= 0.35


def test_retry_after_header_forms():
    assert retry_after_seconds({"retry-after": "2"}) == 2.0
    assert retry_after_seconds({"retry-after": "0.25"}) == 0.25
    assert retry_after_seconds({"retry-after-ms": "150", "retry-after": "9"}) == 0.15
    future = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 <= retry_after_seconds({"retry-after": future}) <= 31
    past = email.utils.formatdate(time.time() - 30, usegmt=True)
    assert retry_after_seconds({"retry-after": past}) == 0.0
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({}) is None


def test_policy_rejects_unknown_settings():
    with pytest.raises(ValueError):
        RetryPolicy(max_attempts=3, retries=2)
