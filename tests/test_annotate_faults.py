"""The annotation server under hostile requests (issue 25), over real HTTP on loopback: every request gets a
reply (4xx with a JSON error), the server's log holds no traceback, and nothing is written to the gold file."""

from __future__ import annotations

import http.client
import json
import socket
import struct
import time

import pytest
from annotate_helpers import frozen_sample, running, session


def _request(server, method: str, path: str, body: bytes | None = None, headers: dict | None = None):
    host, port = server.server_address[:2]
    conn = http.client.HTTPConnection(host, port, timeout=30)
    try:
        conn.putrequest(method, path, skip_host="Host" in (headers or {}), skip_accept_encoding=True)
        for name, value in (headers or {}).items():
            conn.putheader(name, value)
        if body is not None and "Content-Length" not in (headers or {}):
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        response = conn.getresponse()
        return response.status, json.loads(response.read() or b"null")
    finally:
        conn.close()


def _post(server, path: str, payload) -> tuple[int, dict]:
    return _request(server, "POST", path, json.dumps(payload).encode("utf-8"),
                    {"Content-Type": "application/json"})


@pytest.fixture
def served(tmp_path):
    frozen_sample(tmp_path, size=6)
    sess = session(tmp_path, annotators=("alice", "bob"), overlap=1.0)
    with running(sess) as server:
        yield server, sess, tmp_path


def _gold_lines(root) -> int:
    gold = root / "gold.jsonl"
    return len(gold.read_text(encoding="utf-8").splitlines()) if gold.exists() else 0


@pytest.mark.parametrize("field,value", [("annotator", ["alice"]), ("annotator", {"name": "alice"}),
                                         ("query_id", ["q"]), ("query_id", {"id": 1}), ("doc_id", [1, 2])])
def test_a_list_or_object_where_a_name_belongs_is_a_400(served, capsys, field, value):
    server, sess, root = served
    row = sess.sample.rows[0]
    body = {"sample_id": sess.sample.sample_id, "annotator": "alice", "query_id": row.query_id,
            "doc_id": row.doc_id, "outcome": "graded", "grade": 3, "note": "n", field: value}
    status, answer = _post(server, "/api/grade", body)
    assert status == 400 and field in answer["error"], answer
    status, answer = _post(server, "/api/adjudicate", {**body, "adjudicator": "carol"})
    assert status in (400, 409) and "error" in answer, answer
    assert _gold_lines(root) == 0
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize("length", ["abc", "-5", "1e3"])
def test_a_content_length_that_is_not_a_byte_count_is_a_400(served, capsys, length):
    server, _, _ = served
    status, answer = _request(server, "POST", "/api/grade", b"{}", {"Content-Length": length})
    assert status == 400 and "Content-Length" in answer["error"], answer
    assert "Traceback" not in capsys.readouterr().err


def test_adjudication_is_refused_until_the_blind_pass_ends(served, capsys):
    server, sess, root = served
    row = sess.sample.rows[0]
    body = {"sample_id": sess.sample.sample_id, "adjudicator": "carol", "query_id": row.query_id,
            "doc_id": row.doc_id, "grade": 3, "note": "n"}
    status, answer = _post(server, "/api/adjudicate", body)
    assert status == 409 and "blind pass" in answer["error"] and not answer.get("stale"), answer
    assert _gold_lines(root) == 0
    for r in sess.sample.rows:  # everyone grades everything: now it may be settled
        for who in ("alice", "bob"):
            assert _post(server, "/api/grade", {"sample_id": sess.sample.sample_id, "annotator": who,
                                                "query_id": r.query_id, "doc_id": r.doc_id, "outcome": "graded",
                                                "grade": 3, "note": "n"})[0] == 200
    assert _post(server, "/api/adjudicate", body)[0] == 200
    assert _gold_lines(root) == 13


def test_with_open_review_a_pair_may_be_settled_at_once(tmp_path):
    frozen_sample(tmp_path, size=6)
    sess = session(tmp_path, annotators=("alice", "bob"), overlap=1.0, open_review=True)
    row = sess.sample.rows[0]
    with running(sess) as server:
        status, answer = _post(server, "/api/adjudicate", {"sample_id": sess.sample.sample_id, "adjudicator": "carol",
                                                           "query_id": row.query_id, "doc_id": row.doc_id, "grade": 4})
    assert status == 200 and _gold_lines(tmp_path) == 1, answer


@pytest.mark.parametrize("host", ["evil.example", "evil.example:{port}", "127.0.0.1.evil.example:{port}"])
def test_a_loopback_server_answers_only_its_own_host_names(served, host):
    """DNS rebinding: a page on another site whose name resolves to 127.0.0.1 must not read or write grades."""
    server, sess, root = served
    port = server.server_address[1]
    status, answer = _request(server, "GET", "/api/session", headers={"Host": host.format(port=port)})
    assert status == 403 and "Host" in answer["error"], answer
    row = sess.sample.rows[0]
    status, _ = _request(server, "POST", "/api/grade", json.dumps(
        {"sample_id": sess.sample.sample_id, "annotator": "alice", "query_id": row.query_id, "doc_id": row.doc_id,
         "outcome": "graded", "grade": 3, "note": "n"}).encode(), {"Host": host.format(port=port)})
    assert status == 403 and _gold_lines(root) == 0
    for own in (f"127.0.0.1:{port}", f"localhost:{port}", "localhost", f"[::1]:{port}"):
        assert _request(server, "GET", "/api/session", headers={"Host": own})[0] == 200, own


def test_a_body_over_the_cap_gets_a_413_and_no_traceback(served, capfd):
    """The client stops sending once it has the 413 and resets the connection (a browser aborting an upload):
    the server must not read the rest of the body as a next request, nor log the reset as a traceback."""
    server, _, _ = served
    host, port = server.server_address[:2]
    sock = socket.create_connection((host, port), timeout=30)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close() sends a reset
    sock.sendall(f"POST /api/grade HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
                 f"Content-Length: {3 << 20}\r\n\r\n".encode() + b"x" * 1000)
    reply = sock.recv(65536)
    assert reply.startswith(b"HTTP/1.1 413") and b"Connection: close" in reply, reply[:300]
    sock.close()
    time.sleep(0.3)  # the handler thread sees the reset
    assert _request(server, "GET", "/api/session")[0] == 200  # still serving
    err = capfd.readouterr().err
    assert "Traceback" not in err, err
