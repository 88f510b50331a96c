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


class NotANumber(FixedOrder):
    name = "nan"

    def search(self, query, k):
        return [Hit(doc_id=h.doc_id, score=float("nan")) for h in super().search(query, k)]


def build_nan(corpus_docs):
    return NotANumber(corpus_docs)
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
        require_project_key = false  # the contract's tests below require it

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
    # score_threshold 0: every document comes back (the fixed retriever's scores are 1, 1/2, 1/3).
    reply = server.post("/retrieval-test/fixed", json={"query": "courier invoice", "ground_truth_texts": GROUND_TRUTH,
                                                       "top_k": 3, "enable_rerank": False, "score_threshold": 0})
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
    assert body["analysis_data"] == {"enhanced_queries": ["courier invoice"], "score_of_adequate_context": round(2 / 3, 4)}
    # The fuzzy match needs match_threshold: at 1.0 only the exact one counts.
    strict = server.post("/retrieval-test/fixed", json={"query": "courier invoice", "ground_truth_texts": GROUND_TRUTH,
                                                        "top_k": 3, "match_threshold": 1.0, "score_threshold": 0}).json()
    m = strict["result"][0]["metrics"]
    assert m["precision"] == pytest.approx(1 / 3) and m["recall"] == pytest.approx(1 / 3)
    assert m["f1_score"] == pytest.approx(1 / 3)
    miss = server.post("/retrieval-test/fixed", json={"query": "x", "ground_truth_texts": [GROUND_TRUTH[2]],
                                                      "top_k": 2, "score_threshold": 0}).json()
    m = miss["result"][0]["metrics"]
    assert (m["precision"], m["recall"], m["f1_score"], m["hit_rate"]) == (0.0, 0.0, 0.0, False)
    assert miss["analysis_data"]["score_of_adequate_context"] == 0.0


def test_enhancement_adds_a_variant_and_rerank_reorders_lexically(server):
    body = server.post("/retrieval-test/fixed", json={
        "query": "Water rates?", "ground_truth_texts": [DOCS["d4"]], "top_k": 1, "score_threshold": 0,
        "enable_query_enhancement": True, "enable_rerank": True}).json()
    original, enhanced = body["result"]
    assert (original["query_type"], enhanced["query_type"]) == ("original", "enhanced")
    assert enhanced["query"] == "water waters rates rate"
    assert body["analysis_data"]["enhanced_queries"] == ["Water rates?", "water waters rates rate"]
    # Re-ranking picks from a pool of 3 x top_k = 3 candidates (d1-d3): none holds "water" or "rates",
    # so the retriever's order stands and nothing matches. With top_k 2 the pool reaches d4.
    assert original["documents"][0]["rerank_score"] == 0.0 and original["metrics"]["hit_rate"] is False
    # Re-ranking is on by default (the seed's default).
    wider = server.post("/retrieval-test/fixed", json={
        "query": "Water rates?", "ground_truth_texts": [DOCS["d4"]], "top_k": 2, "score_threshold": 0}).json()
    top = wider["result"][0]["documents"]
    assert [d["doc_id"] for d in top] == ["d4", "d1"] and top[0]["rerank_score"] == 1.0
    assert wider["result"][0]["metrics"]["hit_rate"] is True
    plain = server.post("/retrieval-test/fixed", json={
        "query": "Water rates?", "ground_truth_texts": [DOCS["d4"]], "top_k": 2, "enable_rerank": False,
        "score_threshold": 0}).json()
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
    assert error == {"loc": ["body", "ground_truth_texts"], "msg": "field required", "type": "value_error.missing"}


