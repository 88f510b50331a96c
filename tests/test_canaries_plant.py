"""The canary file and planting: validation, deterministic ids, test-copy marking, uniqueness checks."""

import json

import pytest

from labeller.canaries import is_test_copy, load_canaries, plant_files
from labeller.cli import main
from labeller.errors import BadInputError
from labeller.io import read_corpus

CANARIES = """
[[canary]]
id = "kite"
question = "Which reference did Kite Couriers quote on the March delivery invoice?"
payload = "Kite Couriers delivery invoice for March, reference X9-KITE-42, 3 parcels."
store = "ledger"
planted_at = "2026-01-05T09:00:00Z"
fields = { supplier = "Kite Couriers", amount = 48.0 }
forbidden = ["X9-KITE-24"]
[[canary.facts]]
value = "X9-KITE-42"
aliases = ["X9 KITE 42"]

[[canary]]
question = "Which fan model and lock code were agreed for the server room?"
planted_at = "2026-01-05T09:00:00Z"
[canary.sources.chat]
payload = "Chat: for the server room we agreed on the NF-A12x25 fan."
facts = [{ value = "NF-A12x25" }]
[canary.sources.ledger]
payload = "Ledger: server room lock, code LO1923, paid by card."
facts = [{ value = "LO1923" }]

[[canary]]
id = "no-iban"
question = "What is the IBAN of Zephyr Mills?"
planted_at = "2026-01-05T09:00:00Z"
forbidden = ["GB29 NWBK 6016 1331 9268 19", "as an ai language model"]
"""


@pytest.fixture
def files(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    rows = [{"doc_id": f"d{i}", "text": f"Office supplies order {i} from Paper Co", "supplier": "Paper Co"}
            for i in range(5)]
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows))
    canaries = tmp_path / "canaries.toml"
    canaries.write_text(CANARIES)
    return tmp_path, corpus, canaries


def test_canary_file_loads_three_kinds_with_deterministic_ids(files):
    _, _, path = files
    first, second = load_canaries(path), load_canaries(path)
    assert [c.kind for c in first] == ["single", "cross-source", "no-hallucination"]
    derived = first[1].canary_id
    assert derived.startswith("cn-") and derived == second[1].canary_id
    assert [d.doc_id for d in first[1].documents()] == [f"canary-{derived}-chat", f"canary-{derived}-ledger"]
    assert first[1].facts_by_store().keys() == {"chat", "ledger"}
    assert first[2].documents() == []


VALID = '[[canary]]\nid = "ok"\nquestion = "q0"\nplanted_at = "2026-01-01"\n# a comment line\nforbidden = ["y"]\n'


@pytest.mark.parametrize("body, field, expected", [
    ('question = "q"\nplanted_at = "yesterday"\nforbidden = ["x"]', "planted_at", "ISO 8601"),
    ('question = "q"\nplanted_at = "2026-01-01"', None, "needs facts to recall, or a forbidden list"),
    ('question = "q"\nplanted_at = "2026-01-01"\npayload = "p"\nfacts = [{value = "Z7-ORB-11"}]', None,
     "must appear in the payload"),
    ('question = "q"\nplanted_at = "2026-01-01"\nforbidden = ["x"]\ncolour = "red"', "colour", "unknown field"),
    ('question = "q"\nplanted_at = "2026-01-01"\nforbidden = ["x"]\npass_threshold = 0', "pass_threshold", "greater than 0"),
    ('question = "q"\nplanted_at = "2026-01-01"\n[canary.sources.chat]\npayload = "A1-B"\nfacts = [{value = "A1-B"}]', None,
     "at least two stores"),
])
def test_bad_canaries_name_the_file_and_field(tmp_path, body, field, expected):
    path = tmp_path / "c.toml"
    path.write_text(VALID + "\n[[canary]]\n" + body + "\n")  # the bad canary's table starts on line 8
    with pytest.raises(BadInputError) as err:
        load_canaries(path)
    assert expected in str(err.value) and str(err.value).startswith(f"{path}:8: ")
    if field:
        assert err.value.field == field


