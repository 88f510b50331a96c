"""The retrieval-test API, started as a real uvicorn server on 127.0.0.1 and called over HTTP with httpx."""

import json
import socket
import sys
import textwrap
import threading
import time

import httpx
import pytest
import uvicorn

from labeller.cli import main
from labeller.errors import ConfigError
from labeller.serve import (assign, candidate_matches, create_app_from_file, load_config, similarity, text_match,
                            variant_metrics)
from labeller.serve.textstats import enhance, keywords, token_count

DOCS = {
    "d1": "Kite Couriers same-day courier invoice, consignment X9-KITE-42.",
    "d2": "Paperline Stationers: A4 copier paper 80gsm, 5 ream box.",
    "d3": "Octopus Energy electricity bill for March.",
    "d4": "Thames Water quarterly water rates.",
}

TEAM_MODULE = '''
from labeller.retrieval import Hit


class FixedOrder:
    """Ignores the query: returns the corpus in file order, so expected metrics are easy to check by hand."""

    name = "fixed"

    def __init__(self, docs, stride=1):
        self.docs = docs[::stride]

    def search(self, query, k):
        return [Hit(doc_id=d.doc_id, score=1.0 / (i + 1)) for i, d in enumerate(self.docs[:k])]


def build(corpus_docs, stride=1):
    return FixedOrder(corpus_docs, stride)
'''

RUBRIC = '''+++
name = "tiny"
+++
Grade 5 when the document answers the query, 1 when it is unrelated.
'''


@pytest.fixture
def config(tmp_path):
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps({"doc_id": k, "text": v}) + "\n" for k, v in DOCS.items()))
    (tmp_path / "queries.jsonl").write_text(json.dumps({"query_id": "q1", "text": "Courier invoice"}) + "\n")
    (tmp_path / "run.trec").write_text("q1 Q0 d3 1 2.0 frozen\nq1 Q0 d1 2 1.0 frozen\n")
    (tmp_path / "team_search_h6.py").write_text(TEAM_MODULE)
    (tmp_path / "tiny.md").write_text(RUBRIC)
    path = tmp_path / "retrievers.toml"
    path.write_text(textwrap.dedent("""
        [server]
        judge = "offline:lexical"
        judges = ["openai:gpt-4.1-mini"]
        rubric = "tiny.md"
        cache = "cache"

        [retrievers.fixed]
        callable = "team_search_h6:build"
        corpus = "corpus.jsonl"

        [retrievers.bm25]
        builtin = "bm25"
        corpus = "corpus.jsonl"

        [retrievers.frozen]
        run = "run.trec"
        queries = "queries.jsonl"
        corpus = "corpus.jsonl"
    """))
    yield path
    sys.modules.pop("team_search_h6", None)
    sys.path[:] = [p for p in sys.path if p != str(tmp_path.resolve())]  # the config put its folder there


def _uvicorn(app):
    """A real uvicorn server for `app` on a free loopback port, in a background thread; yields an httpx client."""
    # proto=IPPROTO_TCP so asyncio sets TCP_NODELAY on accepted connections (else ~40 ms per request).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    srv = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not srv.started:
        assert time.monotonic() < deadline, "server did not start"
        time.sleep(0.02)
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:
        yield client
    srv.should_exit = True
    thread.join(timeout=10)
    sock.close()


@pytest.fixture
def server(config):
    yield from _uvicorn(create_app_from_file(config))


GROUND_TRUTH = [
    "Kite Couriers same-day courier invoice, consignment X9-KITE-42.",  # d1 verbatim: exact
    "octopus energy electricity bill for Marhc",  # d3 with a typo: fuzzy only
    "A text no document holds, about parking fines.",  # never matched
]


def test_health_lists_the_configured_retrievers(server):
    reply = server.get("/health")
    assert reply.status_code == 200
    assert reply.json() == {"status": "ok", "retrievers": ["bm25", "fixed", "frozen"], "judge": "offline:lexical",
                            "rubric": "tiny.md"}