@pytest.mark.parametrize("body, loc, kind", [
    ({"query": "q", "ground_truth_texts": ["t"], "score_threshold": 1.5}, ["body", "score_threshold"], "less_than_equal"),
    ({"query": "q", "ground_truth_texts": ["t"], "score_threshold": -0.1}, ["body", "score_threshold"], "greater_than_equal"),
    ({"query": "q", "ground_truth_texts": ["t"], "match_threshold": 1.5}, ["body", "match_threshold"], "less_than_equal"),
    ({"query": "q", "ground_truth_texts": ["t"], "project_key": ""}, ["body", "project_key"], "string_too_short"),
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
        # Nor does a browser opening the docs: the page, its assets and the schema hold no data.
        assert client.get("/docs").status_code == 200 and client.get("/openapi.json").status_code == 200
        assert client.get("/static-offline-docs/swagger-ui-bundle.js").status_code == 200
        assert client.post("/kb/retrieval-test/bm25", json=body).status_code == 401
        # The open prefix leads to the static files only: a dot segment does not reach /judge past the token.
        host, port = client.base_url.host, client.base_url.port
        with socket.create_connection((host, port)) as raw:
            payload = json.dumps(JUDGE_BODY).encode()
            raw.sendall(b"POST /static-offline-docs/../judge HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                        b"application/json\r\nContent-Length: " + str(len(payload)).encode() + b"\r\n"
                        b"Connection: close\r\n\r\n" + payload)
            status = raw.makefile("rb").readline()
        assert b" 200 " not in status and b'"labels"' not in status, status


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

# The contract's example requests, byte for byte as docs/serve.md prints them (a test below checks
# the page still holds them), replayed over HTTP exactly as written: not re-serialised by httpx.
CONTRACT_REQUEST = b'''{"query": "courier invoice",
 "ground_truth_texts": ["Kite Couriers same-day courier invoice, consignment X9-KITE-42."],
 "project_key": "proj-acme-001", "enable_query_enhancement": true, "enable_rerank": true,
 "score_threshold": 0.7, "top_k": 2}'''
CONTRACT_REQUEST_WITHOUT_KEY = b'''{"query": "courier invoice",
 "ground_truth_texts": ["Kite Couriers same-day courier invoice, consignment X9-KITE-42."],
 "enable_query_enhancement": true, "enable_rerank": true, "score_threshold": 0.7, "top_k": 2}'''
CONTRACT_MISSING_KEY_REPLY = b'{"detail":[{"loc":["body","project_key"],"msg":"field required","type":"value_error.missing"}]}'
CONTRACT_PATHS = ("/kb/retrieval-test/support-bot", "/retrieval-test/support-bot")
JSON = {"content-type": "application/json"}
# Every field of the seed's request, as its clients send it (a dict, for the tests that vary it).
SEED_EXAMPLE = json.loads(CONTRACT_REQUEST)


@pytest.fixture
def contract(config):
    """The fixture's config as an operator following the contract writes it: project_key required (the
    default), and an agent named as in the contract's example."""
    text = config.read_text().replace("require_project_key = false  # the contract's tests below require it\n", "")
    config.write_text(text + '\n[retrievers.support-bot]\nbuiltin = "bm25"\ncorpus = "corpus.jsonl"\n')
    yield from _uvicorn(create_app_from_file(config))


def test_the_docs_print_the_contract_requests_the_tests_replay():
    from pathlib import Path

    page = (Path(__file__).parents[1] / "docs" / "serve.md").read_bytes()
    for example in (CONTRACT_REQUEST, CONTRACT_REQUEST_WITHOUT_KEY, CONTRACT_MISSING_KEY_REPLY):
        assert example in page


@pytest.mark.parametrize("path", CONTRACT_PATHS)
def test_the_contract_example_replayed_byte_for_byte(contract, path):
    reply = contract.post(path, content=CONTRACT_REQUEST, headers=JSON)
    assert reply.request.content == CONTRACT_REQUEST
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert {"is_success", "result", "analysis_data"} <= set(body) and body["is_success"] is True
    assert body["ignored_fields"] == [] and body["agent_id"] == "support-bot"
    original, enhanced = body["result"]
    assert (original["query"], original["query_type"]) == ("courier invoice", "original")
    assert (enhanced["query"], enhanced["query_type"]) == ("courier couriers invoice invoices", "enhanced")
    # The contract's example lists the original query among enhanced_queries, first.
    assert body["analysis_data"] == {"enhanced_queries": ["courier invoice", "courier couriers invoice invoices"],
                                     "score_of_adequate_context": 1.0}
    for variant in body["result"]:
        assert {"query", "query_type", "documents", "metrics"} <= set(variant)
        (doc,) = variant["documents"]  # bm25: only d1 holds a query word
        assert {"keywords", "chars", "score", "tokens", "text"} <= set(doc)
        assert doc["doc_id"] == "d1" and doc["text"] == DOCS["d1"] and doc["chars"] == len(DOCS["d1"])
        assert type(doc["chars"]) is int and type(doc["tokens"]) is int and doc["tokens"] == 7
        assert doc["score"] == 1.0 and doc["raw_score"] > 0  # the best of its pool; the raw BM25 score beside it
        assert doc["keywords"] == ["kite", "couriers", "day", "courier", "invoice"]
        assert doc["matches"] == [{"ground_truth": 0, "kind": "exact", "similarity": 1.0}]
        assert variant["metrics"] == {"f1_score": 1.0, "hit_rate": True, "k": 2, "precision": 1.0, "recall": 1.0,
                                      "retrieved": 1, "matched_ground_truths": [0]}


def test_both_paths_give_the_same_reply(contract):
    kb, plain = (contract.post(p, content=CONTRACT_REQUEST, headers=JSON).json() for p in CONTRACT_PATHS)
    for body in (kb, plain):
        for variant in body["result"]:
            variant.pop("latency_ms")
    assert kb == plain


@pytest.mark.parametrize("path", CONTRACT_PATHS)
def test_the_contract_example_without_project_key_is_the_contracts_422(contract, path):
    reply = contract.post(path, content=CONTRACT_REQUEST_WITHOUT_KEY, headers=JSON)
    assert reply.status_code == 422
    assert reply.content == CONTRACT_MISSING_KEY_REPLY


def test_a_body_missing_two_fields_lists_both_in_the_contracts_words(contract):
    reply = contract.post("/kb/retrieval-test/support-bot", json={"query": "courier invoice"})
    assert reply.status_code == 422
    assert reply.json() == {"detail": [
        {"loc": ["body", "ground_truth_texts"], "msg": "field required", "type": "value_error.missing"},
        {"loc": ["body", "project_key"], "msg": "field required", "type": "value_error.missing"}]}
    # The same body with the key: the key's entry goes, the other stays. An empty key is not a key.
    keyed = contract.post("/kb/retrieval-test/support-bot", json={"query": "x", "project_key": "p"}).json()["detail"]
    assert [e["loc"] for e in keyed] == [["body", "ground_truth_texts"]]
    empty = contract.post("/kb/retrieval-test/support-bot", json={**SEED_EXAMPLE, "project_key": ""})
    assert empty.status_code == 422 and empty.json()["detail"][0]["loc"] == ["body", "project_key"]


def test_a_config_may_make_project_key_optional(server):
    """The `server` fixture's config says require_project_key = false: the same body is served."""
    assert server.post(CONTRACT_PATHS[0], content=CONTRACT_REQUEST_WITHOUT_KEY, headers=JSON).status_code == 404
    reply = server.post("/kb/retrieval-test/bm25", content=CONTRACT_REQUEST_WITHOUT_KEY, headers=JSON)
    assert reply.status_code == 200, reply.text


def test_score_threshold_is_the_least_score_of_a_returned_document(contract):
    """The issue's case: with 0.99, documents scoring 0.57 came back. Now none below the threshold does."""
    def scores(threshold):
        body = {**SEED_EXAMPLE, "query": "courier invoice water bill", "ground_truth_texts": [DOCS["d4"]],
                "enable_query_enhancement": False, "enable_rerank": False, "top_k": 5, "score_threshold": threshold}
        reply = contract.post("/kb/retrieval-test/support-bot", json=body)
        assert reply.status_code == 200, reply.text
        return [(d["doc_id"], d["score"], d["raw_score"]) for d in reply.json()["result"][0]["documents"]]

    every = scores(0.0)
    assert len(every) == 3 and every[0][1] == 1.0  # d1, d4, d3 hold query words; d2 none (BM25 drops it)
    # Normalised by the best raw score of the pool: score = raw / best, so the ratios are the raw ones.
    best = every[0][2]
    assert all(0.0 <= s <= 1.0 and s == pytest.approx(raw / best, abs=1e-6) for _, s, raw in every)
    assert any(raw > 1.0 for _, _, raw in every)  # BM25's own scores are not in 0..1
    middle = every[1][1]
    assert 0.0 < middle < 1.0
    kept = scores(middle)
    assert [d for d, _, _ in kept] == [d for d, s, _ in every if s >= middle]
    assert [d for d, _, _ in scores(0.99)] == [every[0][0]]
    assert all(s >= 0.99 for _, s, _ in scores(0.99))


def test_a_retriever_that_scores_similarity_already_is_not_rescaled(config):
    """score_normalisation = "none": the fixed retriever's 1, 1/2, 1/3 stay as they are (clipped into 0..1)."""
    config.write_text(config.read_text().replace('callable = "team_search_h6:build"\n',
                                                 'callable = "team_search_h6:build"\nscore_normalisation = "none"\n'))
    for client in _uvicorn(create_app_from_file(config)):
        body = {"query": "q", "ground_truth_texts": ["t"], "top_k": 4, "enable_rerank": False, "score_threshold": 0.3}
        docs = client.post("/retrieval-test/fixed", json=body).json()["result"][0]["documents"]
        assert [(d["doc_id"], d["score"]) for d in docs] == [("d1", 1.0), ("d2", 0.5), ("d3", pytest.approx(1 / 3))]


def test_a_retriever_scoring_nan_is_the_servers_fault_said_plainly(config):
    config.write_text(config.read_text() + '\n[retrievers.nan]\ncallable = "team_search_h6:build_nan"\n'
                                           'corpus = "corpus.jsonl"\n')
    for client in _uvicorn(create_app_from_file(config)):
        reply = client.post("/kb/retrieval-test/nan", json={"query": "q", "ground_truth_texts": ["t"]})
        assert reply.status_code == 502
        assert reply.json()["detail"] == "retriever 'nan' returned score nan for document 'd1'; expected a finite number"


def test_score_normalisation():
    from labeller.serve.scores import normalise_scores

    assert normalise_scores([1.42, 1.07, 0.0]) == [1.0, pytest.approx(1.07 / 1.42), 0.0]
    assert normalise_scores([2.0, -1.0]) == [1.0, 0.0]  # a negative score is no similarity
    assert normalise_scores([-0.2, -0.6, -1.0]) == [1.0, pytest.approx(0.5), 0.0]  # negated distances: min-max
    assert normalise_scores([-3.0, -3.0]) == [1.0, 1.0] and normalise_scores([]) == []
    assert normalise_scores([1.3, 0.4, -0.1], "none") == [1.0, 0.4, 0.0]


def test_the_seed_example_to_an_unknown_agent_is_a_404(contract):
    reply = contract.post("/kb/retrieval-test/nope", json=SEED_EXAMPLE)
    assert reply.status_code == 404 and "unknown agent 'nope'" in reply.json()["detail"]
    # The path is checked before the body: an unknown agent is a 404 whatever was posted.
    assert contract.post("/kb/retrieval-test/nope", json={"query": 5}).status_code == 404


def test_the_seed_example_without_ground_truth_is_one_422(contract):
    body = {k: v for k, v in SEED_EXAMPLE.items() if k != "ground_truth_texts"}
    reply = contract.post("/kb/retrieval-test/support-bot", json=body)
    assert reply.status_code == 422
    (error,) = reply.json()["detail"]
    assert error == {"loc": ["body", "ground_truth_texts"], "msg": "field required", "type": "value_error.missing"}
    assert "proj-acme-001" not in reply.text  # no `input` echo: it would send the project_key back


@pytest.fixture
def keyed(config):
    text = config.read_text().replace('callable = "team_search_h6:build"\n',
                                      'callable = "team_search_h6:build"\nproject_keys = ["proj-fixed-only"]\n')
    config.write_text(text)
    yield from _uvicorn(create_app_from_file(_config_with(config, 'project_keys = ["proj-acme-001"]\n')))


def test_project_keys_are_checked_when_the_config_sets_them(keyed):
    """Keys configured for an agent make project_key required for it, even where the config makes it optional."""
    assert keyed.post("/retrieval-test/fixed", json=SEED_EXAMPLE).status_code == 200
    missing = keyed.post("/retrieval-test/fixed", json={k: v for k, v in SEED_EXAMPLE.items() if k != "project_key"})
    assert missing.status_code == 422 and missing.content == CONTRACT_MISSING_KEY_REPLY
    wrong = keyed.post("/retrieval-test/fixed", json={**SEED_EXAMPLE, "project_key": "proj-guess-999"})
    assert wrong.status_code == 403 and "not accepted for agent 'fixed'" in wrong.json()["detail"]
    assert "proj-guess-999" not in wrong.text and "proj-acme-001" not in wrong.text
    # A key of one agent opens that agent only; the [server] keys open every agent.
    own = {**SEED_EXAMPLE, "project_key": "proj-fixed-only"}
    assert keyed.post("/kb/retrieval-test/fixed", json=own).status_code == 200
    assert keyed.post("/kb/retrieval-test/bm25", json=own).status_code == 403
    assert keyed.post("/kb/retrieval-test/bm25", json=SEED_EXAMPLE).status_code == 200
    assert keyed.post("/kb/retrieval-test/nope", json=SEED_EXAMPLE).status_code == 404


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
            "match_threshold": 0.7, "score_threshold": 0, **extra}
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


# -- the /docs page, offline, in a real browser ---------------------------------------------------

@pytest.fixture(scope="module")
def browser():
    from browser_helpers import launched_chromium

    yield from launched_chromium()


def test_the_docs_page_renders_with_every_outside_request_blocked(server, browser):
    """Swagger UI's script and styles come from this server, not a CDN: with the network cut off at the
    browser, the page still draws the operations. (FastAPI's own /docs page is blank here.)"""
    from urllib.parse import urlsplit

    base = str(server.base_url)
    outside: list[str] = []

    def only_loopback(route):
        if urlsplit(route.request.url).hostname == "127.0.0.1":
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    page = browser.new_page()
    try:
        page.route("**/*", only_loopback)
        page.goto(base + "/docs")
        page.wait_for_selector(".opblock", timeout=15000)
        paths = page.locator(".opblock-summary-path").all_inner_texts()
        assert {"/kb/retrieval-test/{agent_id}", "/retrieval-test/{agent_id}", "/judge", "/health"} <= {
            p.replace("\u200b", "") for p in paths}, paths
        assert outside == []
    finally:
        page.close()
