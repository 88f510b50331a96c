"""What the HTTP judges share: the verdict schema sent to the model, the reply check, the SDK's HTTP
client, and how an HTTP failure is classified (transient, malformed or fatal). No SDK is imported here.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

import httpx2  # the SDKs' httpx: its Limits describe the pool for either transport

from labeller.errors import JudgeError, redact
from labeller.judges.base import MalformedReplyError, RejectedRequestError, TransientError
from labeller.records import Verdict
from labeller.tasks.reply import VERDICT, MalformedReply, ReplySpec

VERDICT_NAME = VERDICT.name  # the OpenAI json_schema name
TOOL_NAME = VERDICT.tool  # the Anthropic forced tool

POOL_SIZE = 256  # connections kept open; more than any sensible --concurrency
# Statuses worth retrying: timeouts, conflicts, rate limits, and every server-side failure (529 overloaded incl.).
_TRANSIENT_STATUSES = {408, 409, 425, 429}
# Statuses about this request's content (too long, unprocessable): fail the pair, keep the run going.
_PAIR_STATUSES = {400, 413, 422}


def verdict_schema(*, min_length: bool = False) -> dict[str, Any]:
    """The JSON schema of a Verdict, justification BEFORE grade so the model reasons first.

    Written out rather than taken from pydantic (labeller.tasks.reply): strict structured outputs need every
    property required, additionalProperties false, and the grade as an enum (min/max are not honoured
    everywhere). `min_length` adds `minLength: 1` to the justification, as Verdict requires: grammar-based
    servers (llama.cpp, vLLM) enforce it; OpenAI's and Anthropic's strict modes do not list it among the
    keywords they take, so it is left out there and an empty justification is retried with a note.
    """
    return VERDICT.schema(min_length=min_length)


def parse_reply(payload: str | dict[str, Any], spec: ReplySpec = VERDICT, context: dict[str, Any] | None = None, *,
                input_tokens: int = 0, output_tokens: int = 0) -> Any:
    """Validate a reply against the task's reply model, strictly (a grade must be a JSON integer 1..5; a claim
    verdict may name only passages it was shown); else MalformedReplyError."""
    try:
        return spec.parse(payload, context)
    except MalformedReply as exc:
        raise MalformedReplyError(str(exc), input_tokens, output_tokens) from None


def parse_verdict(payload: str | dict[str, Any], *, input_tokens: int = 0, output_tokens: int = 0) -> Verdict:
    """Validate a reply against Verdict, strictly (a grade must be a JSON integer 1..5); else MalformedReplyError."""
    return parse_reply(payload, VERDICT, input_tokens=input_tokens, output_tokens=output_tokens)


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """Seconds the server asked us to wait: retry-after-ms, or Retry-After as seconds or an HTTP date."""
    if not headers:
        return None
    value = headers.get("retry-after-ms")
    if value:
        try:
            return max(float(value) / 1000, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(when.timestamp() - time.time(), 0.0)


def server_message(body: object, fallback: str) -> str:
    """The human message of an API error body ({"error": {"message": ...}} in both APIs), else the SDK's text."""
    error = body.get("error", body) if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return message if isinstance(message, str) and message else fallback


def classify_status(status: int, headers: Mapping[str, str] | None, message: str, *, provider: str,
                    key_variable: str, model: str, base_url: str,
                    secret: str | list[str] | None, label: str | None = None) -> Exception:
    """The exception to raise for an HTTP error reply. The key(s) are scrubbed from any server text.
    `label` names who answered (default: the provider's own API)."""
    message = redact(message, secret if isinstance(secret, list) else [secret])[:300]
    label = label or ("OpenAI" if provider == "openai" else "Anthropic")
    if status in _TRANSIENT_STATUSES or status >= 500:
        # A 5xx may come after the model ran (and was billed); a 429 or 408 comes before it. The server's
        # own words are kept: "Input should be 'text' or 'json_object'" says what to change.
        said = f": {message}" if message else ""
        return TransientError(f"HTTP {status} from {label}{said}", retry_after_seconds(headers), kind="status",
                              maybe_billed=status >= 500, status=status)
    if status == 401:
        return JudgeError(f"{label} rejected the API key (HTTP 401); check {key_variable}")
    if status == 403:
        return JudgeError(f"{label} refused the request (HTTP 403); check that the key in {key_variable} "
                          f"may use model '{model}'")
    if status == 404:
        where = label if base_url in label else f"{label} at {base_url}"
        return JudgeError(f"{where} does not know model '{model}' (HTTP 404): {message}")
    if status in _PAIR_STATUSES:
        return RejectedRequestError(f"{label} rejected the request (HTTP {status}): {message}")
    return JudgeError(f"{label} rejected the request (HTTP {status}): {message}")


