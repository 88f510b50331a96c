"""The retrieval-test HTTP API (FastAPI). Build it with `create_app(config)`; `labeller serve` runs it on uvicorn.

- POST /kb/retrieval-test/{agent_id} (the contract's path) and POST /retrieval-test/{agent_id} (the
  same route): the seed's retrieval-test contract. Run the configured retriever named agent_id,
  match its passages to the caller's ground truths (texts, or doc ids), return the documents and
  metrics per query variant (docs/serve.md has the exact contract).
- POST /judge: grade a query against documents through the labelling engine and the verdict cache.
- GET /health: liveness, the configured retrievers and the default judge.
- GET /docs: Swagger UI, its script and styles served by this server (fastapi-offline), so it works offline.

An invalid body gets a 422 (`detail`: a list of {loc, msg, type}; a missing field in the contract's
words, `"type": "value_error.missing"`, `"msg": "field required"`); an unknown retriever a 404; a
judge the config does not allow a 422 on `judge`; a missing `project_key` a 422 (unless the config
makes it optional and the agent has no keys), a refused one a 403; a verdict cache the server cannot
open or write a 503. With a token configured (LABELLER_SERVE_TOKEN or `[server] token`) every path
but /health and the docs pages need `Authorization: Bearer <token>` (else 401); bodies above `[server] max_body_bytes`
(1 MB by default) get 413 (see guard.py).
"""

from __future__ import annotations

import sqlite3
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi_offline import FastAPIOffline

from labeller.errors import BadInputError, LabellerError, StoreError
from labeller.records import Doc, Pair, Query
from labeller.retrieval.base import Retriever
from labeller.serve.config import ServeConfig, build_retrievers, load_config, resolve
from labeller.serve.guard import RequestGuard, project_key_refusal, serve_token
from labeller.serve.retrievaltest import invalid_field, retrieval_test
from labeller.serve.schemas import (JudgeRequest, JudgeResponse, KeyedRetrievalTestRequest, RetrievalTestRequest,
                                    RetrievalTestResponse)