def test_metrics_for_a_hand_checked_case(server):
    reply = server.post("/retrieval-test/fixed", json={"query": "courier invoice", "ground_truth_texts": GROUND_TRUTH,
                                                       "top_k": 3, "enable_rerank": False})
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["is_success"] is True and body["agent_id"] == "fixed"
    assert body["token_unit"] == "whitespace-separated words"
    (variant,) = body["result"]
    assert (variant["query"], variant["query_type"]) == ("courier invoice", "original")
    docs = variant["documents"]
    assert [d["doc_id"] for d in docs] == ["d1", "d2", "d3"]
    assert docs[0]["matches"] == [{"ground_truth": 0, "kind": "exact", "similarity": 1.0}]
    assert docs[1]["matches"] == []
    assert docs[2]["matches"][0]["ground_truth"] == 1 and docs[2]["matches"][0]["kind"] == "fuzzy"
    assert docs[0]["chars"] == len(DOCS["d1"]) and docs[0]["tokens"] == 7 and docs[0]["text"] == DOCS["d1"]
    assert docs[0]["keywords"][:3] == ["kite", "couriers", "day"]  # "same" is a stopword
    # 2 of 3 passages match something; 2 of 3 ground truths were found.
    m = variant["metrics"]
    assert (m["k"], m["retrieved"], m["matched_ground_truths"]) == (3, 3, [0, 1])
    assert m["precision"] == pytest.approx(2 / 3) and m["recall"] == pytest.approx(2 / 3)
    assert m["f1_score"] == pytest.approx(2 / 3) and m["hit_rate"] is True
    assert body["analysis_data"] == {"enhanced_queries": [], "score_of_adequate_context": round(2 / 3, 4)}
    strict = server.post("/retrieval-test/fixed", json={"query": "courier invoice", "ground_truth_texts": GROUND_TRUTH,
                                                        "top_k": 3, "score_threshold": 1.0}).json()
    m = strict["result"][0]["metrics"]
    assert m["precision"] == pytest.approx(1 / 3) and m["recall"] == pytest.approx(1 / 3)
    assert m["f1_score"] == pytest.approx(1 / 3)
    miss = server.post("/retrieval-test/fixed", json={"query": "x", "ground_truth_texts": [GROUND_TRUTH[2]],
                                                      "top_k": 2}).json()
    m = miss["result"][0]["metrics"]
    assert (m["precision"], m["recall"], m["f1_score"], m["hit_rate"]) == (0.0, 0.0, 0.0, False)
    assert miss["analysis_data"]["score_of_adequate_context"] == 0.0


def test_enhancement_adds_a_variant_and_rerank_reorders_lexically(server):
    body = server.post("/retrieval-test/fixed", json={
        "query": "Water rates?", "ground_truth_texts": [DOCS["d4"]], "top_k": 1,
        "enable_query_enhancement": True, "enable_rerank": True}).json()
    original, enhanced = body["result"]
    assert (original["query_type"], enhanced["query_type"]) == ("original", "enhanced")
    assert enhanced["query"] == "water waters rates rate"
    assert body["analysis_data"]["enhanced_queries"] == ["water waters rates rate"]
    # Re-ranking picks from a pool of 3 x top_k = 3 candidates (d1-d3): none holds "water" or "rates",
    # so the retriever's order stands and nothing matches. With top_k 2 the pool reaches d4.
    assert original["documents"][0]["rerank_score"] == 0.0 and original["metrics"]["hit_rate"] is False
    # Re-ranking is on by default (the seed's default).
    wider = server.post("/retrieval-test/fixed", json={
        "query": "Water rates?", "ground_truth_texts": [DOCS["d4"]], "top_k": 2}).json()
    top = wider["result"][0]["documents"]
    assert [d["doc_id"] for d in top] == ["d4", "d1"] and top[0]["rerank_score"] == 1.0
    assert wider["result"][0]["metrics"]["hit_rate"] is True
    plain = server.post("/retrieval-test/fixed", json={
        "query": "Water rates?", "ground_truth_texts": [DOCS["d4"]], "top_k": 2, "enable_rerank": False}).json()
    assert [d["doc_id"] for d in plain["result"][0]["documents"]] == ["d1", "d2"]
    assert plain["result"][0]["documents"][0]["rerank_score"] is None


def test_builtin_bm25_and_a_stored_run(server):
    body = server.post("/retrieval-test/bm25", json={"query": "electricity bill", "ground_truth_texts": [DOCS["d3"]],
                                                     "top_k": 5}).json()
    variant = body["result"][0]
    assert variant["documents"][0]["doc_id"] == "d3" and variant["metrics"]["recall"] == 1.0
    assert variant["metrics"]["retrieved"] == 1 and variant["metrics"]["precision"] == 1.0  # bm25 drops zero scores
    frozen = server.post("/retrieval-test/frozen", json={"query": "courier  INVOICE", "ground_truth_texts": [DOCS["d1"]],
                                                         "top_k": 1, "enable_rerank": False}).json()
    assert [d["doc_id"] for d in frozen["result"][0]["documents"]] == ["d3"]
    assert frozen["result"][0]["metrics"]["hit_rate"] is False
    unknown = server.post("/retrieval-test/frozen", json={"query": "not in the run", "ground_truth_texts": ["x"]})
    assert unknown.status_code == 422
    assert unknown.json()["detail"][0]["loc"] == ["body", "query"]


