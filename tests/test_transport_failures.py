"""How a transport failure is classified, over both HTTP transports the SDKs offer: their default httpx one
and their aiohttp one (which labeller's judges use). Real SDK clients, real sockets on loopback, real
failures: a refused connection, a reply that never comes, a connection the server drops, a pool with no
free connection. What a failure is decides whether it may have been billed, so both transports must agree."""

from __future__ import annotations

import asyncio
import socket

import anthropic
import httpx2
import openai
import pytest
from fakeapi import FakeAPI

from labeller.judges.anthropic import AnthropicJudge
from labeller.judges.base import TransientError
from labeller.judges.openai import OpenAIJudge
from labeller.judges.wire import sdk_errors

KEY = "sk-test-transport-0123456789"
TRANSPORTS = ("DefaultAioHttpClient", "DefaultAsyncHttpxClient")


def _free_port() -> int:
    with socket.socket() as probe:  # bound, then closed: nothing listens there
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def _attempts(sdk_name: str, transport: str, url: str, *, timeout: float, pool: int = 8,
                    at_once: int = 1, wait: float | None = None) -> list[TransientError]:
    """`at_once` requests through one real SDK client, each classified as labeller's judge classifies it.
    `wait`: the connect and pool timeouts, when shorter than `timeout` (how long a request waits for a connection)."""
    sdk = openai if sdk_name == "openai" else anthropic
    judge = (OpenAIJudge if sdk is openai else AnthropicJudge)("m", base_url=url, api_key=KEY, timeout=timeout)
    await judge.aclose()  # only its names (base URL, service, key) are used: the client is the one below
    limits = httpx2.Limits(max_connections=pool, max_keepalive_connections=pool)
    timeout = httpx2.Timeout(timeout, connect=wait, pool=wait) if wait else timeout
    client_class = sdk.AsyncOpenAI if sdk is openai else sdk.AsyncAnthropic
    client = client_class(api_key=KEY, base_url=url, max_retries=0, timeout=timeout,
                          http_client=getattr(sdk, transport)(limits=limits, timeout=timeout))
    path = "/chat/completions" if sdk is openai else "/v1/messages"

    async def one() -> TransientError:
        try:
            with sdk_errors(sdk, judge, service="the server", key_variable="KEY", reply_kind="a reply"):
                await client.post(path, body={"model": "m", "messages": []}, cast_to=bytes)
        except TransientError as exc:
            return exc
        raise AssertionError("the request did not fail")

    try:
        return list(await asyncio.gather(*(one() for _ in range(at_once))))
    finally:
        await client.close()


def _url(api: FakeAPI, sdk_name: str) -> str:
    return api.openai_url if sdk_name == "openai" else api.url


# Every test here runs on each SDK over each transport.
pytestmark = [pytest.mark.parametrize("sdk_name", ["openai", "anthropic"]),
              pytest.mark.parametrize("transport", TRANSPORTS)]


def test_a_refused_connection_is_unreachable_and_never_billed(sdk_name, transport):
    url = f"http://127.0.0.1:{_free_port()}" + ("/v1" if sdk_name == "openai" else "")
    (failure,) = asyncio.run(_attempts(sdk_name, transport, url, timeout=5))
    assert failure.kind == "unreachable" and not failure.maybe_billed
    assert "could not connect to" in str(failure)


@pytest.mark.parametrize(("server", "timeout", "kind", "said"), [
    (dict(script=["drop"]), 5, "dropped", "broke before the reply"),
    (dict(latency=2.0), 0.3, "timeout", "within 0.3s"),
], ids=["dropped", "no-reply-in-time"])
def test_a_sent_request_without_its_reply_may_have_been_billed(sdk_name, transport, server, timeout, kind, said):
    with FakeAPI(latency=server.get("latency", 0.0)) as api:
        api.script(server.get("script", []))
        (failure,) = asyncio.run(_attempts(sdk_name, transport, _url(api, sdk_name), timeout=timeout))
    assert failure.kind == kind and failure.maybe_billed
    assert said in str(failure)


def test_waiting_for_a_free_connection_sent_nothing(sdk_name, transport):
    """One connection, two requests: the first is sent and times out (maybe billed); the second never got a
    connection, so nothing was sent (httpx: PoolTimeout; aiohttp: its connect timeout covers the wait)."""
    with FakeAPI(latency=2.0) as api:
        # the wait for the one connection gives up well before the first request's read timeout frees it: on a
        # loaded machine equal timeouts raced (the second request got the freed connection and was sent)
        failures = asyncio.run(_attempts(sdk_name, transport, _url(api, sdk_name), timeout=0.6, pool=1,
                                         at_once=2, wait=0.15))
        sent = api.total
    assert sorted(failure.maybe_billed for failure in failures) == [False, True]
    assert sent == 1
