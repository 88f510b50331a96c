"""The annotation page's HTTP server: the standard library's threading server, so `labeller annotate`
works in a plain `pip install labeller` without the serve extra.

Routes: GET / (the page), GET /annotate.js and /annotate.css, and a small JSON API the page calls:
GET /api/session, /api/queue?annotator=NAME, /api/agreement, /api/adjudication; POST /api/grade and
/api/adjudicate. A bad request gets 400 and {"error": "..."}; a page or file that no longer belongs to
the sample being served gets 409, which the page shows as a banner asking to reload; so does a settled
grade sent before the blind pass ends. A server bound to a loopback address answers only requests whose
Host names a loopback address or localhost (403 otherwise): a page elsewhere whose name was made to resolve to
127.0.0.1 (DNS rebinding) reads and writes nothing. A request the server does not read to its end (too
large, no byte count) is answered and its connection closed; a client that hangs up is never a traceback.
"""

from __future__ import annotations

import ipaddress
import json
import sys
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlparse

from labeller.annotate.session import NotReadyError, Session, StaleError
from labeller.errors import BadInputError

_STATIC = {"/": ("annotate.html", "text/html; charset=utf-8"),
           "/annotate.js": ("annotate.js", "text/javascript; charset=utf-8"),
           "/annotate.css": ("annotate.css", "text/css; charset=utf-8")}
_MAX_BODY = 1 << 20


def _static(name: str) -> bytes:
    return resources.files("labeller.annotate").joinpath("static", name).read_bytes()


class _Handler(BaseHTTPRequestHandler):
    server: AnnotationServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        if self.server.verbose:
            super().log_message(format, *args)

    def _send(self, status: int, body: bytes, content_type: str, close: bool = False) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        if close:  # the request's body was not read: what follows on this connection is not a request
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, payload: Any, close: bool = False) -> None:
        self._send(status, json.dumps(payload, ensure_ascii=False).encode("utf-8"), "application/json; charset=utf-8",
                   close)

    def _answer(self, call) -> None:
        try:
            self._json(200, call())
        except StaleError as exc:
            self._json(HTTPStatus.CONFLICT, {"error": str(exc), "stale": True})
        except NotReadyError as exc:
            self._json(HTTPStatus.CONFLICT, {"error": str(exc)})
        except BadInputError as exc:
            self._json(HTTPStatus.BAD_REQUEST, {"error": str(exc)})
        except Exception as exc:  # a fault of ours: the page still gets an answer, the log one line (handle_error)
            self._json(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": f"the server failed ({type(exc).__name__})"})
            raise

    def _foreign_host(self) -> bool:
        """Refuse (403) a request to a loopback server under another name (DNS rebinding)."""
        host = _host_name(self.headers.get("Host"))
        if not self.server.loopback or host is None or host in self.server.own_names:
            return False
        self._json(HTTPStatus.FORBIDDEN, {"error": f"Host {host!r} is not this server's name; open the page at "
                                                   f"{self.server.url}"}, close=True)
        return True

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        if self._foreign_host():
            return
        url = urlparse(self.path)
        session = self.server.session
        if url.path in _STATIC:
            name, kind = _STATIC[url.path]
            return self._send(200, _static(name), kind)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        routes = {"/api/session": session.info, "/api/queue": lambda: session.queue(query.get("annotator")),
                  "/api/agreement": session.agreement, "/api/adjudication": session.adjudication}
        if url.path not in routes:
            return self._json(HTTPStatus.NOT_FOUND, {"error": f"no such page: {url.path}"})
        self._answer(routes[url.path])

    def do_POST(self) -> None:  # noqa: N802
        if self._foreign_host():
            return
        url = urlparse(self.path)
        session = self.server.session
        routes = {"/api/grade": session.grade, "/api/adjudicate": session.adjudicate}
        if url.path not in routes:
            return self._json(HTTPStatus.NOT_FOUND, {"error": f"no such endpoint: {url.path}"}, close=True)
        body = self._body()
        if body is not None:
            self._answer(lambda: routes[url.path](body))

    def _body(self) -> dict[str, Any] | None:
        """The request's JSON object, or None once a 413 or 400 saying why has been sent."""
        given = (self.headers.get("Content-Length") or "0").strip()
        if not given.isdigit() or not given.isascii():
            return self._json(HTTPStatus.BAD_REQUEST, {"error": f"Content-Length {given[:40]!r} is not a byte count"},
                              close=True)
        length = int(given)
        if length > _MAX_BODY:
            return self._json(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, {"error": "request body too large"}, close=True)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except (json.JSONDecodeError, UnicodeDecodeError):
            return self._json(HTTPStatus.BAD_REQUEST, {"error": "request body is not JSON"})
        if not isinstance(body, dict):
            return self._json(HTTPStatus.BAD_REQUEST, {"error": "request body must be a JSON object"})
        return body


class AnnotationServer(ThreadingHTTPServer):
    daemon_threads = True
    # socketserver's default backlog of 5 resets connections when a team saves at once on a busy machine
    request_queue_size = 128

    def __init__(self, session: Session, host: str = "127.0.0.1", port: int = 0, verbose: bool = False) -> None:
        self.session, self.verbose = session, verbose
        self.loopback = _is_loopback(host)  # then the Host header is checked (DNS rebinding)
        self.own_names = {"localhost", "127.0.0.1", "[::1]", host.lower()}
        super().__init__((host, port), _Handler)
        # scikit-learn (kappa) takes seconds to import on a busy machine: load it now, not on the first
        # request for the agreement view
        threading.Thread(target=lambda: __import__("sklearn.metrics"), daemon=True).start()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """One line on stderr, never a traceback: a client hanging up mid-request is routine, not a fault."""
        error = sys.exc_info()[1]
        if isinstance(error, (ConnectionError, TimeoutError)):
            return
        print(f"labeller: warning: annotate: a request from {client_address[0]} failed "
              f"({type(error).__name__}: {error})", file=sys.stderr)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/"

    def start_in_thread(self) -> threading.Thread:
        """For tests and notebooks: serve in a background thread; stop with shutdown() and server_close()."""
        thread = threading.Thread(target=self.serve_forever, daemon=True)
        thread.start()
        return thread


def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _host_name(header: str | None) -> str | None:
    """The name in a Host header, without its port, lower-cased ("[::1]" keeps its brackets); None if absent."""
    if not header:
        return None
    header = header.strip().lower()
    if header.startswith("["):
        return header[:header.find("]") + 1] if "]" in header else header
    name, _, port = header.rpartition(":")
    return name if name and port.isdigit() else header
