"""A self-hosted judge on GPU workers through Ray Data's vLLM processor (ray.data.llm), with labeller's own prompts,
reply parser and cache keys (docs/ray.md, "Self-hosted models").

    pairs (block_frames) -> preprocess: the judge's chat messages and sampling params for each pair
                         -> ray.data.llm vLLM engine stage (chat template, tokenize, generate, detokenize)
                         -> postprocess: the generated text read by OpenAIJudge's own reply parser, as a
                            `cache export` row (a verdict under the cache key `labeller label` computes for
                            openai:MODEL at BASE_URL) or a failure with its reason
    verdict rows -> a file -> `labeller cache import` -> `labeller label --judge openai:MODEL --base-url BASE_URL`
    answers every such pair from the store (a cached rerun); failed pairs are counted, never graded.

The judge object here sends nothing: it only builds each request body and parses each reply, so both are
exactly those of a run against an OpenAI-compatible server (e.g. `vllm serve`) with the same model and settings.
A malformed reply is not retried inside the batch (vLLM decodes under the verdict's JSON schema, so it is rare);
it is returned as a failure, and a later `labeller label` pays for that pair again through a server.
"""

from __future__ import annotations

import json
from typing import Any

from labeller.cache_key import cache_key
from labeller.judges.base import SCHEMA_VERSION, MalformedReplyError
from labeller.records import Doc, Query
from labeller.rubric import Rubric
from labeller.store.base import CachedVerdict, export_row, now_iso

NOT_SENT_KEY = "labeller-ray-vllm-sends-nothing"  # the judge object builds bodies and parses replies only


def in_ray_base_url(model: str) -> str:
    """The base URL a model run inside Ray is keyed under unless told otherwise (no server answers there)."""
    return f"ray-vllm://{model}"


class VllmJudging:
    """The pieces ray.data.llm.build_processor takes for labeller's judge: config(), preprocess, postprocess."""

    def __init__(self, model: str, rubric: Rubric, *, base_url: str | None = None, temperature: float = 0.0,
                 max_output_tokens: int = 400, batch_size: int = 64, concurrency: int = 1,
                 engine_kwargs: dict[str, Any] | None = None) -> None:
        self.model, self.rubric = model, rubric
        self.base_url = base_url or in_ray_base_url(model)
        self.judge = self._judge(temperature, max_output_tokens)
        self.batch_size, self.concurrency = batch_size, concurrency
        self.engine_kwargs = dict(engine_kwargs or {})

    def _judge(self, temperature: float, max_output_tokens: int):
        from labeller.judges.openai import OpenAIJudge

        return OpenAIJudge(self.model, base_url=self.base_url, api_key=NOT_SENT_KEY, temperature=temperature,
                           max_output_tokens=max_output_tokens, output_mode="json_schema")

    def __getstate__(self) -> dict[str, Any]:
        """Ray ships preprocess and postprocess to the workers pickled, with this object: the judge holds an HTTP
        client (locks, a pool) that cannot travel, so its settings do and each worker builds its own."""
        state = {k: v for k, v in self.__dict__.items() if k != "judge"}
        return {**state, "judge_settings": (self.judge.temperature, self.judge.max_output_tokens)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        temperature, max_output_tokens = state.pop("judge_settings")
        self.__dict__.update(state)
        self.judge = self._judge(temperature, max_output_tokens)

    def config(self):
        """The vLLMEngineProcessorConfig: the model, one engine per `concurrency` GPU worker, `batch_size` a batch."""
        from ray.data.llm import vLLMEngineProcessorConfig

        return vLLMEngineProcessorConfig(model_source=self.model, batch_size=self.batch_size,
                                         concurrency=self.concurrency, engine_kwargs=self.engine_kwargs)

    def sampling_params(self) -> dict[str, Any]:
        """The request's decoding settings as vLLM's SamplingParams, the verdict's JSON schema as structured output."""
        sent = self.judge.decoding_settings()
        schema = sent["response_format"]["json_schema"]["schema"]
        return {"temperature": sent["temperature"], "max_tokens": sent["max_tokens"],
                "structured_outputs": {"json": schema}}

    def _prompt(self, row: dict[str, Any]):
        query = Query(query_id=row["query_id"], **json.loads(row["query"]))
        doc = Doc(doc_id=row["doc_id"], **json.loads(row["doc"]))
        return self.rubric.render(query, doc)

    def preprocess(self, row: dict[str, Any]) -> dict[str, Any]:
        """A block row (query_id, doc_id, query, doc) -> the judge's chat messages and sampling params."""
        return {**row, "messages": self.judge.request(self._prompt(row))["messages"],
                "sampling_params": self.sampling_params()}

    def postprocess(self, row: dict[str, Any]) -> dict[str, Any]:
        """The engine's generated text through the judge's own reply parser: a verdict row to import, or a failure."""
        prompt = self._prompt(row)
        tokens_in, tokens_out = int(row.get("num_input_tokens") or 0), int(row.get("num_generated_tokens") or 0)
        cut = tokens_out >= self.judge.max_output_tokens
        body = {"model": self.model, "usage": {"prompt_tokens": tokens_in, "completion_tokens": tokens_out},
                "choices": [{"message": {"content": row.get("generated_text") or ""},
                             "finish_reason": "length" if cut else "stop"}]}
        out = {"query_id": row["query_id"], "doc_id": row["doc_id"], "verdict": "", "error": ""}
        try:
            reply = self.judge.read_body(body, prompt)
        except MalformedReplyError as exc:
            out["error"] = exc.reason
            return out
        settings = self.judge.decoding_settings()
        key = cache_key(provider="openai", model=self.model, base_url=self.judge.base_url, settings=settings,
                        prompt=prompt)
        record = CachedVerdict(cache_key=key, query_id=row["query_id"], doc_id=row["doc_id"], verdict=reply.verdict,
                               judge=self.judge.name, provider="openai", model=self.model, settings=settings,
                               schema_version=SCHEMA_VERSION, rubric=self.rubric.name,
                               rubric_version=self.rubric.version, input_tokens=tokens_in, output_tokens=tokens_out,
                               created_at=now_iso(), served_model=self.model)
        out["verdict"] = json.dumps(export_row(record), ensure_ascii=False)
        return out

    def processor(self):
        """The ray.data.llm processor (needs vllm and a GPU on the workers): apply it to a Dataset of block rows."""
        from ray.data.llm import build_processor

        return build_processor(self.config(), preprocess=self.preprocess, postprocess=self.postprocess)


def split_results(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The processor's output rows as (`cache export` rows to import, failures with their reasons)."""
    verdicts = [json.loads(row["verdict"]) for row in rows if row["verdict"]]
    failures = [{"query_id": r["query_id"], "doc_id": r["doc_id"], "reason": r["error"]} for r in rows if r["error"]]
    return verdicts, failures
