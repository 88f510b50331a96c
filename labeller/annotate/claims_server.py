"""The claim-mode page's server (labeller.annotate.claims): GET / (the page), GET /api/claim (the next claim for
this session's person), POST /api/verdict {claim_id, verdict, note}. The same stdlib server as the grading page."""

from __future__ import annotations

from http import HTTPStatus
from http.server import ThreadingHTTPServer
from urllib.parse import urlparse

from labeller.annotate.claims import ClaimSession
from labeller.annotate.server import AnnotationServer, _Handler, _static


class _ClaimHandler(_Handler):
    server: ClaimServer

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        path = urlparse(self.path).path
        if path == "/":
            return self._send(200, _static("claims.html"), "text/html; charset=utf-8")
        if path == "/annotate.css":
            return self._send(200, _static("annotate.css"), "text/css; charset=utf-8")
        if path == "/api/claim":
            return self._answer(self.server.claims.queue)
        self._json(HTTPStatus.NOT_FOUND, {"error": f"no such page: {path}"})

    def do_POST(self) -> None:  # noqa: N802
        if urlparse(self.path).path != "/api/verdict":
            return self._json(HTTPStatus.NOT_FOUND, {"error": "no such endpoint"})
        body = self._body()
        if body is not None:
            self._answer(lambda: self.server.claims.judge(body))


class ClaimServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = AnnotationServer.request_queue_size
    verbose = False
    url = AnnotationServer.url
    start_in_thread = AnnotationServer.start_in_thread

    def __init__(self, claims: ClaimSession, host: str = "127.0.0.1", port: int = 0) -> None:
        self.claims = claims
        super().__init__((host, port), _ClaimHandler)
