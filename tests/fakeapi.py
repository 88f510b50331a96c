"""A fake OpenAI- and Anthropic-compatible API on 127.0.0.1, owned by the tests and the benchmarks.

It answers POST /v1/chat/completions (OpenAI chat shape, JSON-schema content) and POST /v1/messages
(Anthropic shape, a `record_verdict` tool_use block), after a configurable latency, and injects
faults with a seeded RNG: 429 with Retry-After, 500, 529, dropped connections, malformed JSON,
out-of-range grades (9), missing fields and refusals. A script of faults can also be queued for
exact sequences in a test, and `poison` makes every request holding a marker fail the same way
(a pair that can never be graded until the poison is lifted).

The right grade of a pair is known from the prompt: a marker `[[grade:N]]` in the user message,
else a hash of the user message. Tests can therefore check every label (`expected_grade`).

A noisy judge for self-consistency (`noise`, off by default): a request sampled at a temperature above 0
(OpenAI's `temperature`; Anthropic's, or its API default of 1.0 when the request names none) answers,
with probability `noise`, the planted grade moved by 1..`noise_spread` grades up or down (reflected
back inside 1-5, so exactly that share of replies is off). The draw is seeded by `noise_seed`, the user
prompt and how many times this server has sampled that prompt before: reproducible whatever the order
of concurrent requests, and a prompt asked again gets a fresh draw. Temperature 0 is never noisy.

Every request is recorded (path, headers, JSON body, what was answered), so tests can count
requests and check where the API key travelled.

Local OpenAI-compatible servers are emulated by knobs (all off by default):
- `emulate="llama-cpp-python"`: `response_format: json_schema` gets HTTP 500 "Input should be 'text' or
  'json_object'" (as its server answers); `json_object` with a schema is taken; only `max_tokens` caps
  the reply (max_completion_tokens is ignored);
- `emulate="ollama"`: only `max_tokens` caps the reply;
- `served_model="name.gguf"` (llama-server): any model name is answered, `response.model` and
  `GET /v1/models` report the served model (with `served_meta`), `fingerprint` a system_fingerprint;
- `reply_tokens`: the output tokens the model wants to write (a looping small model: thousands); a
  reply past the cap the server reads ends with finish_reason "length";
- `slots=N` (llama-server --parallel N): N requests are computed at once, each taking `latency`; the others
  queue, and the wait counts against the client's timeout;
- `text_fence`: a request with neither response_format nor tools gets its JSON in a ```json fence with prose.
An emulated refusal is recorded with the answer "refused". GET /v1/models is not counted as a judge request (`model_lists` counts it); without `served_model` it is 404.

Token log-probabilities (`--grade-probs`): with `logprobs=True`, a chat completion asked for `logprobs: true` carries
`choices[0].logprobs.content`: the JSON reply cut into tokens (the grade's value is the token " N"), each with
logprob 0 except the grade's. There, a marker `[[probs:p1,p2,p3,p4,p5]]` in the user message plants the grade
distribution: the top_logprobs are " 1".." 5" at log(0.9 * p) (zeros left out) plus a non-grade token ' "' at
log(0.1), the likeliest first, cut to the request's top_logprobs. Without a marker the grade is certain. With
`logprobs=False` (the default: a server that ignores the parameter) `logprobs` is null; with `logprobs=True`, a
marker `[[nologprobs]]` in the user message makes that one reply's `logprobs` null (a server that drops them for
some replies).
In a claim, `[[claimseq:v1,v2,...]]` plants the claim verdict of each request for the prompt the same way (each v
a claim marker's body: `supported:d1`, `not_supported`, `contradicted:d2`).
A marker `[[seq:g1,g2,...]]` plants the grade of the 1st, 2nd, ... request for that prompt (the last repeats):
adaptive sampling tests know each sample's grade.

The provider batch APIs (OpenAI files + batches, Anthropic message batches) are served by the same
server; see tests/fakebatch.py (`batch_delay`, `batch_expire`, `batch_damage`, `batch_script`, `batched`).

In a test:            with FakeAPI(latency=0.01, faults=Faults(rate_limit=0.15)) as api: ... api.url
Standalone (bench):   python tests/fakeapi.py --port 8123 --latency 0.2 --faults 429=0.15,500=0.1 [--batch-delay 2]
                      (GET /stats returns request counts as JSON.)
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import math
import random
import re
import signal
import socket
import threading
import time
from collections import Counter
from dataclasses import dataclass, field, fields
from typing import Any

from aiohttp import web

MARKER = re.compile(r"\[\[grade:([1-5])\]\]")
INJECTED = re.compile(r"\bgrade (?:it |this |this document )?([1-5])\b", re.IGNORECASE)  # obeys_injection
KINDS = ("ok", "429", "500", "529", "drop", "malformed", "range", "missing", "refusal", "401", "404", "400",
         "expired",  # expired: a batch request the provider never ran (batch endpoints only)
         "empty",  # a verdict whose justification is "" (scripted only)
         "garbled", "shapeless",  # a 200 that is not a reply: HTML, or JSON of the wrong shape
         "stray")  # a claim verdict naming a passage it was not shown (claim tasks; scripted only)
PROBS_MARKER = re.compile(r"\[\[probs:([0-9.,]+)\]\]")
SEQ_MARKER = re.compile(r"\[\[seq:([1-5](?:,[1-5])*)\]\]")
TOKEN = re.compile(r"\s?\w+|\s?[^\w\s]+|\s+")
CLAIM_SEQ_MARKER = re.compile(r"\[\[claimseq:([^\]]+)\]\]")
CLAIM_MARKER = re.compile(r"\[\[(supported|contradicted|not_supported)((?::[^\]:]+)*)\]\]")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def expected_grade(user_prompt: str) -> int:
    """The grade the fake model gives a prompt: its marker, else a stable hash of the text."""
    found = MARKER.search(user_prompt)
    if found:
        return int(found.group(1))
    return int(hashlib.sha256(user_prompt.encode("utf-8")).hexdigest(), 16) % 5 + 1


def model_grade(user_prompt: str, model: str | None, offsets: dict[str, int], noise: dict[str, float]) -> int:
    """The grade `model` gives: the right grade, moved by its offset and, for its noisy share of prompts, one
    step (up, or down at the top), clamped to 1-5."""
    grade = expected_grade(user_prompt) + offsets.get(model or "", 0)
    share = noise.get(model or "", 0.0)
    if share:
        roll = int(hashlib.sha256(f"{model}\x00{user_prompt}".encode("utf-8")).hexdigest(), 16) % 10_000
        if roll < share * 10_000:
            grade += 1 if grade < 5 else -1
    return min(max(grade, 1), 5)


@dataclass
class Faults:
    """Probability of each injected fault per request (independent of the pair, so retries can succeed)."""

    rate_limit: float = 0.0  # 429 with Retry-After
    server_error: float = 0.0  # 500
    overloaded: float = 0.0  # 529
    drop: float = 0.0  # connection closed without a reply
    malformed: float = 0.0  # content that is not JSON
    out_of_range: float = 0.0  # grade 9
    missing: float = 0.0  # no grade field
    refusal: float = 0.0
    garbled: float = 0.0  # HTTP 200 whose body is an HTML page (a proxy's), not the API's JSON
    shapeless: float = 0.0  # HTTP 200 JSON of the wrong shape (choices / content not lists)
    retry_after: float = 0.05  # seconds sent in Retry-After
    seed: int = 0

    _SHORT = {"429": "rate_limit", "500": "server_error", "529": "overloaded", "range": "out_of_range"}

    @classmethod
    def parse(cls, text: str) -> Faults:
        """'429=0.15,500=0.1,malformed=0.08,range=0.05,retry_after=0.1,seed=3' -> Faults."""
        values: dict[str, Any] = {}
        names = {f.name for f in fields(cls)}
        for part in filter(None, (p.strip() for p in text.split(","))):
            key, _, value = part.partition("=")
            name = cls._SHORT.get(key.strip(), key.strip())
            if name not in names:
                raise ValueError(f"unknown fault '{key}'")
            values[name] = int(value) if name == "seed" else float(value)
        return cls(**values)

    def draw(self, rng: random.Random) -> str:
        roll = rng.random()
        for kind, p in (("429", self.rate_limit), ("500", self.server_error), ("529", self.overloaded),
                        ("drop", self.drop), ("malformed", self.malformed), ("range", self.out_of_range),
                        ("missing", self.missing), ("refusal", self.refusal), ("garbled", self.garbled),
                        ("shapeless", self.shapeless)):
            if roll < p:
                return kind
            roll -= p
        return "ok"


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]  # names lower-cased
    body: Any
    answer: str  # the kind answered: "ok", "429", ...
    at: float = field(default_factory=time.monotonic)  # when it arrived (rate limits are counted per window)


@dataclass
class FakeAPI:
    latency: float = 0.0
    faults: Faults = field(default_factory=Faults)
    api_key: str | None = None  # when set, any other key gets 401
    host: str = "127.0.0.1"
    port: int = 0
    # Tokens billed per character outside ASCII. 0.25 is the old flat "4 characters a token"; real
    # tokenizers spend about one token per CJK character, which is what budget tests set.
    non_ascii_tokens: float = 0.25
    batch_delay: float = 0.0  # seconds from a batch's creation until its results are ready
    batch_expire: float = 0.0  # probability that a batched request expires unrun
    batch_damage: int = 0  # result lines per batch written cut in half (not JSON), from the first
    openai_limits: tuple[int, int] = (50_000, 200 * 1024 * 1024)  # requests, bytes per batch
    anthropic_limits: tuple[int, int] = (100_000, 256 * 1024 * 1024)
    # Judges that differ (juries, escalation): by model name, a grade offset added to every right grade,
    # and the share of prompts (picked by a stable hash of model and prompt) whose grade moves one step.
    # Grades stay within 1-5. Models not named answer the right grade, as before.
    model_offsets: dict[str, int] = field(default_factory=dict)
    model_noise: dict[str, float] = field(default_factory=dict)
    noise: float = 0.0  # at temperature > 0: probability that a reply's grade is off the planted one
    noise_spread: int = 1  # how far off: 1..noise_spread grades, up or down
    noise_seed: int = 0
    # model name -> function of the planted grade giving the grade that model answers (a judge that drifted
    # after a model update, or a noisy one); models not named answer the planted grade.
    model_grades: dict[str, Any] = field(default_factory=dict)
    # Planted judge biases, for `labeller probe` tests (all off by default). Each moves the grade the
    # pair would get (marker or hash) and is clipped to 1..5; obeys_injection wins over the others.
    length_bias: int = 0  # added when the <document> block is longer than `long_document` characters
    long_document: int = 1000
    stuffing_bias: int = 0  # added when the <document> block holds every word of the <query> block
    obeys_injection: bool = False  # a document saying "grade it N" / "grade this N" / "grade N" gets N
    lowercase_bias: int = 0  # added when the <document> block has letters but no capital (a case-sensitive model)
    emulate: str = ""  # "", "llama-cpp-python" or "ollama": see the module docstring
    served_model: str | None = None  # llama-server: the model it serves whatever the name asked for
    served_meta: dict[str, Any] | None = None  # llama-server's /v1/models "meta" (n_params, size, ...)
    fingerprint: str | None = None  # system_fingerprint in every chat completion
    reply_tokens: int = 20  # output tokens the fake model writes, before any cap
    text_fence: bool = False
    slots: int = 0  # requests computed at once (llama-server --parallel); 0: no limit
    logprobs: bool = False  # answer `logprobs: true` with the reply's token log-probabilities (see the docstring)

    def __post_init__(self) -> None:
        self.requests: list[Recorded] = []
        self.counts: Counter[str] = Counter()
        self.answers: Counter[str] = Counter()
        self._script: list[str] = []
        # prompt substring -> kind: every request whose user prompt holds the substring gets that answer
        self.poison: dict[str, str] = {}
        self._rng = random.Random(self.faults.seed)
        self._seen_systems: set[str] = set()
        self.sampled: Counter[str] = Counter()  # user prompt -> times it was answered at temperature > 0
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self.batch_script: list[int] = []  # HTTP statuses for the next batch-management calls (e.g. [500, 429])
        self.batched: Counter[str] = Counter()  # custom_id -> times it was submitted in a batch
        self.model_lists = 0  # GET /v1/models answered (not judge requests: not in counts or total)
        self._slot_gate: asyncio.Semaphore | None = None  # made in the server's loop on first use
        from fakebatch import FakeBatches

        self.batches = FakeBatches(self)

    # ---- control -------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        """Base URL for Anthropic; OpenAI's is `url + "/v1"`."""
        return f"http://{self.host}:{self.port}"

    @property
    def openai_url(self) -> str:
        return self.url + "/v1"

    def environment(self, key: str) -> dict[str, str]:
        """os.environ for a labeller subprocess talking to this server with `key` (no other *_API_KEY)."""
        import os

        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env.update(OPENAI_BASE_URL=self.openai_url, ANTHROPIC_BASE_URL=self.url, OPENAI_API_KEY=key,
                   ANTHROPIC_API_KEY=key)
        return env

    def script(self, kinds: list[str]) -> None:
        """Answer the next requests with these kinds, in order, before going back to random faults."""
        unknown = set(kinds) - set(KINDS)
        if unknown:
            raise ValueError(f"unknown kinds {unknown}")
        with self._lock:
            self._script.extend(kinds)

    def unscript(self) -> None:
        """Forget the scripted answers not used yet."""
        with self._lock:
            self._script.clear()

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self.counts.clear()
            self.answers.clear()

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def __enter__(self) -> FakeAPI:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((self.host, self.port))
        sock.listen(1024)
        self.port = sock.getsockname()[1]
        ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, args=(sock, ready), daemon=True, name="fakeapi")
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("fake API did not start")

    def stop(self) -> None:
        if self._loop and self._runner:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread:
            self._thread.join(10)

    def _serve(self, sock: socket.socket, ready: threading.Event) -> None:
        self._loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self._loop)
        self._runner = web.AppRunner(self.app(), access_log=None, handle_signals=False, shutdown_timeout=2.0)
        self._loop.run_until_complete(self._runner.setup())
        self._loop.run_until_complete(web.SockSite(self._runner, sock).start())
        ready.set()
        self._loop.run_forever()
        self._loop.close()

    def app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._openai)
        app.router.add_post("/v1/messages", self._anthropic)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/stats", self._stats)
        self.batches.routes(app)
        return app

    # ---- request handling ------------------------------------------------------------------------
    def _next_kind(self) -> str:
        with self._lock:
            return self._script.pop(0) if self._script else self.faults.draw(self._rng)

    async def _receive(self, request: web.Request, key_header: str) -> tuple[Any, str]:
        transport_sock = request.transport.get_extra_info("socket") if request.transport else None
        if transport_sock is not None:  # loopback without TCP_NODELAY adds ~40 ms of Nagle delay per reply
            transport_sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        raw = await request.read()
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        kind = self._next_kind()
        text = json.dumps(body, ensure_ascii=False) if self.poison else ""
        kind = next((bad for marker, bad in self.poison.items() if marker in text), kind)
        if kind == "ok" and request.path == "/v1/chat/completions" and self._local_refusal(body) is not None:
            kind = "refused"  # an emulated server that does not take this request's form (answered 500)
        if self.api_key is not None and key_header_value(request, key_header) != self.api_key:
            kind = "401"
        with self._lock:
            self.counts[request.path] += 1
            self.answers[kind] += 1
            self.requests.append(Recorded(request.path, {k.lower(): v for k, v in request.headers.items()}, body, kind))
        if self.slots:  # a local server with N slots: the others wait in its queue, then take `latency` each
            if self._slot_gate is None:
                self._slot_gate = asyncio.Semaphore(self.slots)
            async with self._slot_gate:
                await asyncio.sleep(self.latency)
        elif self.latency:
            await asyncio.sleep(self.latency)
        if kind == "drop" and request.transport:
            request.transport.close()
        return body, kind

    async def _openai(self, request: web.Request) -> web.StreamResponse:
        body, kind = await self._receive(request, "authorization")
        if kind == "refused":
            return web.json_response(self._local_refusal(body), status=500)
        if kind in ("garbled", "shapeless"):
            return self._not_the_api(kind, {"id": "chatcmpl-x", "object": "chat.completion", "choices": "none"})
        if not kind.isdigit() and kind != "drop":
            return web.json_response(self._openai_reply(body or {}, kind))
        return self._error(kind, anthropic=False)

    async def _models(self, request: web.Request) -> web.StreamResponse:
        if self.served_model is None:
            return web.json_response({"error": {"message": "Not Found", "type": "not_found_error"}}, status=404)
        with self._lock:
            self.model_lists += 1
        entry: dict[str, Any] = {"id": self.served_model, "object": "model", "created": int(time.time()),
                                 "owned_by": "llamacpp"}
        if self.served_meta is not None:
            entry["meta"] = self.served_meta
        return web.json_response({"object": "list", "data": [entry]})

    def _local_refusal(self, body: Any) -> dict[str, Any] | None:
        """llama-cpp-python's answer to a response_format it does not take (its request model allows only
        'text' and 'json_object'), as its server sends it: HTTP 500 with pydantic's message."""
        body = body if isinstance(body, dict) else {}
        kind = (body.get("response_format") or {}).get("type") if isinstance(body.get("response_format"), dict) else None
        if self.emulate != "llama-cpp-python" or kind in (None, "text", "json_object"):
            return None
        message = ("[{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
                   "'msg': \"Input should be 'text' or 'json_object'\", 'input': '" + str(kind) + "'}]")
        return {"error": {"message": message, "type": "internal_server_error", "param": None, "code": None}}

    def _output_cap(self, body: dict[str, Any]) -> int | None:
        """The output cap this server reads: llama-cpp-python and Ollama read only max_tokens."""
        if self.emulate in ("llama-cpp-python", "ollama"):
            return body.get("max_tokens")
        return body.get("max_completion_tokens") or body.get("max_tokens")

    async def _anthropic(self, request: web.Request) -> web.StreamResponse:
        body, kind = await self._receive(request, "x-api-key")
        if kind in ("garbled", "shapeless"):
            return self._not_the_api(kind, {"id": "msg_x", "type": "message", "role": "assistant", "content": "none"})
        if not kind.isdigit() and kind != "drop":
            return web.json_response(self._anthropic_reply(body or {}, kind))
        return self._error(kind, anthropic=True)

    async def _stats(self, request: web.Request) -> web.StreamResponse:
        return web.json_response({"counts": dict(self.counts), "answers": dict(self.answers), "total": self.total,
                                  "batched": sum(self.batched.values()), "batched_twice": self.batched_twice})

    @property
    def batched_twice(self) -> int:
        """Requests submitted in a batch more than once (a pair paid twice)."""
        return sum(1 for n in self.batched.values() if n > 1)

    @staticmethod
    def _not_the_api(kind: str, shapeless: dict[str, Any]) -> web.Response:
        """A 200 that is not a reply: a proxy's HTML page, or JSON of the wrong shape."""
        if kind == "garbled":
            return web.Response(text="<html><body>502 Bad Gateway (proxy)</body></html>", content_type="text/html")
        return web.json_response(shapeless)

    def _error(self, kind: str, *, anthropic: bool) -> web.Response:
        status = 500 if kind == "drop" else int(kind)
        types = {429: "rate_limit_error", 500: "api_error", 529: "overloaded_error", 401: "authentication_error",
                 404: "not_found_error", 400: "invalid_request_error"}
        message = {401: "Incorrect API key provided.", 404: "The model does not exist.",
                   400: "Invalid request."}.get(status, f"fake error {status}")
        payload = ({"type": "error", "error": {"type": types[status], "message": message}} if anthropic
                   else {"error": {"message": message, "type": types[status], "code": None}})
        headers = {"retry-after": f"{self.faults.retry_after:g}"} if status in (429, 529) else {}
        return web.json_response(payload, status=status, headers=headers)

    def _planted(self, user: str, grade: int) -> int:
        """The grade after the planted biases (see the fields above)."""
        doc, query = _block_text(user, "document"), _block_text(user, "query")
        if self.length_bias and len(doc) > self.long_document:
            grade += self.length_bias
        words = lambda text: set(re.findall(r"[^\W_]+", text.lower()))  # noqa: E731
        if self.stuffing_bias and words(query) and words(query) <= words(doc):
            grade += self.stuffing_bias
        if self.lowercase_bias and any(c.isalpha() for c in doc) and doc == doc.lower():
            grade += self.lowercase_bias
        ordered = INJECTED.search(doc) if self.obeys_injection else None
        return int(ordered.group(1)) if ordered else min(max(grade, 1), 5)

    def _sampled_grade(self, user: str, temperature: float, model: str | None = None) -> int:
        """The planted grade (moved per model by model_offsets/model_noise), or (at temperature > 0, with
        probability `noise`) a grade near it."""
        grade = model_grade(user, model, self.model_offsets, self.model_noise)
        seq = SEQ_MARKER.search(user)
        if seq:
            with self._lock:
                nth = self.sampled[user]
                self.sampled[user] += 1
            grades = [int(g) for g in seq.group(1).split(",")]
            return grades[min(nth, len(grades) - 1)]
        if model in self.model_grades:
            grade = self.model_grades[model](expected_grade(user))
        if temperature <= 0 or not self.noise:
            return grade
        with self._lock:
            nth = self.sampled[user]
            self.sampled[user] += 1
        rng = random.Random(f"{self.noise_seed}:{hashlib.sha256(user.encode('utf-8')).hexdigest()}:{nth}")
        if rng.random() >= self.noise:
            return grade
        step = rng.randint(1, max(1, self.noise_spread)) * rng.choice((-1, 1))
        moved = grade + step
        if not 1 <= moved <= 5:  # reflected, so the grade always moves
            moved = grade - step
        return min(5, max(1, moved))

    def _verdict(self, user: str, kind: str, temperature: float = 0.0, model: str | None = None) -> dict[str, Any]:
        grade = self._planted(user, self._sampled_grade(user, temperature, model))
        justification = f"The document matches the query at grade {grade}."
        if kind == "range":
            return {"justification": justification, "grade": 9}
        if kind == "missing":
            return {"justification": justification}
        if kind == "empty":
            return {"justification": "", "grade": grade}
        return {"justification": justification, "grade": grade}

    def _reply(self, user: str, kind: str, temperature: float = 0.0, model: str | None = None) -> dict[str, Any]:
        """The planted reply of the task the prompt is: a claim verdict (a <claim> block), a claim split (an
        <answer> block), else a relevance verdict."""
        if "<claim>" in user:
            planted = CLAIM_SEQ_MARKER.search(_block_text(user, "claim"))
            if planted:  # [[claimseq:...]]: the verdict of the 1st, 2nd, ... request for this prompt (the last repeats)
                with self._lock:
                    nth = self.sampled[user]
                    self.sampled[user] += 1
                steps = planted.group(1).split(",")
                user = user.replace(planted.group(0), f"[[{steps[min(nth, len(steps) - 1)]}]]")
            return claim_verdict(user, kind)
        if "<answer>" in user:
            return claim_split(user, kind)
        return self._verdict(user, kind, temperature, model)

    def _tokens(self, system: str, user: str) -> tuple[int, int]:
        """(prompt tokens, cached tokens): about 4 characters a token; the system prefix is cached after first use."""
        with self._lock:
            seen = system in self._seen_systems
            self._seen_systems.add(system)
        text = system + user
        other = len(text) - len(text.encode("ascii", "ignore"))
        prompt = int((len(text) - other) / 4 + other * self.non_ascii_tokens) + 1
        return prompt, (len(system) // 4 if seen else 0)

    def _openai_reply(self, body: dict[str, Any], kind: str) -> dict[str, Any]:
        messages = body.get("messages") or []
        system = "".join(_text(m.get("content")) for m in messages if m.get("role") in ("system", "developer"))
        user = "".join(_text(m.get("content")) for m in messages if m.get("role") == "user")
        prompt_tokens, cached = self._tokens(system, user)
        temperature = float(body.get("temperature", 1.0))  # OpenAI's API samples at 1.0 unless told otherwise
        content: str | None = json.dumps(self._reply(user, kind, temperature, body.get("model")), ensure_ascii=False)
        refusal = None
        if kind == "malformed":
            content = '{"justification": "The document is relevant", "grade": '
        elif kind == "refusal":
            content, refusal = None, "I'm sorry, I can't help with that."
        completion_tokens, finish = self.reply_tokens, "stop"
        cap = self._output_cap(body)
        if cap is not None and completion_tokens > cap:  # the model ran until the cap the server read
            completion_tokens, finish, content = cap, "length", (content or "")[: max(cap, 1)]
        message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": refusal}
        choice = (body.get("tool_choice") or {}) if isinstance(body.get("tool_choice"), dict) else {}
        if choice.get("type") == "function" and content is not None and finish == "stop" and kind != "malformed":
            name = (choice.get("function") or {}).get("name", "")
            message = {"role": "assistant", "content": None, "refusal": None,
                       "tool_calls": [{"id": f"call_{self.total}", "type": "function",
                                       "function": {"name": name, "arguments": content}}]}
        elif self.text_fence and "response_format" not in body and "tools" not in body and content and finish == "stop":
            message["content"] = f"Here is my verdict.\n```json\n{content}\n```"
        logprobs = None
        if (self.logprobs and body.get("logprobs") and message.get("content") and finish == "stop"
                and "[[nologprobs]]" not in user):
            logprobs = {"content": token_logprobs(message["content"], user, int(body.get("top_logprobs") or 0))}
        reply = {
            "id": f"chatcmpl-{self.total}", "object": "chat.completion", "created": int(time.time()),
            "model": self.served_model or body.get("model", "unknown"),
            "choices": [{"index": 0, "finish_reason": finish, "logprobs": logprobs, "message": message}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens,
                      "prompt_tokens_details": {"cached_tokens": cached}},
        }
        if self.fingerprint is not None:
            reply["system_fingerprint"] = self.fingerprint
        return reply

    def _anthropic_reply(self, body: dict[str, Any], kind: str) -> dict[str, Any]:
        system = _text(body.get("system"))
        user = "".join(_text(m.get("content")) for m in body.get("messages") or [] if m.get("role") == "user")
        prompt_tokens, cached = self._tokens(system, user)
        content: list[dict[str, Any]]
        stop = "tool_use"
        if kind == "malformed":
            content, stop = [{"type": "text", "text": "The grade is probably 4, I think."}], "end_turn"
        elif kind == "refusal":
            content, stop = [{"type": "text", "text": "I can't help with that."}], "refusal"
        else:
            tool = (body.get("tool_choice") or {}).get("name", "record_verdict")
            content = [{"type": "tool_use", "id": f"toolu_{self.total}", "name": tool,
                        "input": self._reply(user, kind, float(body.get("temperature", 1.0)), body.get("model"))}]
        return {
            "id": f"msg_{self.total}", "type": "message", "role": "assistant", "model": body.get("model", "unknown"),
            "content": content, "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": prompt_tokens - cached, "output_tokens": 20,
                      "cache_read_input_tokens": cached, "cache_creation_input_tokens": 0},
        }


