"""Cache keys: what changes a pair's key and what does not (the store itself is tested in test_store.py)."""

from __future__ import annotations

from fakejudge import RUBRIC_TEXT, sample, write_rubric

from labeller.cache_key import cache_key
from labeller.judges.openai import OpenAIJudge
from labeller.rubric import load_rubric


def _key(judge, rubric, query, doc) -> str:
    return cache_key(provider=judge.provider, model=judge.model, base_url=judge.base_url,
                     settings=judge.decoding_settings(), prompt=rubric.render(query, doc))


def test_one_changed_rubric_word_changes_the_key(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-real")
    queries, corpus, _ = sample(1, 1)
    q, d = queries["q0"], corpus["d0-0"]
    (tmp_path / "a").mkdir()
    first = load_rubric(write_rubric(tmp_path / "a"))
    second = load_rubric(write_rubric(tmp_path, RUBRIC_TEXT.replace("answers", "addresses")))
    judge = OpenAIJudge("gpt-4.1-mini")
    assert first.version != second.version
    assert _key(judge, first, q, d) != _key(judge, second, q, d)


def test_timeouts_do_not_change_the_key_but_temperature_does(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-real")
    queries, corpus, _ = sample(1, 1)
    q, d = queries["q0"], corpus["d0-0"]
    rubric = load_rubric(write_rubric(tmp_path))
    base = _key(OpenAIJudge("gpt-4.1-mini", timeout=60.0), rubric, q, d)
    assert _key(OpenAIJudge("gpt-4.1-mini", timeout=5.0), rubric, q, d) == base
    assert _key(OpenAIJudge("gpt-4.1-mini", temperature=0.7), rubric, q, d) != base
    assert _key(OpenAIJudge("gpt-4.1", timeout=60.0), rubric, q, d) != base