def test_missing_ground_truth_texts_is_a_422_naming_the_field(server):
    reply = server.post("/retrieval-test/fixed", json={"query": "courier"})
    assert reply.status_code == 422
    (error,) = reply.json()["detail"]
    assert error["loc"] == ["body", "ground_truth_texts"] and error["type"] == "missing" and error["msg"]


@pytest.mark.parametrize("body, loc, kind", [
    ({"query": "q", "ground_truth_texts": ["t"], "score_threshold": 1.5}, ["body", "score_threshold"], "less_than_equal"),
    ({"query": "q", "ground_truth_texts": ["t"], "score_threshold": -0.1}, ["body", "score_threshold"], "greater_than_equal"),
    ({"query": "q", "ground_truth_texts": []}, ["body", "ground_truth_texts"], "too_short"),
    ({"query": "q", "ground_truth_texts": ["t"], "top_k": 0}, ["body", "top_k"], "greater_than_equal"),
    ({"query": "q", "ground_truth_texts": ["t"], "enable_rerank": "perhaps"}, ["body", "enable_rerank"], "bool_parsing"),
    ({"query": "", "ground_truth_texts": ["t"]}, ["body", "query"], "string_too_short"),
    ({"query": "q", "ground_truth_texts": ["t"], "project_key": 7}, ["body", "project_key"], "string_type"),
    ({"query": "q", "ground_truth_texts": ["t"], "ground_truth_doc_ids": "d1"}, ["body", "ground_truth_doc_ids"],
     "list_type"),
])
def test_invalid_bodies_get_field_level_422s(server, body, loc, kind):
    reply = server.post("/retrieval-test/fixed", json=body)
    assert reply.status_code == 422
    errors = reply.json()["detail"]
    assert any(e["loc"] == loc and e["type"] == kind and e["msg"] for e in errors), errors


def test_unknown_fields_are_accepted_and_named_back(server):
    """Clients of the seed API may send keys this server does not know: served, and listed, not a 422."""
    reply = server.post("/retrieval-test/fixed", json={"query": "q", "ground_truth_texts": ["t"], "rerank": True,
                                                       "session_id": "abc"})
    assert reply.status_code == 200, reply.text
    assert reply.json()["ignored_fields"] == ["rerank", "session_id"]
    known = server.post("/retrieval-test/fixed", json={"query": "q", "ground_truth_texts": ["t"]}).json()
    assert known["ignored_fields"] == []


def test_unknown_retriever_is_a_404(server):
    reply = server.post("/retrieval-test/nope", json={"query": "q", "ground_truth_texts": ["t"]})
    assert reply.status_code == 404
    assert "unknown agent 'nope'" in reply.json()["detail"] and "bm25" in reply.json()["detail"]


def test_judge_grades_through_the_cache(server, config):
    body = {"query": {"query_id": "q1", "text": "Kite Couriers courier invoice consignment"},
            "documents": [{"doc_id": "d1", "text": DOCS["d1"]}, {"doc_id": "d4", "text": DOCS["d4"]}]}
    first = server.post("/judge", json=body)
    assert first.status_code == 200, first.text
    first = first.json()
    assert first["judge"] == "offline:lexical" and first["rubric"] == "tiny"
    assert (first["new"], first["cached"]) == (2, 0)
    grades = {label["doc_id"]: label["grade"] for label in first["labels"]}
    assert grades["d1"] > grades["d4"] and grades["d4"] == 1
    second = server.post("/judge", json=body).json()
    assert (second["new"], second["cached"]) == (0, 2)
    assert [(lbl["doc_id"], lbl["grade"], lbl["from_cache"]) for lbl in second["labels"]] == [
        ("d1", grades["d1"], True), ("d4", grades["d4"], True)]
    assert (config.parent / "cache" / "cache.db").is_file()