def _queue_hint(judge: Any) -> str:
    """Why a local server's reply may not come in time: the time a request waits for a free slot counts."""
    if not getattr(judge, "local", False):
        return ""
    return ("; a local server with fewer slots than --concurrency queues the other requests, and the wait counts "
            "against --timeout: set --concurrency to its slot count (llama-server --parallel, OLLAMA_NUM_PARALLEL) "
            "or raise --timeout")


def http_client(sdk: Any, timeout: float, url: str) -> Any:
    """The SDK's own aiohttp transport (`DefaultAioHttpClient`, the `aiohttp` extra both SDKs ship).

    Why not its default httpx one: httpcore checks every idle pooled connection for expiry, with a poll,
    on each request it assigns, so at 128 in flight its pool took a fifth of a labelling run's CPU
    (py-spy); over aiohttp the same run took 0.58 of the time (benchmarks/README.md). Requests, auth,
    base URL, query, timeout, proxies from the environment and error classes are still the SDK's.

    A base URL with credentials in it (user:password@) keeps httpx: aiohttp refuses to send them beside
    the SDK's own Authorization header, where httpx sends them as basic auth."""
    limits = httpx2.Limits(max_connections=POOL_SIZE, max_keepalive_connections=POOL_SIZE)
    parts = urlsplit(url)
    client = sdk.DefaultAsyncHttpxClient if parts.username or parts.password else sdk.DefaultAioHttpClient
    return client(limits=limits, timeout=timeout)


# The transport failure under an SDK error, by the class names in its cause chain (whatever httpx the SDK
# ships, and over aiohttp, whose adapter maps a dropped connection and a refused one alike to ConnectTimeout):
# "connect" (nothing reached the server), "connect-timeout", "pool-timeout" (waiting for a free connection),
# "timeout" (sent, no reply in time) or "dropped" (sent, the connection broke before the reply).
_AIOHTTP_KINDS = (("ConnectionTimeoutError", "connect-timeout"), ("ClientConnectorError", "connect"),
                  ("ServerTimeoutError", "timeout"))
_HTTPX_KINDS = (("ConnectTimeout", "connect-timeout"), ("PoolTimeout", "pool-timeout"),
                ("TimeoutException", "timeout"), ("TimeoutError", "timeout"), ("ConnectError", "connect"))


def transport_failure(exc: BaseException, default: str) -> str:
    """What broke under an SDK error (the kinds above); `default` when httpx's error names none of them."""
    chain = []
    cause = exc.__cause__
    while cause is not None and len(chain) < 8:
        chain.append(cause)
        cause = cause.__cause__
    aiohttp = [link for link in chain if type(link).__module__.startswith("aiohttp")]
    if aiohttp:  # its deepest error says what happened; the SDK's class was chosen from a lossy mapping
        kinds, links, default = _AIOHTTP_KINDS, aiohttp[-1:], "dropped"
    else:
        kinds, links = _HTTPX_KINDS, chain[:1]
    names = {cls.__name__ for link in links for cls in type(link).__mro__}
    return next((kind for name, kind in kinds if name in names), default)


@contextmanager
def sdk_errors(sdk: Any, judge: Any, *, service: str, key_variable: str, reply_kind: str) -> Iterator[None]:
    """Classify what an official SDK (openai or anthropic: same exception names) raises during one call."""
    try:
        yield
    except sdk.APIStatusError as exc:
        raise classify_status(exc.status_code, exc.response.headers, server_message(exc.body, exc.message),
                              provider=judge.provider, key_variable=key_variable, model=judge.model,
                              base_url=judge.base_url, secret=judge.secrets(), label=service) from None
    except (sdk.APITimeoutError, sdk.APIConnectionError) as exc:
        failure = transport_failure(exc, "timeout" if isinstance(exc, sdk.APITimeoutError) else "dropped")
        if failure == "connect-timeout":
            raise TransientError(f"could not connect to {judge.base_url} within {judge.timeout:g}s",
                                 kind="unreachable") from None
        if failure == "connect":
            raise TransientError(f"could not connect to {judge.base_url}", kind="unreachable") from None
        if failure in ("timeout", "pool-timeout"):  # waiting for a free connection: nothing was sent
            raise TransientError(f"no reply from {service} within {judge.timeout:g}s{_queue_hint(judge)}",
                                 kind="timeout", maybe_billed=failure == "timeout") from None
        raise TransientError(f"connection to {judge.base_url} broke before the reply", kind="dropped",
                             maybe_billed=True) from None
    except sdk.APIError:  # a 200 whose body is not what was asked for
        raise MalformedReplyError(f"malformed reply: the response is not {reply_kind}") from None
