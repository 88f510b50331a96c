"""What stands between the network and the API: a bearer token, and a cap on request bodies.

`POST /judge` can spend the operator's API key, so a server reachable beyond loopback should require
a token (`LABELLER_SERVE_TOKEN`, or `token` in the config), and no caller may make it hold an
arbitrarily large body in memory. Pure ASGI, so it runs before FastAPI reads or parses anything: a
caller without the token is refused before its body is read, and a body is counted as it arrives
(a missing or false Content-Length does not get past the cap).
"""

from __future__ import annotations

import hmac
import json
import os
from typing import Any

from labeller.errors import ConfigError

TOKEN_ENV = "LABELLER_SERVE_TOKEN"
# Liveness probes carry no token, and neither does a browser opening the API's docs: the page, its
# static script and styles and the OpenAPI schema describe the API and hold no data or secret.
OPEN_PATHS = ("/health", "/docs", "/docs/oauth2-redirect", "/redoc", "/openapi.json")
OPEN_PREFIXES = ("/static-offline-docs/",)
MIN_TOKEN_LENGTH = 8  # for the config's `token` and LABELLER_SERVE_TOKEN alike


def is_loopback(host: str) -> bool:
    """True for an address only this machine can reach (127.0.0.0/8, ::1, localhost)."""
    import ipaddress

    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name: it may resolve anywhere
        return False


def serve_token(configured: str | None) -> str | None:
    """The token callers must present: the environment's, else the config's; None when neither is set. The
    environment's is held to the config's minimum length (a 1-character token is guessed at once)."""
    token = os.environ.get(TOKEN_ENV)
    if token and len(token) < MIN_TOKEN_LENGTH:
        raise ConfigError(f"{TOKEN_ENV} is {len(token)} character{'s' * (len(token) != 1)} long; expected at least {MIN_TOKEN_LENGTH}, as "
                          "for [server] token", field=TOKEN_ENV)
    return token or configured or None


class RequestGuard:
    def __init__(self, app: Any, *, max_body_bytes: int, token: str | None) -> None:
        self.app, self.max_body_bytes, self.token = app, max_body_bytes, token

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = dict(scope.get("headers") or [])
        path = scope["path"]
        open_path = path in OPEN_PATHS or path.startswith(OPEN_PREFIXES)
        if self.token and not open_path and not self._authorized(headers):
            return await _reply(send, 401, "missing or wrong bearer token: send 'Authorization: Bearer <token>'",
                                [(b"www-authenticate", b"Bearer")])
        declared = headers.get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.max_body_bytes:
            return await self._too_large(send)
        messages, size = [], 0
        while True:  # read the whole body here, counting, so no handler ever sees more than the cap
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            size += len(message.get("body", b""))
            if size > self.max_body_bytes:
                return await self._too_large(send)
            if not message.get("more_body", False):
                break

        async def replay() -> dict:
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)

    def _authorized(self, headers: dict[bytes, bytes]) -> bool:
        scheme, _, given = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), self.token.encode())

    async def _too_large(self, send: Any) -> None:
        await _reply(send, 413, f"request body larger than {self.max_body_bytes:,} bytes (server.max_body_bytes)")


async def _reply(send: Any, status: int, detail: str, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    body = json.dumps({"detail": detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *(extra or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def project_key_refusal(accepted: list[str], given: str | None, agent_id: str) -> tuple[int, str] | None:
    """Why a retrieval test's `project_key` is refused (status, detail), or None when it may proceed.

    No keys configured for the agent: any value passes. Otherwise a key that is not one of the
    agent's is 403, and the reply does not repeat it. (A missing key is the app's 422 before this.)
    """
    if not accepted or given is None:
        return None
    if not any(hmac.compare_digest(given.encode(), key.encode()) for key in accepted):
        return 403, (f"the project_key sent is not accepted for agent '{agent_id}' "
                     "([server] project_keys or retrievers.<agent>.project_keys)")
    return None
