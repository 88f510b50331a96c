"""A tiny permission-aware knowledge base the acceptance tests put behind real HTTP and MCP servers.

Faults are planted by name: "leak" ignores permissions, "stale" serves inv-1 at an old revision,
"drop" never returns inv-2, "error:<word>" fails queries holding the word, "slow:<word>" sleeps 0.3 s on
them, "lag:<seconds>" keeps a revoked document for that long, "mute:<word>" returns nothing for queries holding
the word, "chatty" adds the public document to every answer, "answers" adds an answer citing the top
document, "grounded" an answer made of the top document's own words, "hallucinate" an answer no document
supports (both citing the top document), "answer:<text>" that text as the answer, "cost" reports a cost per
query.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DOCS = {
    "inv-1": {"text": "invoice kite couriers march", "rev": "r2", "users": [], "groups": ["finance"]},
    "inv-2": {"text": "invoice toner supplies", "rev": "r1", "users": [], "groups": ["finance"]},
    "hr-1": {"text": "salary review carol", "rev": "r1", "users": ["carol"], "groups": ["hr"]},
    "pub-1": {"text": "holiday calendar public", "rev": "r1", "users": ["*"], "groups": []},
}
ACL = [{"doc_id": d, "users": v["users"], "groups": v["groups"]} for d, v in DOCS.items()]


class KnowledgeBase:
    def __init__(self, faults: tuple[str, ...] = ()):
        self.faults = set(faults)
        self.revoked: dict[tuple[str, str], float] = {}  # (doc, user) -> when
        self.deleted: dict[str, float] = {}
        self.calls = 0
        self.lock = threading.Lock()

    def _param(self, name: str) -> list[str]:
        return [f.split(":", 1)[1] for f in self.faults if f.startswith(name + ":")]

    def visible(self, doc: str, user: str, groups: list[str]) -> bool:
        d = DOCS[doc]
        lag = float((self._param("lag") or ["0"])[0])
        gone = [t for key, t in self.revoked.items() if key == (doc, user)]
        gone += [self.deleted[doc]] if doc in self.deleted else []
        if any(time.monotonic() - t >= lag for t in gone):
            return False
        return "leak" in self.faults or "*" in d["users"] or user in d["users"] or bool(set(groups) & set(d["groups"]))

    def search(self, query: str, user: str, groups: list[str], k: int) -> dict:
        with self.lock:
            self.calls += 1
        if any(w in query for w in self._param("error")):
            raise RuntimeError(f"index shard unavailable for '{query}'")
        if any(w in query for w in self._param("slow")):
            time.sleep(0.3)
        if any(w in query for w in self._param("mute")):
            return {"results": []}
        words = set(query.lower().split()) | ({"public"} if "chatty" in self.faults else set())
        results = []
        for doc, d in DOCS.items():
            if doc == "inv-2" and "drop" in self.faults:
                continue
            if words & set(d["text"].split()) and self.visible(doc, user, groups):
                rev = "r1" if doc == "inv-1" and "stale" in self.faults else d["rev"]
                results.append({"doc_id": doc, "score": len(words & set(d["text"].split())),
                                "source_uri": f"kb://{doc}", "revision": rev})
        results.sort(key=lambda r: -r["score"])
        reply: dict = {"results": results[:k]}
        if "answers" in self.faults and results:
            reply.update(answer=f"See {results[0]['doc_id']}.", citations=[results[0]["doc_id"]])
        if "grounded" in self.faults and results:
            text = DOCS[results[0]["doc_id"]]["text"]
            reply.update(answer=f"{text[0].upper()}{text[1:]}.", citations=[results[0]["doc_id"]])
        if "hallucinate" in self.faults and results:
            reply.update(answer="Refunds are paid by carrier pigeon within ninety days.",
                         citations=[results[0]["doc_id"]])
        for text in self._param("answer") if results else []:
            reply.update(answer=text, citations=[results[0]["doc_id"]])
        if "cost" in self.faults:
            reply["cost"] = 0.002
        return reply

    def change(self, action: str, doc_id: str, user: str, groups: list[str]) -> None:
        if action == "revoke":
            self.revoked[(doc_id, user)] = time.monotonic()
        else:
            self.deleted[doc_id] = time.monotonic()


class HttpKB:
    """The knowledge base behind a real HTTP server on 127.0.0.1: POST /search, POST /change."""

    def __init__(self, faults: tuple[str, ...] = (), token: str | None = None):
        self.kb, self.token, self.seen_headers = KnowledgeBase(faults), token, []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
                outer.seen_headers.append(dict(self.headers))
                if outer.token and self.headers.get("Authorization") != f"Bearer {outer.token}":
                    return self._send(401, {"error": "unauthorized"})
                try:
                    if self.path == "/change":
                        outer.kb.change(body["action"], body["doc_id"], body["user"], body["groups"])
                        return self._send(200, {"ok": True})
                    return self._send(200, outer.kb.search(body["query"], body["user"], body["groups"], body["k"]))
                except RuntimeError as exc:
                    return self._send(500, {"error": str(exc)})

            def _send(self, status, payload):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> HttpKB:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