def token_logprobs(content: str, user: str, top: int) -> list[dict[str, Any]]:
    """The reply's tokens with their log-probabilities; the grade's alternatives as the prompt's marker plants."""
    tokens = TOKEN.findall(content)
    grade_at = max((i for i, t in enumerate(tokens[1:], 1) if tokens[i - 1] == '":' and t.strip().isdigit()
                    and tokens[i - 2] == "grade"), default=None)
    out = []
    for i, text in enumerate(tokens):
        entry: dict[str, Any] = {"token": text, "logprob": 0.0, "bytes": list(text.encode()), "top_logprobs": []}
        if i == grade_at:
            planted = PROBS_MARKER.search(user)
            probs = [float(p) for p in planted.group(1).split(",")] if planted else \
                [1.0 if g == int(text) else 0.0 for g in range(1, 6)]
            alts = [(f" {g}", 0.9 * p) for g, p in enumerate(probs, 1) if p > 0] + [(' "', 0.1)]
            alts.sort(key=lambda alt: -alt[1])
            entry["logprob"] = math.log(dict(alts).get(text, 1e-9))
            entry["top_logprobs"] = [{"token": t, "logprob": math.log(p), "bytes": list(t.encode())}
                                     for t, p in alts[:top]]
        elif top:
            entry["top_logprobs"] = [{"token": text, "logprob": 0.0, "bytes": list(text.encode())}]
        out.append(entry)
    return out


