"""Systems under test behind one interface: real MCP servers (stdio and streamable HTTP) started by the
tests, a real HTTP system with an auth secret that must never be written anywhere, a Python callable and
a stored run."""

import json
import sys

import pytest
from acceptance_helpers import HERE, McpHttpServer, write_candidate, write_suite
from acceptance_kb import HttpKB, KnowledgeBase

from labeller.acceptance.job import ReportPaths, acceptance_run
from labeller.acceptance.runner import RunOptions
from labeller.cli import main
from labeller.retrieval import Hit
from labeller.systems.callable import CallableSystem
from labeller.systems.registry import CandidateSpec

SECRET = "kb-secret-7f3a9c"
SERVER = str(HERE / "mcp_kb_server.py")


def run(tmp_path, cand, thresholds=None, **kw):
    suite = write_suite(tmp_path, thresholds, **kw)
    [result] = acceptance_run(RunOptions(suite=suite, candidates=[cand]), ReportPaths(json=tmp_path / "r.json"))
    return result


def gate(result, name):
    return next(g for g in result.gates if g.gate == name)


def no_secret_anywhere(root, *texts):
    for text in texts:
        assert SECRET not in text
    for path in root.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


# -- MCP ------------------------------------------------------------------------------------------

def stdio(tmp_path, *faults, name="kb"):
    return write_candidate(tmp_path, name, "mcp", {"command": [sys.executable, SERVER, "stdio", *faults]})


def test_a_clean_mcp_server_over_stdio_passes_and_its_versions_are_recorded(tmp_path):
    result = run(tmp_path, stdio(tmp_path), {"p99_ms": 10_000, "min_latency_samples": 5})
    assert result.passed, [g for g in result.gates if not g.holds]
    system = result.candidate["system"]
    assert system["server"] == "kb-test 0.9.1" and system["client"].startswith("mcp ")
    assert system["protocol"] and system["transport"] == "stdio" and system["tools"] == ["search"]
    assert result.latency.n == 5 and result.latency.p99_ms is not None


@pytest.mark.parametrize("fault, gate_name, words", [
    ("leak", "access", "hr-1"),
    ("no-tool", "integration", "tool 'search' is not listed; the server lists: ping"),
    ("error:toner", "integration", "index shard unavailable"),
])
def test_mcp_faults_fail_by_name(tmp_path, fault, gate_name, words):
    result = run(tmp_path, stdio(tmp_path, fault))
    failed = gate(result, gate_name)
    assert not result.passed and failed.status == "fail"
    assert any(words in (f.reason + (f.doc_id or "")) for f in failed.failures), failed.failures
    if fault == "no-tool":  # discovery failed: every case fails, none is quietly skipped
        assert len(failed.failures) == 4 and result.candidate["system"]["startup_error"]


def test_an_mcp_server_that_cannot_start_is_an_integration_failure(tmp_path):
    cand = write_candidate(tmp_path, "kb", "mcp", {"command": [sys.executable, str(tmp_path / "missing.py")]})
    result = run(tmp_path, cand)
    integration = gate(result, "integration")
    assert integration.status == "fail" and "failed to start" in integration.failures[0].reason


