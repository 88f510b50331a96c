"""Local OpenAI-compatible servers (llama-server, llama-cpp-python, Ollama, vLLM), emulated by the fake API:
output modes, the early stop on a systematic refusal, the output cap they read, which model answered,
schema and validator agreeing, and what a timeout under load says. Real SDK, real HTTP, loopback only."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import fakeapi
from fakeapi import FakeAPI, expected_grade

from labeller.errors import ConfigError, JudgeError, LabellingFailedError
from labeller.judges.base import MalformedReplyError, TransientError
from labeller.judges.openai import OpenAIJudge
from labeller.judges.output_modes import FORMAT_INSTRUCTION
from labeller.judges.registry import make_judge
from labeller.labelling import LabelInputs, LabelOptions, label_job
from labeller.records import Verdict
from labeller.retry import RetryPolicy, generate_with_retry
from labeller.rubric import JudgePrompt
from labeller.store import CachedVerdict, open_store

KEY = "sk-local-0123456789abcdef"
PROMPT = JudgePrompt(system="You grade relevance. " * 10,
                     user="<query>\nspinach\n</query>\n<document>\nblanch it [[grade:4]]\n</document>")
LLAMA_CPP_PYTHON_REFUSAL = "Input should be 'text' or 'json_object'"


def grade_once(judge: OpenAIJudge, prompt: JudgePrompt = PROMPT):
    return fakeapi.grade_once(judge, prompt)


def write_inputs(root: Path, n: int) -> dict[str, Path]:
    files = {"queries": [{"query_id": f"q{i}", "text": f"question {i}"} for i in range(n)],
             "corpus": [{"doc_id": f"d{i}", "text": f"answer {i} [[grade:{i % 5 + 1}]]"} for i in range(n)],
             "pairs": [{"query_id": f"q{i}", "doc_id": f"d{i}"} for i in range(n)]}
    paths = {}
    for name, rows in files.items():
        paths[name] = root / f"{name}.jsonl"
        paths[name].write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return paths


def label(root: Path, api: FakeAPI, n: int = 6, *, out: str = "labels.jsonl", concurrency: int = 4,
          output_mode: str | None = None):
    paths = write_inputs(root, n)
    return label_job(LabelInputs(queries=paths["queries"], corpus=paths["corpus"], pairs=paths["pairs"],
                                 cache=root / "cache", out=root / out, base_url=api.openai_url, output_mode=output_mode,
                                 options=LabelOptions(concurrency=concurrency, progress=False,
                                                      retry=RetryPolicy(initial_wait=0.01, max_wait=0.02))),
                     "openai:local-model")


# -- output modes -----------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["json_schema", "json_object", "tool", "text"])
def test_every_mode_sends_its_fields_and_reads_the_same_verdict(api, mode):
    judge = OpenAIJudge("m", base_url=api.openai_url, api_key=KEY, output_mode=mode)
    reply = grade_once(judge)
    assert reply.verdict == Verdict(grade=4, justification="The document matches the query at grade 4.")
    body = api.requests[0].body
    assert set(body) - {"model", "messages"} == set(judge.decoding_settings()), "what is sent is what is keyed"
    system = body["messages"][0]["content"]
    if mode == "json_schema":
        assert body["response_format"]["type"] == "json_schema" and system == PROMPT.system
    elif mode == "json_object":  # llama-cpp-python's form: the schema beside the type
        assert body["response_format"]["type"] == "json_object"
        assert body["response_format"]["schema"]["required"] == ["justification", "grade"]
        assert system.endswith(FORMAT_INSTRUCTION) and "JSON" in system
    elif mode == "tool":
        assert body["tool_choice"] == {"type": "function", "function": {"name": "record_verdict"}}
        assert body["tools"][0]["function"]["parameters"]["properties"]["grade"]["enum"] == [1, 2, 3, 4, 5]
        assert "response_format" not in body
    else:
        assert "response_format" not in body and "tools" not in body and system.endswith(FORMAT_INSTRUCTION)


def test_text_mode_reads_json_inside_a_fence_and_prose():
    with FakeAPI(text_fence=True) as server:
        reply = grade_once(OpenAIJudge("m", base_url=server.openai_url, api_key=KEY, output_mode="text"))
        assert reply.verdict.grade == 4
        assert server.requests[0].answer == "ok"


@pytest.mark.parametrize(("mode", "reason"), [("tool", "no record_verdict tool call"), ("text", "invalid JSON"),
                                              ("json_object", "invalid JSON")])
def test_a_bad_reply_is_malformed_in_every_mode(api, mode, reason):
    api.script(["malformed"])
    with pytest.raises(MalformedReplyError, match=reason):
        grade_once(OpenAIJudge("m", base_url=api.openai_url, api_key=KEY, output_mode=mode))


def test_unknown_mode_and_mode_for_another_provider_are_refused():
    with pytest.raises(ConfigError, match="unknown output mode 'xml'; expected one of json_schema, json_object"):
        make_judge("openai:m", output_mode="xml", api_key=KEY)
    with pytest.raises(ConfigError, match="applies to the openai provider"):
        make_judge("anthropic:m", output_mode="tool", api_key=KEY)


def test_the_mode_is_in_the_cache_key(api, tmp_path):
    first = label(tmp_path, api, output_mode="json_schema")
    assert api.total == 6 and first.stats.new == 6
    again = label(tmp_path, api, output_mode="json_object", out="b.jsonl")
    assert api.total == 12 and again.stats.cached == 0, "another mode is another judge: no verdict shared"
    assert {l.cache_key for l in first.labels}.isdisjoint(l.cache_key for l in again.labels)
    label(tmp_path, api, output_mode="json_object", out="c.jsonl")
    assert api.total == 12, "the same mode again: every pair from the cache"


# -- llama-cpp-python: refused json_schema, taken json_object -----------------------------------------

def test_llama_cpp_python_refusal_keeps_the_servers_words_and_a_hint():
    with FakeAPI(emulate="llama-cpp-python") as server:
        with pytest.raises(TransientError) as caught:
            grade_once(OpenAIJudge("m", base_url=server.openai_url, api_key=KEY))
        reply = grade_once(OpenAIJudge("m", base_url=server.openai_url, api_key=KEY, output_mode="json_object"))
    assert caught.value.status == 500 and LLAMA_CPP_PYTHON_REFUSAL in caught.value.reason
    assert "try --output-mode json_object" in caught.value.reason
    assert reply.verdict.grade == 4


def test_systematic_refusal_stops_the_run_early_with_the_servers_message(tmp_path):
    """issue 10: 48 pairs, each refused with HTTP 500 and retried 6 times, were 288 requests."""
    with FakeAPI(emulate="llama-cpp-python") as server:
        with pytest.raises(JudgeError) as caught:
            label(tmp_path, server, n=48, concurrency=16)
        sent = server.total
    message = str(caught.value)
    assert LLAMA_CPP_PYTHON_REFUSAL in message and "try --output-mode json_object" in message
    assert "the first 4 answers were all the same error" in message
    assert sent <= 16 + 4, f"{sent} requests: at most one wave of --concurrency, not 6 per pair"
    run = caught.value.run  # type: ignore[attr-defined]
    assert run.stats.new == 0 and run.stats.failed + run.stats.skipped == 48


def test_one_at_a_time_the_stop_comes_after_four_requests(tmp_path):
    with FakeAPI(emulate="llama-cpp-python") as server:
        with pytest.raises(JudgeError):
            label(tmp_path, server, n=48, concurrency=1)
        assert server.total == 4


def test_a_few_server_errors_before_a_verdict_do_not_stop_the_run(api, tmp_path):
    api.script(["500", "500", "500", "429", "429"])  # three alike, then rate limits, then a verdict (6th attempt)
    run = label(tmp_path, api, n=6, concurrency=1)
    assert run.stats.new == 6 and run.stats.stopped_by is None


def test_the_same_error_after_a_verdict_is_not_a_systematic_refusal(api, tmp_path):
    api.script(["ok"] + ["500"] * 5)  # then a verdict on the 6th attempt
    run = label(tmp_path, api, n=3, concurrency=1)
    assert run.stats.stopped_by is None and run.stats.new == 3


# -- the output cap a local server reads ---------------------------------------------------------------

def test_local_servers_get_max_tokens_and_openai_does_not(api):
    judge = OpenAIJudge("m", base_url=api.openai_url, api_key=KEY, max_output_tokens=77)
    grade_once(judge)
    body = api.requests[0].body
    assert body["max_tokens"] == body["max_completion_tokens"] == 77
    # OpenAI's own API: the request a real run would send (not sent: tests never leave loopback)
    openai_body = OpenAIJudge("m", base_url="https://api.openai.com/v1", api_key=KEY).request(PROMPT)
    assert "max_tokens" not in openai_body and openai_body["max_completion_tokens"] == 400
    schema = openai_body["response_format"]["json_schema"]["schema"]["properties"]["justification"]
    assert "minLength" not in schema, "OpenAI's strict mode does not list minLength; it gets the retry note instead"
    azure = OpenAIJudge("m", base_url="https://team.openai.azure.com/openai/v1", api_key=KEY).request(PROMPT)
    assert "max_tokens" not in azure, "Azure OpenAI follows OpenAI's rules"


@pytest.mark.parametrize("server_kind", ["ollama", "llama-cpp-python"])
def test_a_looping_model_is_cut_at_the_cap_the_server_reads(server_kind):
    with FakeAPI(emulate=server_kind, reply_tokens=5000) as server:
        with pytest.raises(MalformedReplyError, match="cut off at 300 output tokens") as caught:
            grade_once(OpenAIJudge("m", base_url=server.openai_url, api_key=KEY, max_output_tokens=300,
                                   output_mode="json_object"))
    assert caught.value.output_tokens == 300, "max_tokens reached the server: 300 tokens paid, not 5000"


# -- which model answered -------------------------------------------------------------------------------

def test_labels_record_the_served_model_and_fingerprint(tmp_path, capsys):
    with FakeAPI(served_model="SmolLM2-135M-Instruct-Q8_0.gguf", fingerprint="b4689-cpu") as server:
        run = label(tmp_path, server)
        assert server.model_lists == 1, "asked once per run"
    assert {(l.served_model, l.system_fingerprint) for l in run.labels} == {("SmolLM2-135M-Instruct-Q8_0.gguf",
                                                                              "b4689-cpu")}
    written = [json.loads(line) for line in (tmp_path / "labels.jsonl").read_text().splitlines()]
    assert written[0]["served_model"] == "SmolLM2-135M-Instruct-Q8_0.gguf"
    err = capsys.readouterr().err
    assert err.count("labeller: warning:") == 1 and "'local-model'" in err and "SmolLM2-135M" in err


def test_another_gguf_behind_the_same_url_and_name_gets_no_cached_verdicts(tmp_path):
    server = FakeAPI(served_model="smollm2-135m.gguf", served_meta={"n_params": 134515008, "size": 145104640})
    with server:
        label(tmp_path, server)
        assert server.total == 6
        label(tmp_path, server, out="again.jsonl")
        assert server.total == 6, "the same served model: a free rerun"
        server.served_model, server.served_meta = "smollm2-135m.gguf", {"n_params": 268098176, "size": 253231360}
        swapped = label(tmp_path, server, out="swapped.jsonl")
        assert server.total == 12 and swapped.stats.cached == 0, "same file name, another model: no old verdicts"
        server.served_model, server.served_meta = "gemma-3-270m.gguf", None
        label(tmp_path, server, out="gemma.jsonl")
        assert server.total == 18


def test_a_server_without_v1_models_keeps_todays_keys(api, tmp_path):
    """No served identity: the cache key is what it was before served identities existed."""
    from labeller.cache_key import cache_key

    run = label(tmp_path, api, n=1)
    judge = OpenAIJudge("local-model", base_url=api.openai_url, api_key=KEY)
    prompt_key = {cache_key(provider="openai", model="local-model", base_url=api.openai_url,
                            settings=judge.decoding_settings(), prompt=p) for p in _prompts(tmp_path)}
    assert run.labels[0].cache_key in prompt_key and run.labels[0].served_model == "local-model"


def _prompts(root: Path):
    from labeller.io.inputs import read_corpus, read_queries
    from labeller.rubric import load_rubric

    queries, corpus = read_queries(root / "queries.jsonl"), read_corpus(root / "corpus.jsonl")
    return [load_rubric("general").render(queries["q0"], corpus["d0"])]


def test_old_cache_records_without_served_fields_still_read(tmp_path):
    old = {"cache_key": "k", "query_id": "q", "doc_id": "d", "verdict": {"justification": "j", "grade": 3},
           "judge": "openai:m", "provider": "openai", "model": "m", "schema_version": "verdict-v1", "rubric": "r",
           "rubric_version": "v1", "created_at": "2026-01-01T00:00:00+00:00"}
    record = CachedVerdict.model_validate(old)
    assert record.served_model is None and record.system_fingerprint is None
    with open_store(tmp_path / "s") as store:
        store.put_many([record])
        assert store.get("k") == record


# -- schema and validator agree; a retry is not the same prompt again --------------------------------

def test_local_schema_requires_a_non_empty_justification(api):
    judge = OpenAIJudge("m", base_url=api.openai_url, api_key=KEY)
    grade_once(judge)
    schema = api.requests[0].body["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["justification"]["minLength"] == 1
    with pytest.raises(ValueError):
        Verdict(grade=3, justification="")


def test_an_empty_justification_is_retried_with_a_note(api):
    api.script(["empty", "ok"])
    judge = OpenAIJudge("m", base_url=api.openai_url, api_key=KEY)

    async def go():
        try:
            return await generate_with_retry(judge, PROMPT, RetryPolicy(initial_wait=0.0))
        finally:
            await judge.aclose()

    reply, attempts = asyncio.run(go())
    assert attempts == 2 and reply.verdict.grade == 4
    first, second = (r.body["messages"] for r in api.requests)
    assert first[0]["content"] == PROMPT.system
    assert second[0]["content"].startswith(PROMPT.system) and "could not be used" in second[0]["content"]
    assert "at least 1 character" in second[0]["content"]
    assert first[1] == second[1], "the pair's own text is untouched"
    assert expected_grade(second[1]["content"]) == 4


# -- timeouts under load ------------------------------------------------------------------------------------

def test_a_local_timeout_says_what_to_tune():
    with FakeAPI(latency=1.0) as server:
        with pytest.raises(TransientError) as caught:
            grade_once(OpenAIJudge("m", base_url=server.openai_url, api_key=KEY, timeout=0.2))
    assert "within 0.2s" in caught.value.reason and "set --concurrency to its slot count" in caught.value.reason


def test_concurrency_above_the_servers_slots_times_out_and_pays_again(tmp_path):
    """A 2-slot server at 0.2 s a reply and a 0.5 s timeout: with 8 in flight, requests queued past the
    timeout are given up on after sending (maybe computed, maybe paid) and sent again; with 2 in flight
    (concurrency = slots) none is."""
    def run(concurrency: int) -> tuple[int, int]:
        root = tmp_path / f"c{concurrency}"
        root.mkdir()
        paths = write_inputs(root, 8)
        with FakeAPI(slots=2, latency=0.2) as server:
            try:
                settings = LabelOptions(concurrency=concurrency, progress=False,
                                        retry=RetryPolicy(initial_wait=0.01, max_wait=0.02))
                result = label_job(LabelInputs(queries=paths["queries"], corpus=paths["corpus"], pairs=paths["pairs"],
                                               cache=root / "cache", out=root / "l.jsonl", base_url=server.openai_url,
                                               timeout=0.5, options=settings), "openai:local-model")
            except LabellingFailedError as exc:  # a pair that timed out 6 times: still a count of what happened
                result = exc.run  # type: ignore[attr-defined]
            return result.stats.unconfirmed_attempts, server.total

    assert run(2) == (0, 8)
    timed_out, sent = run(8)
    assert timed_out > 0 and sent > 8, "queued requests timed out after sending and were sent again"


def test_the_python_api_takes_the_output_mode(tmp_path):
    import labeller

    paths = write_inputs(tmp_path, 3)
    with FakeAPI(emulate="llama-cpp-python", served_model="smol.gguf") as server:
        frame = labeller.label(paths["pairs"], queries=paths["queries"], corpus=paths["corpus"],
                               judge="openai:smol", base_url=server.openai_url, cache=str(tmp_path / "cache"),
                               output_mode="json_object", progress=False)
        assert server.answers["refused"] == 0 and server.total == 3
    assert list(frame["grade"]) == [1, 2, 3] and set(frame["served_model"]) == {"smol.gguf"}


def test_refusals_that_differ_only_in_a_request_id_are_the_same_refusal():
    from labeller.retry import CircuitBreaker

    breaker = CircuitBreaker(8, refusal_threshold=3)
    for request_id in ("req_3f9a8c7d21", "req_77aa01be9c", "req_0c0ffee123"):
        breaker.record(TransientError(f"HTTP 500 from X: bad response_format (request {request_id})", status=500))
    assert breaker.error is not None and "bad response_format" in str(breaker.error)
    other = CircuitBreaker(8, refusal_threshold=3)
    for message in ("out of memory", "bad response_format", "out of memory"):
        other.record(TransientError(f"HTTP 500 from X: {message}", status=500))
    assert other.error is None, "different errors are not one systematic refusal"