def create_app(config: ServeConfig, retrievers: dict[str, Retriever] | None = None) -> FastAPI:
    """The API over the configured retrievers (built now unless given) and the default judge."""
    retrievers = build_retrievers(config) if retrievers is None else retrievers
    judges: dict = {}
    state: dict = {}

    def cache():
        if "cache" not in state:
            from labeller.store import default_spec, is_url, open_store

            spec = config.server.cache or default_spec()
            state["cache"] = open_store(spec if is_url(spec) else resolve(config, spec))
        return state["cache"]

    @asynccontextmanager
    async def lifespan(_app: FastAPI):
        yield
        for judge in judges.values():
            await judge.aclose()
        if "cache" in state:
            state["cache"].close()

    app = FastAPIOffline(title="labeller retrieval-test API", lifespan=lifespan)

    @app.exception_handler(RequestValidationError)
    async def invalid_body(_request: Request, exc: RequestValidationError) -> JSONResponse:
        # FastAPI's shape without its `input` echo: that would send the body back, project_key and all.
        errors = [contract_error({k: v for k, v in e.items() if k != "input"}) for e in exc.errors()]
        return JSONResponse(status_code=422, content={"detail": jsonable_encoder(errors)})

    app.add_middleware(RequestGuard, max_body_bytes=config.server.max_body_bytes,
                       token=serve_token(config.server.token))

    @app.get("/health")
    def health() -> dict:
        return {"status": "ok", "retrievers": sorted(retrievers), "judge": config.server.judge,
                "rubric": config.server.rubric}

    def agent(agent_id: str) -> tuple[str, Retriever]:
        """The agent named in the path; a dependency, so an unknown one is a 404 before the body is validated."""
        if agent_id not in retrievers:
            raise HTTPException(404, f"unknown agent '{agent_id}': no retriever of that name in the config; "
                                     f"configured: {', '.join(sorted(retrievers))}")
        return agent_id, retrievers[agent_id]

    def retrieval_test_route(req: RetrievalTestRequest,
                             found: tuple[str, Retriever] = Depends(agent)) -> RetrievalTestResponse:
        agent_id, retriever = found
        accepted = config.project_keys(agent_id)
        if req.project_key is None and (config.server.require_project_key or accepted):
            raise RequestValidationError([{"loc": ("body", "project_key"), "type": "missing", "msg": "Field required"}])
        refused = project_key_refusal(accepted, req.project_key, agent_id)
        if refused:
            raise HTTPException(*refused)
        spec = config.retrievers.get(agent_id)
        return retrieval_test(agent_id, retriever, req, spec.score_normalisation if spec else "max")

    # The body model the config asks for, so a missing project_key is listed with the body's other errors.
    retrieval_test_route.__annotations__["req"] = (KeyedRetrievalTestRequest if config.server.require_project_key
                                                   else RetrievalTestRequest)
    for path, name in (("/kb/retrieval-test/{agent_id}", "kb_retrieval_test"),
                       ("/retrieval-test/{agent_id}", "retrieval_test")):
        app.add_api_route(path, retrieval_test_route, methods=["POST"], response_model=RetrievalTestResponse,
                          name=name, operation_id=name)

    @app.post("/judge", response_model=JudgeResponse)
    async def judge_pairs(req: JudgeRequest) -> JudgeResponse:
        from labeller.judges.registry import make_judge
        from labeller.labelling import LabelOptions, label_pairs
        from labeller.rubric import available_rubrics, load_rubric

        spec = req.judge or config.server.judge
        if spec not in config.server.allowed_judges:  # any other model would be paid with the operator's key
            raise RequestValidationError([{"loc": ("body", "judge"), "type": "judge_not_allowed",
                                           "msg": f"this server serves only the judges its config allows: "
                                                  f"{', '.join(config.server.allowed_judges)} ([server] judges)"}])
        rubric_name = req.rubric or config.server.rubric
        # Only shipped rubric names (or the server's own rubric): a request must not make the server read files.
        if rubric_name not in available_rubrics() and rubric_name != config.server.rubric:
            raise RequestValidationError([{"loc": ("body", "rubric"), "type": "unknown_rubric",
                                           "msg": f"unknown rubric; expected one of {', '.join(available_rubrics())}"}])
        try:
            rubric = load_rubric(_rubric_path(config, rubric_name))
            if spec not in judges:
                judges[spec] = make_judge(spec)
        except LabellerError as exc:
            raise invalid_field("judge" if req.judge else "rubric", exc, "config_error") from None
        query = Query(query_id=req.query.query_id, text=req.query.text, fields=req.query.fields)
        corpus = {d.doc_id: Doc(doc_id=d.doc_id, text=d.text, fields=d.fields) for d in req.documents}
        if len(corpus) != len(req.documents):
            raise RequestValidationError([{"loc": ("body", "documents"), "type": "duplicate_doc_id",
                                           "msg": "document ids must be unique"}])
        pairs = [Pair(query_id=query.query_id, doc_id=d) for d in corpus]
        try:
            store = cache()
        except LabellerError as exc:  # the server's own fault, not the caller's: say so, not a 422
            raise HTTPException(503, f"the verdict cache cannot be opened: {exc}") from None
        try:
            run = await label_pairs(pairs, {query.query_id: query}, corpus, judges[spec], rubric, store,
                                    LabelOptions(progress=False))
        except BadInputError as exc:
            raise invalid_field("documents", exc, "bad_input") from None
        except (sqlite3.Error, OSError, StoreError) as exc:  # a full disk, a database gone: stored verdicts are kept
            raise HTTPException(503, f"the verdict cache could not be written ({exc}); verdicts stored before "
                                     "are kept") from None
        return JudgeResponse(judge=judges[spec].name, rubric=rubric.name, rubric_version=rubric.version,
                             labels=run.labels, failures=run.failures, new=run.stats.new, cached=run.stats.cached)

    return app


CONTRACT_ERRORS = {"missing": ("value_error.missing", "field required")}  # pydantic 2's words -> the contract's


def contract_error(error: dict) -> dict:
    """One 422 entry in the contract's words where it shows them (a missing field); pydantic's otherwise."""
    if error.get("type") in CONTRACT_ERRORS:
        kind, msg = CONTRACT_ERRORS[error["type"]]
        error = {**error, "type": kind, "msg": msg}
    return {"loc": error.get("loc"), "msg": error.get("msg"), "type": error.get("type"),
            **{k: v for k, v in error.items() if k not in ("loc", "msg", "type")}}  # pydantic 1's order


def _rubric_path(config: ServeConfig, name: str) -> str:
    """The server's configured rubric may be a file path relative to the config file."""
    if name == config.server.rubric and (Path(config.base_dir) / name).is_file():
        return str(Path(config.base_dir) / name)
    return name


def create_app_from_file(path: str | Path) -> FastAPI:
    return create_app(load_config(path))