def test_mcp_over_streamable_http_with_auth(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KB_TOKEN", SECRET)
    with McpHttpServer("token", env={"KB_TOKEN": SECRET}) as server:
        cand = write_candidate(tmp_path, "kb", "mcp", {"url": server.url, "auth_env": "KB_TOKEN"})
        result = run(tmp_path, cand)
        assert result.passed, [g for g in result.gates if not g.holds]
        assert result.candidate["system"]["transport"] == "streamable-http"
        # The server rejects a wrong credential: every case fails as an integration failure, secret unseen.
        monkeypatch.setenv("KB_TOKEN", "wrong-token-123")
        rejected = run(tmp_path, cand)
    failure = gate(rejected, "integration").failures[0].reason
    assert not rejected.passed and "401" in failure, failure
    no_secret_anywhere(tmp_path, capsys.readouterr().out, capsys.readouterr().err, failure)


@pytest.mark.parametrize("faults, status", [(("lag:0.3",), "gone"), (("lag:60",), "still_returned")])
def test_revocation_lag_of_an_mcp_system(tmp_path, faults, status):
    revocation = ('\n[[revocations]]\nid = "r1"\ncase = "c1"\ndoc_id = "inv-1"\naction = "revoke"\n'
                  "timeout_s = 1.5\ninterval_s = 0.05\n")
    with McpHttpServer(*faults) as server:
        cand = write_candidate(tmp_path, "kb", "mcp", {"url": server.url},
                               hook={"url": server.url.replace("/mcp", "/change")})
        result = run(tmp_path, cand, {"max_revocation_lag_s": 1.0}, extra=revocation)
    [record] = result.revocations
    assert record["status"] == status and result.passed is (status == "gone")
    if status == "gone":
        # The server's 0.3 s start when it takes the change; labeller's clock starts when the hook's reply is
        # back, a moment later (measured 0.297 s on a loaded machine): a lag, not an instant disappearance.
        assert 0.2 <= record["lag_s"] < 1.5
    else:
        assert gate(result, "revocation").failures[0].reason == "revoke: still returned 1.5 s after the change"


def test_mcp_stdio_server_gets_the_credential_in_its_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("KB_TOKEN", "not-the-right-one")
    cand = write_candidate(tmp_path, "kb", "mcp", {"command": [sys.executable, SERVER, "stdio", "token"],
                                                   "auth_env": "KB_TOKEN"})
    assert "unauthorized" in gate(run(tmp_path, cand), "integration").failures[0].reason
    monkeypatch.setenv("KB_TOKEN", SECRET)
    assert run(tmp_path, cand).passed
    no_secret_anywhere(tmp_path)


# -- HTTP auth ------------------------------------------------------------------------------------

def test_the_http_auth_secret_is_sent_but_never_written(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KB_TOKEN", SECRET)
    suite = write_suite(tmp_path)
    with HttpKB(token=SECRET) as kb:
        cand = write_candidate(tmp_path, "kb", "http", {"url": kb.url + "/search", "auth_env": "KB_TOKEN"})
        with pytest.raises(SystemExit) as done:
            main(["acceptance", "run", "--suite", str(suite), "--candidate", str(cand), "--out",
                  str(tmp_path / "r.json"), "--md", str(tmp_path / "r.md"), "--html", str(tmp_path / "r.html"),
                  "--triage", str(tmp_path / "triage.json")])
        assert done.value.code == 0
        assert kb.seen_headers[0]["Authorization"] == f"Bearer {SECRET}"
        ok = capsys.readouterr()
        monkeypatch.setenv("KB_TOKEN", "wrong-token-456")
        with pytest.raises(SystemExit) as done:
            main(["acceptance", "run", "--suite", str(suite), "--candidate", str(cand), "--out",
                  str(tmp_path / "r2.json"), "--triage", str(tmp_path / "triage.json")])
    bad = capsys.readouterr()
    assert done.value.code == 1 and "HTTP 401" in bad.out
    assert "wrong-token-456" not in bad.out + bad.err
    no_secret_anywhere(tmp_path, ok.out, ok.err, bad.out, bad.err)
    assert "KB_TOKEN" in (tmp_path / "r.json").read_text()  # the variable's name is recorded, never its value


def test_a_call_past_the_timeout_is_an_integration_failure(tmp_path):
    with HttpKB(("slow:toner",)) as kb:
        cand = write_candidate(tmp_path, "kb", "http", {"url": kb.url + "/search", "timeout_s": 0.1})
        result = run(tmp_path, cand)
    [failure] = gate(result, "integration").failures
    assert failure.case_id == "c2" and "Timeout" in failure.reason and not result.passed


def test_a_missing_auth_variable_is_an_input_error_naming_it(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("KB_TOKEN", raising=False)
    suite = write_suite(tmp_path)
    cand = write_candidate(tmp_path, "kb", "http", {"url": "http://127.0.0.1:9/search", "auth_env": "KB_TOKEN"})
    with pytest.raises(SystemExit) as done:
        main(["acceptance", "run", "--suite", str(suite), "--candidate", str(cand), "--out", str(tmp_path / "r.json")])
    assert done.value.code == 2 and "$KB_TOKEN" in capsys.readouterr().err and not (tmp_path / "r.json").exists()


def test_a_bake_off_refuses_a_bad_candidate_before_asking_any(tmp_path, monkeypatch):
    from labeller.errors import BadInputError

    monkeypatch.delenv("KB_TOKEN", raising=False)
    suite = write_suite(tmp_path)
    with HttpKB() as kb:
        good = write_candidate(tmp_path, "good", "http", {"url": kb.url + "/search"})
        bad = write_candidate(tmp_path, "bad", "http", {"url": kb.url + "/search", "auth_env": "KB_TOKEN"})
        with pytest.raises(BadInputError, match="KB_TOKEN"):
            acceptance_run(RunOptions(suite=suite, candidates=[good, bad]), ReportPaths(json=tmp_path / "r.json"))
        assert kb.kb.calls == 0 and not (tmp_path / "r.json").exists()


def test_an_http_mapping_for_another_endpoint_shape(tmp_path):
    """A search endpoint with its own field names, mapped in the candidate file."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    kb = KnowledgeBase()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            found = kb.search(body["q"], body["as"]["who"], body["as"]["teams"], body["size"])
            reply = {"data": {"hits": [{"id": r["doc_id"], "rel": r["score"], "ver": r["revision"]}
                                       for r in found["results"]]}}
            data = json.dumps(reply).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        cand = write_candidate(tmp_path, "kb", "http", {
            "url": f"http://127.0.0.1:{server.server_address[1]}/",
            "request": {"q": "$query", "as": {"who": "$user", "teams": "$groups"}, "size": "$k"},
            "response": {"results": "data.hits", "doc_id": "id", "score": "rel", "revision": "ver",
                         "source_uri": ""}})
        result = run(tmp_path, cand)
    finally:
        server.shutdown()
        server.server_close()
    assert result.passed, [g for g in result.gates if not g.holds]


# -- Python callable and stored run ---------------------------------------------------------------

class AclRetriever:
    """A Python retriever that sees who asks."""

    name = "acl-aware"

    def __init__(self, leak=False):
        self.kb = KnowledgeBase(("leak",) if leak else ())

    def search(self, query, k, identity=None):
        found = self.kb.search(query, identity.user, list(identity.groups), k)["results"]
        return [Hit(doc_id=r["doc_id"], score=r["score"]) for r in found]


@pytest.mark.parametrize("leak", [False, True])
def test_a_python_callable_is_asked_as_the_identity(tmp_path, leak):
    spec = CandidateSpec(name="py", kind="callable", system={"retriever": "x"})
    suite = write_suite(tmp_path)
    [result] = acceptance_run(RunOptions(suite=suite, systems=[(spec, CallableSystem(AclRetriever(leak), "py"))]),
                              ReportPaths())
    assert result.passed is not leak and gate(result, "access").status == ("fail" if leak else "pass")


def test_a_named_retriever_over_a_corpus(tmp_path):
    from acceptance_kb import DOCS

    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps({"doc_id": d, "text": v["text"]}) + "\n"
                                                   for d, v in DOCS.items()))
    cand = write_candidate(tmp_path, "bm25", "callable", {"retriever": "bm25", "corpus": "corpus.jsonl"})
    result = run(tmp_path, cand)
    # bm25 knows no permissions: it hands carol's salary review to bob. The gate says so.
    assert not result.passed and any(f.doc_id == "hr-1" and f.user == "bob" for f in gate(result, "access").failures)


def test_a_stored_run_is_scored_but_cannot_be_timed(tmp_path):
    (tmp_path / "run.trec").write_text("c1 Q0 inv-1 1 2.0 x\nc2 Q0 inv-2 1 2.0 x\nt1 Q0 pub-1 1 1.0 x\n")
    cand = write_candidate(tmp_path, "stored", "runfile", {"run": "run.trec"})
    assert run(tmp_path, cand).passed
    timed = run(tmp_path, cand, {"p95_ms": 100})
    assert not timed.passed and gate(timed, "latency:p95").status == "abstain" and timed.latency is None