def claim_verdict(user: str, kind: str) -> dict[str, Any]:
    """The planted verdict of a claim prompt: a marker [[supported:d1]], [[contradicted:d2:d3]] or
    [[not_supported]] in the claim (none: not_supported). Faults: range (an unknown verdict), missing (no
    verdict), empty (a blank justification), stray (a supported verdict naming a passage not shown)."""
    found = CLAIM_MARKER.search(_block_text(user, "claim"))
    verdict, ids = (found.group(1), [i for i in found.group(2).split(":") if i]) if found else ("not_supported", [])
    reply = {"justification": f"Planted: {verdict}.", "verdict": verdict,
             "supporting": ids if verdict == "supported" else [], "contradicting": ids if verdict == "contradicted" else []}
    if kind == "range":
        reply["verdict"] = "probably"
    elif kind == "missing":
        del reply["verdict"]
    elif kind == "empty":
        reply["justification"] = ""
    elif kind == "stray":
        reply.update(verdict="supported", supporting=["not-a-shown-passage"], contradicting=[])
    return reply


def claim_split(user: str, kind: str) -> dict[str, Any]:
    """The planted split of an answer: its sentences (split after . ! ?), markers kept; [[abstain]] in the answer
    makes it an abstention, whose sentences are claims only when they carry a verdict marker (the sentence that
    declines is not a claim). Faults: range (a claim that is not a string), missing (no claims), empty (a blank
    justification)."""
    answer = _block_text(user, "answer")
    abstained = "[[abstain]]" in answer
    claims = [c.strip() for c in SENTENCE_END.split(answer)
              if c.strip() and "[[abstain]]" not in c and (not abstained or CLAIM_MARKER.search(c))]
    reply: dict[str, Any] = {"justification": f"Planted: {len(claims)} claims.", "abstained": "[[abstain]]" in answer,
                             "claims": claims}
    if kind == "range":
        reply["claims"] = [1, 2]
    elif kind == "missing":
        del reply["claims"]
    elif kind == "empty":
        reply["justification"] = ""
    return reply


