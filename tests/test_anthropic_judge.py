"""The Anthropic judge, driven through the real anthropic SDK over real HTTP against the fake API on loopback."""

from __future__ import annotations

import asyncio
import json

import pytest
import fakeapi
from fakeapi import FakeAPI

from labeller.errors import JudgeError, MissingKeyError
from labeller.judges.anthropic import AnthropicJudge
from labeller.judges.base import MalformedReplyError, TransientError
from labeller.rubric import JudgePrompt

KEY = "sk-ant-test-0123456789abcdef"
SYSTEM = "You grade relevance. " * 40
PROMPT = JudgePrompt(system=SYSTEM,
                     user="<query>\nvat on fuel\n</query>\n<document>\nfuel receipt [[grade:2]]\n</document>")


def grade_once(judge: AnthropicJudge, prompt: JudgePrompt = PROMPT):
    return fakeapi.grade_once(judge, prompt)


def test_right_verdict_and_normalised_usage(api):
    judge = AnthropicJudge("claude-haiku-4-5", base_url=api.url, api_key=KEY)

    async def twice():
        first, second = await judge.generate(PROMPT), await judge.generate(PROMPT)
        await judge.aclose()
        return first, second

    first, second = asyncio.run(twice())
    total_prompt = (len(PROMPT.system) + len(PROMPT.user)) // 4 + 1
    assert first.verdict.grade == 2 and "grade 2" in first.verdict.justification
    assert (first.input_tokens, first.cached_input_tokens, first.output_tokens) == (total_prompt, 0, 20)
    # Anthropic reports cache reads apart from input_tokens; the judge folds them in (OpenAI's convention).
    assert second.input_tokens == total_prompt and second.cached_input_tokens == len(PROMPT.system) // 4


def test_request_forces_the_verdict_tool_and_caches_the_rubric(api):
    judge = AnthropicJudge("claude-haiku-4-5", base_url=api.url, api_key=KEY)
    grade_once(judge)
    body = api.requests[0].body
    assert body["tool_choice"] == {"type": "tool", "name": "record_verdict"}
    [tool] = body["tools"]
    assert tool["name"] == "record_verdict" and tool["strict"] is True
    assert list(tool["input_schema"]["properties"]) == ["justification", "grade"]
    assert tool["input_schema"]["properties"]["grade"]["enum"] == [1, 2, 3, 4, 5]
    assert body["system"] == [{"type": "text", "text": PROMPT.system, "cache_control": {"type": "ephemeral"}}]
    assert body["messages"] == [{"role": "user", "content": PROMPT.user}]
    assert "temperature" not in body


def test_decoding_settings_are_exactly_what_is_sent(api):
    judge = AnthropicJudge("m", base_url=api.url, api_key=KEY, max_output_tokens=321)
    settings = judge.decoding_settings()
    grade_once(judge)
    body = api.requests[0].body
    assert settings == {"max_tokens": body["max_tokens"], "tools": body["tools"], "tool_choice": body["tool_choice"]}
    assert body["max_tokens"] == 321
    assert set(body) - {"model", "messages", "system"} == set(settings)


def test_base_url_flag_env_default(api, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    assert AnthropicJudge("m", base_url=api.url + "/", api_key=KEY).base_url == api.url
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
    judge = AnthropicJudge("m", api_key=KEY)
    assert judge.base_url == api.url and grade_once(judge).verdict.grade == 2
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    assert AnthropicJudge("m", api_key=KEY).base_url == "https://api.anthropic.com"


def test_missing_key_names_the_variable(monkeypatch):
    with pytest.raises(MissingKeyError, match="ANTHROPIC_API_KEY"):
        AnthropicJudge("m")
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    assert AnthropicJudge("m").name == "anthropic:m"


def test_key_travels_only_in_the_auth_header(api, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    grade_once(AnthropicJudge("m", base_url=api.url))
    recorded = api.requests[0]
    # anthropic 2.x sends the key as a bearer token; older SDKs used x-api-key. Either, and nowhere else.
    auth = {name: value for name, value in recorded.headers.items() if name in ("authorization", "x-api-key")}
    assert KEY in auth.get("x-api-key", "") or auth.get("authorization") == f"Bearer {KEY}"
    others = {name: value for name, value in recorded.headers.items() if name not in auth}
    assert KEY not in json.dumps(others) and KEY not in json.dumps(recorded.body)


@pytest.mark.parametrize(("kind", "error", "reason"), [
    ("429", TransientError, "HTTP 429"),
    ("529", TransientError, "HTTP 529"),
    ("500", TransientError, "HTTP 500"),
    ("drop", TransientError, "connection"),
    ("malformed", MalformedReplyError, "no record_verdict tool call"),
    ("range", MalformedReplyError, "less than or equal to 5"),
    ("missing", MalformedReplyError, "grade: Field required"),
    ("refusal", MalformedReplyError, "refusal"),
    ("garbled", MalformedReplyError, "malformed reply"),
    ("shapeless", MalformedReplyError, "malformed reply"),
    ("404", JudgeError, "does not know model 'm'"),
])
def test_each_failure_is_classified(api, kind, error, reason):
    api.script([kind])
    with pytest.raises(error, match=reason):
        grade_once(AnthropicJudge("m", base_url=api.url, api_key=KEY))
    assert api.total == 1, "the SDK itself never retries"


def test_overloaded_carries_retry_after(api):
    api.script(["529"])
    with pytest.raises(TransientError) as caught:
        grade_once(AnthropicJudge("m", base_url=api.url, api_key=KEY))
    assert caught.value.retry_after == pytest.approx(0.2)


def test_rejected_key_is_fatal_and_not_echoed():
    with FakeAPI(api_key="the-right-key") as server:
        with pytest.raises(JudgeError) as caught:
            grade_once(AnthropicJudge("m", base_url=server.url, api_key=KEY))
    assert "ANTHROPIC_API_KEY" in str(caught.value) and KEY not in str(caught.value)
