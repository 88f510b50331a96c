"""A knowledge system exposed as a Model Context Protocol server, through the official `mcp` SDK.

    kind = "mcp"
    [system]
    command = ["python", "kb_server.py"]   # stdio: the server is started as a subprocess ...
    # url = "http://127.0.0.1:8000/mcp"   # ... or reached over streamable HTTP
    auth_env = "KB_TOKEN"                  # HTTP: sent as `Authorization: Bearer <value>`; stdio: passed
                                           # to the server in its environment under the same name
    tool = "search"                        # the search tool; must be listed by tools/list
    timeout_s = 30
    [system.arguments]                     # the tool's arguments; "$query", "$query_id", "$user",
    query = "$query"                       # "$groups", "$k" are replaced (default: these four)
    [system.response]                      # dotted paths into the tool's structured (or JSON text) result
    results = "results"                    # as for kind = "http"

Connection and tool discovery happen once, when the system is opened. A server that cannot be
reached, rejects the credentials or does not list the tool is not an input error: every case then
fails as an integration failure naming what went wrong. A tool result flagged `isError`, or an MCP
error, is that case's error. Server, client and protocol versions go into the result.
Needs the `mcp` extra: pip install "labeller-relevance[mcp]".
"""

from __future__ import annotations

import json
import os
from contextlib import ExitStack
from importlib.metadata import version
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from labeller.errors import BadInputError, redact
from labeller.redaction import redact_url
from labeller.systems.base import SearchRequest, SearchResponse
from labeller.systems.http import ResponseMapping, fill, parse_reply


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    command: list[str] | None = None
    url: str | None = Field(default=None, pattern=r"^https?://")
    auth_env: str | None = None
    tool: str = "search"
    timeout_s: float = Field(default=30.0, gt=0)
    arguments: dict[str, Any] = {"query": "$query", "user": "$user", "groups": "$groups", "k": "$k"}
    response: ResponseMapping = ResponseMapping()

    @model_validator(mode="after")
    def _one_transport(self) -> Settings:
        if (self.command is None) == (self.url is None):
            raise ValueError("give exactly one of command (stdio) or url (streamable HTTP)")
        if self.command is not None and not self.command:
            raise ValueError("command is empty; expected the server's argv, e.g. [\"python\", \"server.py\"]")
        return self


def _message(exc: BaseException) -> str:
    """The innermost cause of an SDK failure (task groups wrap them), as one line."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}".splitlines()[0]


class McpSystem:
    live = True

    def __init__(self, settings: Settings, name: str, base: Path | None = None):
        self._base = base
        try:
            import mcp  # noqa: F401
        except ImportError:
            raise BadInputError('kind = "mcp" needs the mcp extra: pip install "labeller-relevance[mcp]"',
                                field="kind") from None
        self.settings, self.name = settings, name
        self._secret = os.environ.get(settings.auth_env) if settings.auth_env else None
        if settings.auth_env and not self._secret:
            raise BadInputError(f"the MCP server's credential comes from ${settings.auth_env}, which is not set",
                                field="system.auth_env")
        self._stack = ExitStack()
        self.startup_error: str | None = None
        self._info: dict[str, Any] = {}
        self._http_status: int | None = None
        try:
            self._connect()
        except Exception as exc:  # unreachable, auth rejected, discovery failed: every case fails, named
            status = f" (HTTP {self._http_status})" if self._http_status else ""
            self.startup_error = self._clean(f"MCP server failed to start or list its tools: {_message(exc)}{status}")

    def _clean(self, text: str) -> str:
        return redact(text, [self._secret])[:300]

    def _connect(self) -> None:
        from anyio.from_thread import start_blocking_portal
        from mcp import Client, StdioServerParameters
        from mcp.client.stdio import get_default_environment

        s = self.settings
        self._portal = self._stack.enter_context(start_blocking_portal())
        if s.command is not None:
            env = {**get_default_environment(), **({s.auth_env: self._secret} if s.auth_env else {})}
            target: Any = StdioServerParameters(command=s.command[0], args=s.command[1:], env=env,
                                                   cwd=str(self._base) if self._base else None)
        else:
            target = self._http_transport()
        client = Client(target, read_timeout_seconds=s.timeout_s, cache=None)
        self._client = self._stack.enter_context(self._portal.wrap_async_context_manager(client))
        tools = self._portal.call(self._client.list_tools).tools
        names = [t.name for t in tools]
        server = self._client.server_info
        self._info = {"server": f"{server.name} {server.version}" if server else None,
                      "protocol": self._client.protocol_version, "tools": names}
        if s.tool not in names:
            raise LookupError(f"tool '{s.tool}' is not listed; the server lists: {', '.join(names) or 'none'}")

    def _http_transport(self) -> Any:
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        async def note_status(response: Any) -> None:  # the SDK reports a refused request without its status
            if response.status_code >= 400:
                self._http_status = response.status_code

        headers = {"Authorization": f"Bearer {self._secret}"} if self._secret else {}
        http = httpx2.AsyncClient(headers=headers,
                                  timeout=httpx2.Timeout(self.settings.timeout_s),
                                  event_hooks={"response": [note_status]})
        self._stack.callback(lambda: self._portal.call(http.aclose))
        return streamable_http_client(self.settings.url, http_client=http)

    async def _call(self, request: SearchRequest) -> SearchResponse:
        from mcp import MCPError

        try:
            result = await self._client.call_tool(self.settings.tool, fill(self.settings.arguments, request))
        except MCPError as exc:
            status = f" (HTTP {self._http_status})" if self._http_status else ""
            return SearchResponse(error=self._clean(f"MCP error {exc.code}: {exc}{status}"))
        except Exception as exc:
            return SearchResponse(error=self._clean(f"MCP call failed: {_message(exc)}"))
        text = " ".join(getattr(c, "text", "") for c in result.content)
        if result.is_error:
            return SearchResponse(error=self._clean(f"tool error: {text}"))
        reply = result.structured_content
        if reply is None:
            try:
                reply = json.loads(text)
            except ValueError:
                return SearchResponse(error="the tool's result is neither structured content nor JSON text")
        return parse_reply(reply, self.settings.response, request.k)

    def search(self, request: SearchRequest) -> SearchResponse:
        if self.startup_error is not None:
            return SearchResponse(error=self.startup_error)
        return self._portal.call(self._call, request)

    def describe(self) -> dict[str, Any]:
        s = self.settings
        where = redact_url(s.url) if s.url else " ".join(s.command or [])
        return {"kind": "mcp", "transport": "streamable-http" if s.url else "stdio", "target": where,
                "client": f"mcp {version('mcp')}", **self._info, "startup_error": self.startup_error}

    def close(self) -> None:
        try:
            self._stack.close()
        except Exception:  # a server that already died: nothing left to close
            pass


def open_system(settings: Settings, base: Path, name: str) -> McpSystem:
    return McpSystem(settings, name, base)