def test_judge_rejects_bad_requests(server):
    doc = [{"doc_id": "d1", "text": "t"}]
    missing = server.post("/judge", json={"query": {"text": "q"}})
    assert missing.status_code == 422 and missing.json()["detail"][0]["loc"] == ["body", "documents"]
    bad_judge = server.post("/judge", json={"query": {"text": "q"}, "documents": doc, "judge": "nobody:x"})
    assert bad_judge.status_code == 422 and bad_judge.json()["detail"][0]["loc"] == ["body", "judge"]
    no_key = server.post("/judge", json={"query": {"text": "q"}, "documents": doc, "judge": "openai:gpt-4.1-mini"})
    assert no_key.status_code == 422 and "OPENAI_API_KEY" in no_key.json()["detail"][0]["msg"]
    # A request may name shipped rubrics only: it must not make the server read an arbitrary file.
    path = server.post("/judge", json={"query": {"text": "q"}, "documents": doc, "rubric": "/etc/passwd"})
    assert path.status_code == 422 and path.json()["detail"][0]["loc"] == ["body", "rubric"]


# -- pieces, without a server ------------------------------------------------------------------

def test_matching_rules():
    assert text_match("Intro. " + DOCS["d1"] + " More.", DOCS["d1"], 0.99).kind == "exact"
    # Containment is by whole tokens: "paid 12" is not inside "paid 120".
    assert text_match("Invoice paid 120 today", "invoice paid 12", 0.7) is None
    # A short fragment of a long ground truth must resemble the whole of it, not just appear in it.
    assert similarity("kite couriers", DOCS["d1"].lower()) < 0.5
    assert text_match("kite couriers", DOCS["d1"], 0.7) is None
    # Punctuation, case and spacing do not count; neither do thousands separators.
    assert text_match("PAID  £1,250.00 to kite-couriers", "paid 1250.00 to kite couriers", 0.9).kind == "fuzzy"
    metrics = variant_metrics([None, None], n_truths=2, k=5)
    assert (metrics.precision, metrics.recall, metrics.f1_score, metrics.retrieved, metrics.k) == (0.0, 0.0, 0.0, 2, 5)
    assert metrics.hit_rate is False


def test_each_ground_truth_is_credited_once_and_the_largest_assignment_wins():
    # Passage 0 could be either ground truth, passage 1 only ground truth 0: crediting passage 0 with
    # ground truth 0 (first come) would leave passage 1 unmatched; the assignment matches both.
    truths = ["water bill", "water bill march"]
    candidates = [candidate_matches("water bill march", "a", truths, [], 0.9),
                  candidate_matches("water bill", "b", truths, [], 0.9)]
    assert sorted(m.ground_truth for m in candidates[0]) == [0, 1] and [m.ground_truth for m in candidates[1]] == [0]
    assert [m.ground_truth for m in assign(candidates, 2)] == [1, 0]
    # One passage, two identical ground truths: one is found, not both.
    twice = candidate_matches("water bill", "a", ["Water bill.", "water  BILL"], [], 0.7)
    assert len(twice) == 2
    metrics = variant_metrics(assign([twice], 2), n_truths=2, k=1)
    assert (metrics.precision, metrics.recall) == (1.0, 0.5) and metrics.f1_score == pytest.approx(2 / 3)
    # Ground truth by document id: the id, exactly, numbered after the texts.
    by_id = candidate_matches("anything", "D7", ["other text"], ["d7", "D7"], 0.7)
    assert [(m.ground_truth, m.kind) for m in by_id] == [(2, "doc_id")]


def test_text_statistics():
    assert token_count("a  b\tc\n") == 3
    assert keywords("The invoice, the INVOICE and a receipt for the invoice", 2) == ["invoice", "receipt"]
    assert enhance("The invoices for batteries") == "invoices invoice batteries battery"


def test_config_errors_name_the_field(tmp_path):
    path = tmp_path / "r.toml"
    path.write_text('[retrievers.a]\nbuiltin = "bm25"\n')
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert "needs a corpus" in str(err.value) and err.value.field == "retrievers.a"
    path.write_text('[retrievers.a]\ncallable = "no_such_module_h6:build"\n')
    with pytest.raises(ConfigError, match="cannot load 'no_such_module_h6:build'"):
        create_app_from_file(path)
    path.write_text('[retrievers.a]\ncallable = "json:dumps"\nargs = { obj = 1 }\n')
    with pytest.raises(ConfigError, match="returned str; expected a Retriever"):
        create_app_from_file(path)


