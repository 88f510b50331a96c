"""The self-hosted path through Ray Data's vLLM processor, as far as a machine without a GPU (or vllm) goes: the
processor config names the model, each row's messages are the judge's own prompt, replies go through the judge's
own reply parser (a malformed one is a counted failure, never a grade), and the verdicts imported with
`labeller cache import` answer `labeller label` for the same model and base URL from the store, sending nothing."""

from __future__ import annotations

import json
import os

import pytest
from cli_helpers import cli, jsonl

if not os.environ.get("CI"):  # in CI the dev extra installs Ray: a missing Ray fails there, never skips
    pytest.importorskip("ray.data.llm", reason="the ray extra (pip install 'labeller-relevance[ray]') is not installed")

from ray import cloudpickle  # noqa: E402

from labeller.distributed.blocks import block_frames  # noqa: E402
from labeller.distributed.vllm import VllmJudging, split_results  # noqa: E402
from labeller.io.writing import write_rows  # noqa: E402
from labeller.judges.openai import OpenAIJudge  # noqa: E402
from labeller.records import Doc, Pair, Query  # noqa: E402
from labeller.rubric import load_rubric  # noqa: E402

MODEL = "Qwen/Qwen2.5-7B-Instruct"


def block_rows():
    queries = {"q1": Query(query_id="q1", text="cheap flights to Lisbon")}
    corpus = {f"d{i}": Doc(doc_id=f"d{i}", text=f"fare table {i}", fields={"title": f"Fares {i}"}) for i in range(3)}
    pairs = [Pair(query_id="q1", doc_id=f"d{i}") for i in range(3)]
    frame = next(block_frames(pairs, queries, corpus, 10))
    return frame.to_dict("records"), queries, corpus


def test_the_processor_config_carries_the_model_and_the_judges_own_request():
    judging = VllmJudging(MODEL, load_rubric("general"), batch_size=16, concurrency=2,
                          engine_kwargs={"max_model_len": 8192})
    config = judging.config()
    assert (config.model_source, config.batch_size, config.concurrency) == (MODEL, 16, 2)
    assert config.engine_kwargs["max_model_len"] == 8192
    rows, queries, corpus = block_rows()
    prepared = judging.preprocess(rows[1])
    reference = OpenAIJudge(MODEL, base_url=judging.base_url, api_key="x", output_mode="json_schema")
    expected = reference.request(load_rubric("general").render(queries["q1"], corpus["d1"]))["messages"]
    assert prepared["messages"] == expected and "fare table 1" in expected[-1]["content"]
    params = prepared["sampling_params"]
    assert params["temperature"] == 0.0 and params["max_tokens"] == 400
    assert params["structured_outputs"]["json"]["properties"]["grade"]["enum"] == [1, 2, 3, 4, 5]
    # Ray ships preprocess and postprocess to its workers pickled: they travel, and do there what they do here.
    shipped = cloudpickle.loads(cloudpickle.dumps(judging.preprocess))
    assert shipped(rows[1]) == prepared and shipped.__self__.judge is not judging.judge


def test_replies_go_through_the_judges_parser_and_malformed_ones_are_failures(tmp_path, capsys, monkeypatch):
    judging = VllmJudging(MODEL, load_rubric("general"))
    rows, _, _ = block_rows()
    replies = ['{"justification": "The fares match.", "grade": 4}',
               '{"justification": "", "grade": 9}',  # out of range: malformed, not a grade
               "I think it is relevant"]
    out = [judging.postprocess({**row, "generated_text": text, "num_input_tokens": 900, "num_generated_tokens": 12})
           for row, text in zip(rows, replies)]
    verdicts, failures = split_results(out)
    assert [(v["doc_id"], v["grade"]) for v in verdicts] == [("d0", 4)]
    assert [f["doc_id"] for f in failures] == ["d1", "d2"] and all(f["reason"] for f in failures)
    cut = judging.postprocess({**rows[0], "generated_text": '{"justification": "x', "num_input_tokens": 9,
                               "num_generated_tokens": 400})
    assert "cut off" in cut["error"] and not cut["verdict"]

    # Imported, the verdict answers `labeller label` for the same model and base URL from the store.
    write_rows(tmp_path / "vllm.jsonl", verdicts)
    code, _, err = cli(capsys, "cache", "import", tmp_path / "vllm.jsonl", "--cache", tmp_path / "cache")
    assert code == 0 and "imported 1 verdicts" in err, err
    folder = tmp_path / "in"
    folder.mkdir()
    jsonl(folder / "q.jsonl", [{"query_id": "q1", "text": "cheap flights to Lisbon"}])
    jsonl(folder / "c.jsonl", [{"doc_id": "d0", "text": "fare table 0", "title": "Fares 0"}])
    jsonl(folder / "p.jsonl", [{"query_id": "q1", "doc_id": "d0"}])
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    code, _, err = cli(capsys, "label", "--judge", f"openai:{MODEL}", "--base-url", judging.base_url,
                       "--queries", folder / "q.jsonl", "--corpus", folder / "c.jsonl", "--pairs", folder / "p.jsonl",
                       "--cache", tmp_path / "cache", "--out", tmp_path / "labels.jsonl", "--timeout", "1")
    assert code == 0, err
    label = json.loads((tmp_path / "labels.jsonl").read_text())
    assert (label["grade"], label["from_cache"], label["justification"]) == (4, True, "The fares match.")