def test_facts_must_be_unique_across_canaries(tmp_path):
    path = tmp_path / "c.jsonl"
    rows = [{"id": "a", "question": "q1", "planted_at": "2026-01-01", "payload": "code Q7-ZED-90",
             "facts": [{"value": "Q7-ZED-90"}]},
            {"id": "b", "question": "q2", "planted_at": "2026-01-01", "payload": "also q7-zed-90 and R2-D2-77",
             "facts": [{"value": "R2-D2-77"}]}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(BadInputError, match="also appears in canary 'b'"):
        load_canaries(path)


def test_plant_writes_a_test_copy_with_the_canaries_added(files):
    tmp, corpus, canaries = files
    out = tmp / "corpus.test.jsonl"
    result = plant_files(corpus=corpus, canaries=canaries, out=out, queries_out=tmp / "canary-queries.jsonl")
    assert (result.corpus_docs, result.canary_docs, result.canaries) == (5, 3, 3)
    docs = read_corpus(out)
    assert list(docs)[:5] == [f"d{i}" for i in range(5)] and docs["d0"] == read_corpus(corpus)["d0"]
    kite = docs["canary-kite"]
    assert kite.text.endswith("X9-KITE-42, 3 parcels.")
    assert kite.fields == {"supplier": "Kite Couriers", "amount": 48.0, "store": "ledger", "canary_id": "kite",
                           "planted_at": "2026-01-05T09:00:00Z"}
    questions = [json.loads(line) for line in (tmp / "canary-queries.jsonl").read_text().splitlines()]
    assert questions[0] == {"query_id": "kite", "text": load_canaries(canaries)[0].question}
    # Planting again gives the same bytes: ids and timestamps come from the canary file, not the clock.
    first = out.read_bytes()
    plant_files(corpus=corpus, canaries=canaries, out=out)
    assert out.read_bytes() == first


def test_separate_writes_only_the_canary_documents(files):
    tmp, corpus, canaries = files
    out = tmp / "only.canary.csv"
    assert plant_files(corpus=corpus, canaries=canaries, out=out, separate=True).corpus_docs == 0
    assert sorted(read_corpus(out)) == sorted(d.doc_id for c in load_canaries(canaries) for d in c.documents())


@pytest.mark.parametrize("name", ["corpus.jsonl", "corpus-test.jsonl", "prod.jsonl", "testcorpus.jsonl"])
def test_plant_refuses_a_file_not_marked_as_a_test_copy(files, name):
    tmp, corpus, canaries = files
    before = corpus.read_bytes()
    with pytest.raises(BadInputError, match="not marked as a test copy"):
        plant_files(corpus=corpus, canaries=canaries, out=tmp / name)
    assert corpus.read_bytes() == before and not is_test_copy(name)


def test_plant_refuses_to_overwrite_the_input_corpus_even_when_it_looks_like_a_test_copy(files):
    tmp, _, canaries = files
    corpus = tmp / "ledger.test.jsonl"
    corpus.write_text('{"doc_id": "a", "text": "x"}\n')
    with pytest.raises(BadInputError, match="refusing to overwrite the input corpus"):
        plant_files(corpus=corpus, canaries=canaries, out=tmp / "." / "ledger.test.jsonl")


def test_plant_refuses_facts_that_already_occur_in_the_corpus(files):
    tmp, corpus, canaries = files
    corpus.write_text(corpus.read_text() + json.dumps({"doc_id": "old", "text": "Lock code lo1923 reset"}) + "\n")
    with pytest.raises(BadInputError, match="fact 'LO1923' .* already occurs in corpus document 'old'"):
        plant_files(corpus=corpus, canaries=canaries, out=tmp / "c.test.jsonl")
    assert not (tmp / "c.test.jsonl").exists()


def test_plant_refuses_a_corpus_that_already_holds_the_canaries(files):
    tmp, corpus, canaries = files
    plant_files(corpus=corpus, canaries=canaries, out=tmp / "a.test.jsonl")
    with pytest.raises(BadInputError, match="already has a document 'canary-kite'"):
        plant_files(corpus=tmp / "a.test.jsonl", canaries=canaries, out=tmp / "b.test.jsonl")


def test_cli_plant_refusal_is_one_line_and_exit_2(files, capsys):
    tmp, corpus, canaries = files
    with pytest.raises(SystemExit) as exit_:
        main(["canaries", "plant", "--corpus", str(corpus), "--canaries", str(canaries), "--out", str(tmp / "x.jsonl")])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("labeller: error: ") and err.count("\n") == 1 and ".test." in err


def test_fact_codes_are_deterministic_and_avoid_the_corpus():
    from labeller.canaries import fact_code, unique_codes

    first = fact_code("labeller/0")
    assert first == fact_code("labeller/0") and first != fact_code("labeller/1")
    letter_digit, word, number = first.split("-")
    assert letter_digit[0].isupper() and letter_digit[1].isdigit() and word.isupper() and 10 <= int(number) <= 99
    clean = unique_codes(3, "labeller", ["nothing here"])
    assert clean[0] == first and len(set(clean)) == 3
    # A corpus that already holds the first code (in any case or spacing) pushes it out.
    taken = unique_codes(3, "labeller", [f"old record {first.lower()}"])
    assert first not in taken and taken[:2] == clean[1:]


def test_cli_new_writes_a_starter_file_that_plants_and_is_never_overwritten(files, capsys):
    tmp, corpus, _ = files
    out = tmp / "starter.toml"
    with pytest.raises(SystemExit) as exit_:
        main(["canaries", "new", "--corpus", str(corpus), "--out", str(out), "--count", "2", "--seed", "s"])
    assert exit_.value.code == 0
    canaries = load_canaries(out)
    assert [c.canary_id for c in canaries] == ["record-01", "record-02"] and all(c.kind == "single" for c in canaries)
    assert plant_files(corpus=corpus, canaries=out, out=tmp / "c.test.jsonl").canary_docs == 2
    before = out.read_bytes()
    with pytest.raises(SystemExit) as again:
        main(["canaries", "new", "--corpus", str(corpus), "--out", str(out)])
    assert again.value.code == 2 and out.read_bytes() == before
    assert "refusing to overwrite" in capsys.readouterr().err


def test_queries_out_may_not_replace_the_corpus(files):
    tmp, corpus, canaries = files
    before = corpus.read_bytes()
    with pytest.raises(BadInputError, match="must be a new file"):
        plant_files(corpus=corpus, canaries=canaries, out=tmp / "c.test.jsonl", queries_out=corpus)
    assert corpus.read_bytes() == before and not (tmp / "c.test.jsonl").exists()


# -- whole tokens in planting (issue 25) ----------------------------------------------------------

def _one_canary(tmp_path, fact: str, corpus_text: str):
    (tmp_path / "c.toml").write_text(f'[[canary]]\nid = "lock"\nquestion = "Lock code?"\n'
                                     f'payload = "The bike lock code is {fact}."\nplanted_at = "2026-01-05T09:00:00Z"\n'
                                     f'facts = [{{ value = "{fact}" }}]\n')
    (tmp_path / "corpus.jsonl").write_text(json.dumps({"doc_id": "d1", "text": corpus_text}) + "\n")
    return dict(corpus=tmp_path / "corpus.jsonl", canaries=tmp_path / "c.toml", out=tmp_path / "corpus.test.jsonl")


def test_a_longer_number_holding_the_fact_does_not_block_planting(tmp_path):
    """'ref 73514' and '17351' are other numbers: 7351 is still unique as a whole token."""
    result = plant_files(**_one_canary(tmp_path, "7351", "Invoice ref 73514, account 17351, code 7351-B."))
    assert result.canary_docs == 1


def test_the_fact_itself_in_the_corpus_blocks_planting(tmp_path):
    with pytest.raises(BadInputError, match="fact '7351' of canary 'lock' already occurs in corpus document 'd1'"):
        plant_files(**_one_canary(tmp_path, "7351", "Old lock: code 7351, changed in May."))
    assert not (tmp_path / "corpus.test.jsonl").exists()


def test_new_canary_codes_skip_only_whole_token_collisions():
    from labeller.canaries import fact_code, unique_codes

    first = fact_code("s/0")
    assert unique_codes(1, "s", [f"ref {first}"]) != [first]  # the code itself occurs: skipped
    assert unique_codes(1, "s", [f"ref A{first}1"]) == [first]  # only inside a longer token: kept
