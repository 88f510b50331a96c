"""The acceptance tests' knowledge base as a real MCP server (official SDK), run as a subprocess.

    python mcp_kb_server.py stdio [faults...]        # over stdin/stdout
    python mcp_kb_server.py http PORT [faults...]    # streamable HTTP on 127.0.0.1:PORT/mcp

In HTTP mode, POST /change {action, doc_id, user, groups} is the change hook.
Extra faults: "no-tool" lists no search tool (discovery fails); "token" requires
`Authorization: Bearer $KB_TOKEN` (HTTP: 401 otherwise; stdio: the tool refuses without $KB_TOKEN).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from acceptance_kb import KnowledgeBase  # noqa: E402
from mcp.server import MCPServer  # noqa: E402
from mcp.server.mcpserver.exceptions import ToolError  # noqa: E402

transport, rest = sys.argv[1], sys.argv[2:]
port = int(rest.pop(0)) if transport == "http" else 0
faults = tuple(rest)
kb = KnowledgeBase(faults)
server = MCPServer("kb-test", version="0.9.1")

if "no-tool" not in faults:
    @server.tool()
    def search(query: str, user: str, groups: list[str], k: int = 10) -> dict:
        """Search the knowledge base as a user."""
        if transport == "stdio" and "token" in faults and os.environ.get("KB_TOKEN") != "kb-secret-7f3a9c":
            raise ToolError("unauthorized: bad KB_TOKEN")
        try:
            return kb.search(query, user, groups, k)
        except RuntimeError as exc:
            raise ToolError(str(exc)) from None
else:
    @server.tool()
    def ping() -> str:
        """Not a search tool."""
        return "pong"



@server.custom_route("/change", methods=["POST"])
async def change(request):
    """The change hook over HTTP (streamable HTTP mode): revoke or delete, as the acceptance run asks."""
    from starlette.responses import JSONResponse

    body = await request.json()
    kb.change(body["action"], body["doc_id"], body["user"], body["groups"])
    return JSONResponse({"ok": True})


if transport == "stdio":
    server.run()
else:
    import uvicorn

    app = server.streamable_http_app()
    token = os.environ.get("KB_TOKEN")

    async def guarded(scope, receive, send):
        if scope["type"] == "http" and "token" in faults:
            headers = dict(scope["headers"])
            if headers.get(b"authorization") != f"Bearer {token}".encode():
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json")]})
                await send({"type": "http.response.body", "body": b'{"error": "unauthorized"}'})
                return
        await app(scope, receive, send)

    uvicorn.run(guarded, host="127.0.0.1", port=port, log_level="warning")