def key_header_value(request: web.Request, header: str) -> str | None:
    """The API key sent: `header`, else an `Authorization: Bearer` (anthropic 2.x sends its key that way)."""
    value = request.headers.get(header) if header != "authorization" else None
    bearer = request.headers.get("authorization", "")
    if not value and bearer.lower().startswith("bearer "):
        value = bearer[7:]
    return value


def _block_text(user: str, tag: str) -> str:
    found = re.search(rf"<{tag}>\n(.*?)\n</{tag}>", user, re.DOTALL)
    return found.group(1) if found else ""


def _text(content: Any) -> str:
    """Text of a message content: a string, or a list of blocks with 'text'."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(block.get("text", "") for block in content if isinstance(block, dict))
    return ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--faults", default="", help="e.g. 429=0.15,500=0.1,malformed=0.08,range=0.05,seed=1")
    parser.add_argument("--api-key", default=None)
    parser.add_argument("--batch-delay", type=float, default=0.0, help="seconds until a batch's results are ready")
    parser.add_argument("--noise", type=float, default=0.0, help="at temperature > 0: share of grades off the planted one")
    parser.add_argument("--noise-spread", type=int, default=1)
    parser.add_argument("--noise-seed", type=int, default=0)
    args = parser.parse_args()
    api = FakeAPI(latency=args.latency, faults=Faults.parse(args.faults), api_key=args.api_key, port=args.port,
                  batch_delay=args.batch_delay, noise=args.noise, noise_spread=args.noise_spread,
                  noise_seed=args.noise_seed)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    api.start()
    print(f"fakeapi listening on {api.url}", flush=True)
    # Wake up now and then: the kernel may hand the signal to the server thread, and Python runs
    # handlers only when the main thread gets control back.
    while not stop.wait(0.2):
        pass
    api.stop()
    print(json.dumps({"counts": dict(api.counts), "answers": dict(api.answers), "total": api.total,
                      "batched": sum(api.batched.values())}), flush=True)


if __name__ == "__main__":
    main()


def grade_once(judge, prompt):
    """One verdict from a judge, closing its client afterwards."""
    async def run():
        try:
            return await judge.generate(prompt)
        finally:
            await judge.aclose()
    return asyncio.run(run())