def test_serve_without_the_extra_says_how_to_install_it(config, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "uvicorn", None)  # what `import uvicorn` meets when it is not installed
    with pytest.raises(SystemExit) as exit_:
        main(["serve", "--config", str(config)])
    assert exit_.value.code == 1
    assert 'pip install ".[serve]" in a labeller checkout' in capsys.readouterr().err


def test_labeller_serve_command_runs_the_api(config, tmp_path):
    """`labeller serve` itself, as a subprocess, answering over HTTP."""
    import subprocess

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "labeller", "serve", "--config", str(config), "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, proc.stderr.read().decode()
            try:
                reply = httpx.get(f"http://127.0.0.1:{port}/health", timeout=1)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "labeller serve did not answer"
                time.sleep(0.1)
        assert reply.json()["retrievers"] == ["bm25", "fixed", "frozen"]
        hit = httpx.post(f"http://127.0.0.1:{port}/retrieval-test/bm25",
                         json={"query": "water rates", "ground_truth_texts": [DOCS["d4"]], "top_k": 1}, timeout=10)
        assert hit.json()["result"][0]["metrics"]["recall"] == 1.0
    finally:
        proc.terminate()
        proc.wait(timeout=10)


# -- what stands between the network and the API -----------------------------------------------

def _config_with(config, extra: str):
    """The fixture's config with lines added to its [server] table (and the default judges only)."""
    text = config.read_text().replace('judges = ["openai:gpt-4.1-mini"]\n', "")
    config.write_text(text.replace("[server]\n", "[server]\n" + textwrap.dedent(extra)))
    return config


JUDGE_BODY = {"query": {"query_id": "q1", "text": "courier invoice"},
              "documents": [{"doc_id": "d1", "text": DOCS["d1"]}]}
SMALL_TEST = {"query": "water", "ground_truth_texts": ["t"]}


def test_judge_serves_only_the_judges_its_config_allows(config, monkeypatch):
    """A request naming a model the operator did not configure must not spend the operator's key on it."""
    from fakeapi import FakeAPI

    with FakeAPI(latency=0.0) as api:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-operator-key-0123456789")
        monkeypatch.setenv("OPENAI_BASE_URL", api.openai_url)
        for client in _uvicorn(create_app_from_file(_config_with(config, ""))):
            refused = client.post("/judge", json={**JUDGE_BODY, "judge": "openai:gpt-4.1-mini"})
            assert refused.status_code == 422, refused.text
            detail = refused.json()["detail"][0]
            assert detail["loc"] == ["body", "judge"] and detail["type"] == "judge_not_allowed"
            assert "offline:lexical" in detail["msg"]
            assert api.total == 0
            assert client.post("/judge", json=JUDGE_BODY).status_code == 200  # the configured judge still works
        # The same request against a config that allows the model is served, and paid: the refusal above
        # was the allow-list, not a broken judge.
        api.reset()
        allowed = _config_with(config, 'judges = ["openai:gpt-4.1-mini"]\n')
        for client in _uvicorn(create_app_from_file(allowed)):
            served = client.post("/judge", json={**JUDGE_BODY, "judge": "openai:gpt-4.1-mini"})
            assert served.status_code == 200, served.text
            assert served.json()["judge"] == "openai:gpt-4.1-mini" and api.total == 1


def test_request_bodies_are_capped(config):
    for client in _uvicorn(create_app_from_file(_config_with(config, "max_body_bytes = 2000\n"))):
        small = client.post("/retrieval-test/bm25", json={"query": "water rates", "ground_truth_texts": [DOCS["d4"]]})
        assert small.status_code == 200, small.text
        big = {"query": "water rates", "ground_truth_texts": ["x" * 3000]}
        declared = client.post("/retrieval-test/bm25", json=big)
        assert declared.status_code == 413 and "2,000 bytes" in declared.json()["detail"]
        # A chunked body declares no length: it is counted as it arrives.
        payload = json.dumps(big).encode()
        chunked = client.post("/retrieval-test/bm25", content=iter([payload[:1000], payload[1000:]]),
                              headers={"content-type": "application/json"})
        assert "content-length" not in chunked.request.headers
        assert chunked.status_code == 413


def test_the_default_body_cap_is_one_megabyte(config):
    for client in _uvicorn(create_app_from_file(config)):
        body = {"query": "water rates", "ground_truth_texts": ["x" * 1_100_000]}
        assert client.post("/retrieval-test/bm25", json=body).status_code == 413
        body = {"query": "water rates", "ground_truth_texts": ["x" * 900_000]}
        assert client.post("/retrieval-test/bm25", json=body).status_code == 200


