"""Prompt caching: the stable part of every request first, the pair last; cached input tokens are
recorded and priced at the cached rate, in the synchronous path (the batch path: tests/test_batch.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from fakeapi import FakeAPI

from labeller.judges.anthropic import AnthropicJudge
from labeller.judges.openai import OpenAIJudge
from labeller.prices import load_prices
from labeller.records import Doc, Query
from labeller.rubric import available_rubrics, load_rubric

KEY = "sk-caching-SECRET-42"
PAIRS = [(Query(query_id="q1", text="blanch spinach"), Doc(doc_id="d1", text="Boil spinach for two minutes.")),
         (Query(query_id="q2", text="bounty hunter pay"), Doc(doc_id="d2", text="Hunters get a share of bail."))]


@pytest.mark.parametrize("name", available_rubrics())
def test_every_shipped_rubric_keeps_the_pair_out_of_the_shared_prefix(name):
    rubric = load_rubric(name)
    pairs = [(Query(query_id=f"q{i}", text=f"query-text-{i}", fields={f: f"query-{f}-{i}" for f in rubric.query_fields}),
              Doc(doc_id=f"d{i}", text=f"doc-text-{i}", fields={f: f"doc-{f}-{i}" for f in rubric.doc_fields}))
             for i in (1, 2)]
    first, second = (rubric.render(q, d) for q, d in pairs)
    assert first.system == second.system, "the system text (preamble, rubric, examples) is the same for every pair"
    shown = [v for v in first.user.split("\n") if "-1" in v]
    assert shown, "the pair is in the user message"
    assert not any(v.split(": ")[-1] in first.system for v in shown), "no part of the pair in the shared prefix"
    assert rubric.body.strip()[:200] in first.system
    for example in rubric.examples:
        assert example.justification in first.system and example.justification not in first.user


def test_requests_put_the_stable_part_first_and_the_pair_last():
    prompt = load_rubric("transactions").render(*PAIRS[0])
    body = OpenAIJudge("gpt-4.1-mini", api_key="unused", base_url="http://127.0.0.1:9/v1").request(prompt)
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert body["messages"][0]["content"] == prompt.system and body["messages"][-1]["content"] == prompt.user
    params = AnthropicJudge("claude-sonnet-4-5", api_key="unused", base_url="http://127.0.0.1:9").request(prompt)
    assert params["system"] == [{"type": "text", "text": prompt.system, "cache_control": {"type": "ephemeral"}}]
    assert params["messages"] == [{"role": "user", "content": prompt.user}]


@pytest.mark.parametrize("judge", ["openai:gpt-4.1-mini", "anthropic:claude-sonnet-4-5"])
def test_cached_input_tokens_are_recorded_and_priced_at_the_cached_rate(judge, tmp_path):
    fields = {"supplier": "Paperline", "amount": 23.99, "currency": "GBP", "vat": "standard 20%", "date": "2026-01-05",
              "category": "Office supplies"}  # every field the transactions rubric shows the judge
    (tmp_path / "q.jsonl").write_text(json.dumps({"query_id": "q1", "text": "office paper", "description": "paper",
                                                  **fields}) + "\n", encoding="utf-8")
    (tmp_path / "c.jsonl").write_text("".join(json.dumps({"doc_id": f"d{i}", "text": f"receipt {i}",
                                                          "description": f"receipt {i}", **fields}) + "\n"
                                              for i in range(12)), encoding="utf-8")
    (tmp_path / "p.jsonl").write_text("".join(json.dumps({"query_id": "q1", "doc_id": f"d{i}"}) + "\n"
                                              for i in range(12)), encoding="utf-8")
    with FakeAPI(api_key=KEY) as api:
        env = {**os.environ, "OPENAI_API_KEY": KEY, "ANTHROPIC_API_KEY": KEY, "OPENAI_BASE_URL": api.openai_url,
               "ANTHROPIC_BASE_URL": api.url}
        done = subprocess.run([sys.executable, "-m", "labeller", "label", "--queries", "q.jsonl", "--corpus", "c.jsonl",
                               "--pairs", "p.jsonl", "--judge", judge, "--rubric", "transactions", "--concurrency", "1",
                               "--cache", "cache", "--out", "labels.jsonl"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in (tmp_path / "labels.jsonl").read_text().splitlines()]
    provider, model = judge.split(":")
    price = load_prices().lookup(provider, model)
    assert rows[0]["cached_input_tokens"] == 0 and all(r["cached_input_tokens"] > 0 for r in rows[1:])
    for row in rows:
        assert row["cost_usd"] == pytest.approx(price.cost(row["input_tokens"], row["output_tokens"],
                                                           row["cached_input_tokens"]))
    for row in rows[1:]:
        assert row["cost_usd"] < price.cost(row["input_tokens"], row["output_tokens"]) * 0.6, "the prefix is cheap"