@pytest.mark.parametrize("source", ["env", "config"])
def test_a_bearer_token_is_required_when_set(config, monkeypatch, source):
    token = "s3cret-token-for-serve"
    if source == "env":
        monkeypatch.setenv("LABELLER_SERVE_TOKEN", token)
        path = config
    else:
        monkeypatch.delenv("LABELLER_SERVE_TOKEN", raising=False)
        path = _config_with(config, f'token = "{token}"\n')
    for client in _uvicorn(create_app_from_file(path)):
        body = {"query": "water rates", "ground_truth_texts": [DOCS["d4"]]}
        missing = client.post("/retrieval-test/bm25", json=body)
        assert missing.status_code == 401 and missing.headers["www-authenticate"] == "Bearer"
        wrong = client.post("/retrieval-test/bm25", json=body, headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401
        assert client.post("/judge", json=JUDGE_BODY).status_code == 401
        good = client.post("/retrieval-test/bm25", json=body, headers={"Authorization": f"Bearer {token}"})
        assert good.status_code == 200, good.text
        assert client.get("/health").status_code == 200  # liveness probes carry no token


def test_no_token_means_open_on_loopback(config, monkeypatch):
    monkeypatch.delenv("LABELLER_SERVE_TOKEN", raising=False)
    for client in _uvicorn(create_app_from_file(config)):
        assert client.post("/retrieval-test/bm25", json=SMALL_TEST).status_code == 200


def test_serve_warns_when_binding_beyond_loopback(config, tmp_path):
    import subprocess

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {k: v for k, v in __import__("os").environ.items() if k != "LABELLER_SERVE_TOKEN"}
    for host, warned in (("0.0.0.0", True), ("127.0.0.1", False)):
        proc = subprocess.Popen([sys.executable, "-m", "labeller", "serve", "--config", str(config), "--host", host,
                                 "--port", str(port)], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, cwd=tmp_path,
                                env=env, text=True)
        try:
            lines = []
            for line in proc.stderr:
                lines.append(line)
                if line.startswith("labeller serve:"):
                    break
        finally:
            proc.terminate()
            proc.wait(timeout=10)
        warning = [line for line in lines if line.startswith("labeller: warning:")]
        assert bool(warning) == warned, lines
        if warned:
            assert "0.0.0.0" in warning[0] and "LABELLER_SERVE_TOKEN" in warning[0]
            assert "openai:gpt-4.1-mini" in warning[0]


def test_loopback_addresses():
    from labeller.serve.guard import is_loopback

    assert all(is_loopback(h) for h in ("127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "192.168.1.5", "example.com"))


def test_a_short_token_in_the_config_is_refused(config):
    with pytest.raises(ConfigError, match="token"):
        load_config(_config_with(config, 'token = "abc"\n'))


def test_a_cache_the_server_cannot_write_is_a_503_and_retrieval_still_works(config):
    (config.parent / "blocker").write_text("a file where the cache directory should go")
    path = _config_with(config, "")
    path.write_text(path.read_text().replace('cache = "cache"', 'cache = "blocker/cache"'))
    for client in _uvicorn(create_app_from_file(path)):
        judged = client.post("/judge", json=JUDGE_BODY)
        assert judged.status_code == 503 and "verdict cache" in judged.json()["detail"], judged.text
        assert client.post("/retrieval-test/bm25", json=SMALL_TEST).status_code == 200


# -- the seed's retrieval-test contract ----------------------------------------------------------

# Every field of the seed's request, as its clients send it.
SEED_EXAMPLE = {"query": "courier invoice", "ground_truth_texts": [DOCS["d1"]], "project_key": "proj-acme-001",
                "enable_query_enhancement": True, "enable_rerank": True, "score_threshold": 0.7, "top_k": 5}


def test_the_seed_example_gets_the_seed_response_shape(server):
    reply = server.post("/retrieval-test/fixed", json=SEED_EXAMPLE)
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert {"is_success", "result", "analysis_data"} <= set(body) and body["is_success"] is True
    assert body["ignored_fields"] == []  # project_key is a known field
    original, enhanced = body["result"]
    assert (original["query"], original["query_type"]) == ("courier invoice", "original")
    assert (enhanced["query"], enhanced["query_type"]) == ("courier couriers invoice invoices", "enhanced")
    for variant in body["result"]:
        assert {"query", "query_type", "documents", "metrics"} <= set(variant)
        for doc in variant["documents"]:
            assert {"keywords", "chars", "score", "tokens", "text"} <= set(doc)
            assert isinstance(doc["keywords"], list) and all(isinstance(w, str) for w in doc["keywords"])
            assert type(doc["chars"]) is int and type(doc["tokens"]) is int and isinstance(doc["score"], float)
            assert doc["chars"] == len(doc["text"]) and doc["text"] == DOCS[doc["doc_id"]]
        metrics = variant["metrics"]
        assert {"f1_score", "hit_rate", "k", "precision", "recall"} <= set(metrics)
        assert metrics["hit_rate"] is True and metrics["k"] == 5
    # Re-ranked from a pool of 15: the corpus' 4 documents, d1 (holding both query words) first. d1 is
    # the one ground truth: precision 1/4, recall 1, F1 = 2 * 0.25 * 1 / 1.25 = 0.4.
    assert [d["doc_id"] for d in original["documents"]] == ["d1", "d2", "d3", "d4"]
    metrics = original["metrics"]
    assert (metrics["precision"], metrics["recall"], metrics["f1_score"]) == (0.25, 1.0, pytest.approx(0.4))
    assert body["analysis_data"] == {"enhanced_queries": ["courier couriers invoice invoices"],
                                     "score_of_adequate_context": 1.0}


def test_the_seed_example_to_an_unknown_agent_is_a_404(server):
    reply = server.post("/retrieval-test/nope", json=SEED_EXAMPLE)
    assert reply.status_code == 404 and "unknown agent 'nope'" in reply.json()["detail"]
    # The path is checked before the body: an unknown agent is a 404 whatever was posted.
    assert server.post("/retrieval-test/nope", json={"query": 5}).status_code == 404


def test_the_seed_example_without_ground_truth_is_one_422(server):
    body = {k: v for k, v in SEED_EXAMPLE.items() if k != "ground_truth_texts"}
    reply = server.post("/retrieval-test/fixed", json=body)
    assert reply.status_code == 422
    (error,) = reply.json()["detail"]
    assert error["loc"] == ["body", "ground_truth_texts"] and error["type"] == "missing"
    assert error["msg"] == "Field required"
    assert set(error) == {"loc", "msg", "type"}  # no `input` echo: it would send the project_key back
    assert "proj-acme-001" not in reply.text


@pytest.fixture
def keyed(config):
    text = config.read_text().replace('callable = "team_search_h6:build"\n',
                                      'callable = "team_search_h6:build"\nproject_keys = ["proj-fixed-only"]\n')
    config.write_text(text)
    yield from _uvicorn(create_app_from_file(_config_with(config, 'project_keys = ["proj-acme-001"]\n')))


def test_project_keys_are_checked_when_the_config_sets_them(keyed):
    assert keyed.post("/retrieval-test/fixed", json=SEED_EXAMPLE).status_code == 200
    missing = keyed.post("/retrieval-test/fixed", json={k: v for k, v in SEED_EXAMPLE.items() if k != "project_key"})
    assert missing.status_code == 401 and "needs a project_key" in missing.json()["detail"]
    wrong = keyed.post("/retrieval-test/fixed", json={**SEED_EXAMPLE, "project_key": "proj-guess-999"})
    assert wrong.status_code == 403 and "not accepted for agent 'fixed'" in wrong.json()["detail"]
    assert "proj-guess-999" not in wrong.text and "proj-acme-001" not in wrong.text
    # A key of one agent opens that agent only; the [server] keys open every agent.
    own = {**SEED_EXAMPLE, "project_key": "proj-fixed-only"}
    assert keyed.post("/retrieval-test/fixed", json=own).status_code == 200
    assert keyed.post("/retrieval-test/bm25", json=own).status_code == 403
    assert keyed.post("/retrieval-test/bm25", json=SEED_EXAMPLE).status_code == 200
    assert keyed.post("/retrieval-test/nope", json=SEED_EXAMPLE).status_code == 404


def test_a_bad_project_keys_type_is_a_config_error_that_does_not_quote_it(config):
    with pytest.raises(ConfigError) as err:
        load_config(_config_with(config, 'project_keys = "proj-acme-001"\n'))
    assert err.value.field == "server.project_keys" and "proj-acme-001" not in str(err.value)


# -- honest matching: the two cases, over HTTP --------------------------------------------

LEDGER = {
    "t1": "2024-03-04 Kite Couriers same-day courier invoice INV-0042, amount GBP 120.00, paid by card.",
    "t2": "2024-03-04 Kite Couriers same-day courier invoice INV-0042, amount GBP 210.00, paid by card.",
    "t3": "2024-03-11 Kite Couriers same-day courier invoice INV-0043, amount GBP 120.00, paid by card.",
}


@pytest.fixture
def ledger(config):
    (config.parent / "ledger.jsonl").write_text("".join(json.dumps({"doc_id": k, "text": v}) + "\n"
                                                        for k, v in LEDGER.items()))
    config.write_text(config.read_text() + '\n[retrievers.ledger]\ncallable = "team_search_h6:build"\n'
                                           'corpus = "ledger.jsonl"\n')
    yield from _uvicorn(create_app_from_file(config))


def _ledger_test(client, truths, top_k, **extra):
    body = {"query": "kite couriers invoice", "ground_truth_texts": truths, "top_k": top_k, "enable_rerank": False,
            "score_threshold": 0.7, **extra}
    reply = client.post("/retrieval-test/ledger", json=body)
    assert reply.status_code == 200, reply.text
    return reply.json()["result"][0]


def test_near_duplicate_transactions_that_differ_only_in_amount_do_not_match(ledger):
    # The old fuzzy rule's similarity of the two: 0.97 and more, far above the 0.7 threshold.
    assert similarity(LEDGER["t1"].lower(), LEDGER["t2"].lower()) >= 0.97
    variant = _ledger_test(ledger, [LEDGER["t2"]], top_k=1)  # the retriever returns t1 only
    assert [d["doc_id"] for d in variant["documents"]] == ["t1"] and variant["documents"][0]["matches"] == []
    m = variant["metrics"]
    assert (m["precision"], m["recall"], m["f1_score"], m["hit_rate"]) == (0.0, 0.0, 0.0, False)
    # The same texts with the right amount do match, so the refusal above is the amount.
    assert _ledger_test(ledger, [LEDGER["t1"]], top_k=1)["metrics"]["recall"] == 1.0


def test_two_unretrieved_ground_truths_leave_recall_below_one(ledger):
    # Three ground truths, one retrieved (t1): precision 1/1, recall 1/3, F1 = 2 * 1 * (1/3) / (4/3) = 0.5.
    variant = _ledger_test(ledger, list(LEDGER.values()), top_k=1)
    m = variant["metrics"]
    assert (m["precision"], m["recall"], m["f1_score"], m["hit_rate"]) == (1.0, pytest.approx(1 / 3), 0.5, True)
    assert m["matched_ground_truths"] == [0]
    # Two retrieved: recall 2/3, F1 = 2 * 1 * (2/3) / (5/3) = 0.8; all three: 1.0 each.
    m = _ledger_test(ledger, list(LEDGER.values()), top_k=2)["metrics"]
    assert (m["precision"], m["recall"], m["f1_score"]) == (1.0, pytest.approx(2 / 3), pytest.approx(0.8))
    m = _ledger_test(ledger, list(LEDGER.values()), top_k=3)["metrics"]
    assert (m["precision"], m["recall"], m["f1_score"], m["matched_ground_truths"]) == (1.0, 1.0, 1.0, [0, 1, 2])


def test_ground_truth_by_document_id(ledger):
    variant = _ledger_test(ledger, [], top_k=2, ground_truth_doc_ids=["t2", "t9"])
    assert [d["matches"] for d in variant["documents"]] == [[], [{"ground_truth": 0, "kind": "doc_id",
                                                                  "similarity": 1.0}]]
    m = variant["metrics"]
    assert (m["precision"], m["recall"], m["f1_score"]) == (0.5, 0.5, 0.5)
    # Texts and ids together: the ids are numbered after the texts.
    both = _ledger_test(ledger, [LEDGER["t1"]], top_k=2, ground_truth_doc_ids=["t2"])
    assert both["metrics"]["matched_ground_truths"] == [0, 1] and both["metrics"]["recall"] == 1.0
    none = ledger.post("/retrieval-test/ledger", json={"query": "q", "ground_truth_texts": [], "ground_truth_doc_ids": []})
    assert none.status_code == 422 and none.json()["detail"][0]["loc"] == ["body", "ground_truth_texts"]
