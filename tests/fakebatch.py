"""The batch half of the fake API (tests/fakeapi.py registers these routes on the same server).

OpenAI:    POST /v1/files (multipart, purpose=batch), GET /v1/files/{id}, GET /v1/files/{id}/content,
           POST /v1/batches, GET /v1/batches, GET /v1/batches/{id}, POST /v1/batches/{id}/cancel.
Anthropic: POST /v1/messages/batches, GET /v1/messages/batches, GET /v1/messages/batches/{id},
           GET /v1/messages/batches/{id}/results, POST /v1/messages/batches/{id}/cancel.

A batch is answered when it is created, request by request, with the same replies and faults as the
synchronous endpoints (the fault script, the seeded random faults, `poison`), plus `expired`: a
request the provider never ran (the `batch_expire` probability, or the kind "expired"). Its results
become visible `batch_delay` seconds later; until then it is in progress. A cancelled batch ends
with every request cancelled. Each input line is counted in `batched[custom_id]`, so a test sees a
pair submitted twice. Limits (`openai_limits`, `anthropic_limits`: requests, bytes) are enforced
like the real services: a batch over either is refused with HTTP 400.
"""

from __future__ import annotations

import json
import time
from functools import partial
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from aiohttp import web

if TYPE_CHECKING:
    from fakeapi import FakeAPI

HTTP_ERRORS = {"429", "500", "529", "400", "401", "404"}


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).isoformat().replace("+00:00", "Z")


class FakeBatches:
    def __init__(self, api: FakeAPI) -> None:
        self.api = api
        self.files: dict[str, dict[str, Any]] = {}
        self.openai: dict[str, dict[str, Any]] = {}
        self.anthropic: dict[str, dict[str, Any]] = {}
        self.serial = 0

    def routes(self, app: web.Application) -> None:
        add = app.router
        add.add_post("/v1/files", self.upload)
        add.add_get("/v1/files/{id}", self.file_info)
        add.add_get("/v1/files/{id}/content", self.file_content)
        add.add_post("/v1/batches", self.openai_create)
        add.add_get("/v1/batches", self.openai_list)
        add.add_get("/v1/batches/{id}", partial(self.retrieve, anthropic=False))
        add.add_post("/v1/batches/{id}/cancel", partial(self.retrieve, anthropic=False, cancel=True))
        add.add_post("/v1/messages/batches", self.anthropic_create)
        add.add_get("/v1/messages/batches", self.anthropic_list)
        add.add_get("/v1/messages/batches/{id}", partial(self.retrieve, anthropic=True))
        add.add_get("/v1/messages/batches/{id}/results", self.anthropic_results)
        add.add_post("/v1/messages/batches/{id}/cancel", partial(self.retrieve, anthropic=True, cancel=True))

    def _id(self, prefix: str) -> str:
        self.serial += 1
        return f"{prefix}{self.serial:06d}"

    async def _enter(self, request: web.Request, anthropic: bool) -> web.Response | None:
        """Count the call, check the key; an error response when one is due."""
        api = self.api
        from fakeapi import key_header_value

        with api._lock:
            api.counts[request.path] += 1
            status = api.batch_script.pop(0) if api.batch_script else None
        key = key_header_value(request, "x-api-key" if anthropic else "authorization")
        if api.api_key is not None and key != api.api_key:
            status = 401
        if status is not None:
            return api._error(str(status), anthropic=anthropic)
        return None

    def _answer(self, custom_id: str, body: dict[str, Any], anthropic: bool) -> tuple[str, dict[str, Any] | None]:
        """(kind, reply body) for one request of a batch, as the synchronous endpoint would answer."""
        api = self.api
        with api._lock:
            api.batched[custom_id] += 1
            expire = api._rng.random() < api.batch_expire
        kind = "expired" if expire else api._next_kind()
        text = json.dumps(body, ensure_ascii=False) if api.poison else ""
        kind = next((bad for marker, bad in api.poison.items() if marker in text), kind)
        with api._lock:
            api.answers[kind] += 1
        if kind == "expired" or kind in HTTP_ERRORS or kind == "drop":
            return kind, None
        return kind, (api._anthropic_reply(body, kind) if anthropic else api._openai_reply(body, kind))

    @staticmethod
    def _refuse(message: str, anthropic: bool) -> web.Response:
        payload = ({"type": "error", "error": {"type": "invalid_request_error", "message": message}} if anthropic
                   else {"error": {"message": message, "type": "invalid_request_error", "code": None}})
        return web.json_response(payload, status=400)

    def _lines(self, rows: list[dict[str, Any]]) -> str:
        """A results file; its first `batch_damage` lines cut in half (a damaged download or disk)."""
        lines = [json.dumps(row, ensure_ascii=False) for row in rows]
        for i in range(min(self.api.batch_damage, len(lines))):
            lines[i] = lines[i][:len(lines[i]) // 2]
        return "".join(line + "\n" for line in lines)

    def _ended(self, batch: dict[str, Any]) -> bool:
        return batch["cancelled"] or time.time() >= batch["ready_at"]

    async def retrieve(self, request: web.Request, *, anthropic: bool, cancel: bool = False) -> web.StreamResponse:
        """GET a batch of either API, or POST .../cancel: a batch not yet ended ends with every request cancelled."""
        if (refused := await self._enter(request, anthropic)) is not None:
            return refused
        batch_id = request.match_info["id"]
        batch = (self.anthropic if anthropic else self.openai).get(batch_id)
        if batch is None:
            return self.api._error("404", anthropic=anthropic)
        if cancel and not self._ended(batch):
            batch["cancelled"], batch["cancel_at"] = True, _iso(time.time())
        return web.json_response(self._anthropic_view(batch_id) if anthropic else self._openai_view(batch_id))

    # ---- OpenAI files ---------------------------------------------------------------------------
    async def upload(self, request: web.Request) -> web.StreamResponse:
        if (refused := await self._enter(request, False)) is not None:
            return refused
        form = await request.post()
        upload, purpose = form.get("file"), form.get("purpose")
        if upload is None or not hasattr(upload, "file") or purpose != "batch":
            return self._refuse("expected a multipart 'file' and purpose=batch", False)
        data = upload.file.read()
        return web.json_response(self._store_file(data, upload.filename or "input.jsonl", "batch"))

    def _store_file(self, data: bytes, filename: str, purpose: str) -> dict[str, Any]:
        file_id = self._id("file-")
        info = {"id": file_id, "object": "file", "bytes": len(data), "created_at": int(time.time()),
                "filename": filename, "purpose": purpose, "status": "processed"}
        self.files[file_id] = {"info": info, "data": data}
        return info

    async def file_info(self, request: web.Request) -> web.StreamResponse:
        if (refused := await self._enter(request, False)) is not None:
            return refused
        found = self.files.get(request.match_info["id"])
        return web.json_response(found["info"]) if found else self.api._error("404", anthropic=False)

    async def file_content(self, request: web.Request) -> web.StreamResponse:
        if (refused := await self._enter(request, False)) is not None:
            return refused
        found = self.files.get(request.match_info["id"])
        if not found:
            return self.api._error("404", anthropic=False)
        return web.Response(body=found["data"], content_type="application/octet-stream")

    # ---- OpenAI batches -------------------------------------------------------------------------
    async def openai_create(self, request: web.Request) -> web.StreamResponse:
        if (refused := await self._enter(request, False)) is not None:
            return refused
        body = await request.json()
        found = self.files.get(body.get("input_file_id", ""))
        if not found:
            return self._refuse("input_file_id names no uploaded file", False)
        endpoint = body.get("endpoint")
        max_requests, max_bytes = self.api.openai_limits
        lines = found["data"].splitlines()
        if len(lines) > max_requests or len(found["data"]) > max_bytes:
            return self._refuse(f"batch over the limit of {max_requests} requests or {max_bytes} bytes", False)
        rows = [json.loads(line) for line in lines if line.strip()]
        ids = [row.get("custom_id") for row in rows]
        if len(set(ids)) != len(ids) or any(row.get("url") != endpoint or row.get("method") != "POST" for row in rows):
            return self._refuse("custom_id must be unique; every line must POST to the batch endpoint", False)
        out, err, completed, failed, expired = [], [], 0, 0, False
        for row in rows:
            kind, reply = self._answer(row["custom_id"], row.get("body") or {}, False)
            line = {"id": self._id("batch_req_"), "custom_id": row["custom_id"], "response": None, "error": None}
            if kind == "expired":
                expired = True
                line["error"] = {"code": "batch_expired",
                                 "message": "This request could not be executed before the completion window expired."}
            elif reply is None:
                status = 500 if kind == "drop" else int(kind)
                line["response"] = {"status_code": status, "request_id": self._id("req_"),
                                    "body": {"error": {"message": f"fake error {status}", "type": "api_error"}}}
            else:
                line["response"] = {"status_code": 200, "request_id": self._id("req_"), "body": reply}
                out.append(line)
                completed += 1
                continue
            err.append(line)
            failed += 1
        now = time.time()
        batch_id = self._id("batch_")
        self.openai[batch_id] = {
            "object": {"id": batch_id, "object": "batch", "endpoint": endpoint, "errors": None,
                       "input_file_id": found["info"]["id"], "completion_window": body.get("completion_window"),
                       "status": "in_progress", "created_at": int(now), "in_progress_at": int(now),
                       "expires_at": int(now + 86400), "metadata": body.get("metadata"),
                       "request_counts": {"total": len(rows), "completed": 0, "failed": 0}},
            "out": out, "err": err, "counts": (completed, failed), "expired": expired,
            "ready_at": now + self.api.batch_delay, "cancelled": False,
        }
        return web.json_response(self._openai_view(batch_id))

    def _openai_view(self, batch_id: str) -> dict[str, Any]:
        batch = self.openai[batch_id]
        view = dict(batch["object"])
        if not self._ended(batch):
            return view
        if "final" not in batch:  # results are written once, when the batch ends
            if batch["cancelled"]:
                view.update(status="cancelled", cancelled_at=int(time.time()),
                            request_counts={"total": view["request_counts"]["total"], "completed": 0, "failed": 0})
            else:
                completed, failed = batch["counts"]
                view.update(status="expired" if batch["expired"] else "completed", completed_at=int(time.time()),
                            request_counts={"total": completed + failed, "completed": completed, "failed": failed})
                for name, rows in (("output_file_id", batch["out"]), ("error_file_id", batch["err"])):
                    if rows:
                        data = self._lines(rows).encode("utf-8")
                        view[name] = self._store_file(data, f"{batch_id}_{name}.jsonl", "batch_output")["id"]
            batch["final"] = view
        return batch["final"]

    async def openai_list(self, request: web.Request) -> web.StreamResponse:
        if (refused := await self._enter(request, False)) is not None:
            return refused
        return web.json_response(self._page([self._openai_view(i) for i in reversed(self.openai)], request,
                                            "after", object_list=True))

    @staticmethod
    def _page(items: list[dict[str, Any]], request: web.Request, cursor: str, object_list: bool) -> dict[str, Any]:
        after = request.query.get(cursor)
        limit = int(request.query.get("limit", "20"))
        if after:
            ids = [item["id"] for item in items]
            items = items[ids.index(after) + 1:] if after in ids else []
        page = items[:limit]
        out = {"data": page, "has_more": len(items) > limit, "first_id": page[0]["id"] if page else None,
               "last_id": page[-1]["id"] if page else None}
        if object_list:
            out["object"] = "list"
        return out

    # ---- Anthropic message batches --------------------------------------------------------------
    async def anthropic_create(self, request: web.Request) -> web.StreamResponse:
        if (refused := await self._enter(request, True)) is not None:
            return refused
        raw = await request.read()
        body = json.loads(raw)
        requests = body.get("requests") or []
        max_requests, max_bytes = self.api.anthropic_limits
        if len(requests) > max_requests or len(raw) > max_bytes:
            return self._refuse(f"batch over the limit of {max_requests} requests or {max_bytes} bytes", True)
        ids = [r.get("custom_id") for r in requests]
        if not requests or len(set(ids)) != len(ids):
            return self._refuse("requests must be a non-empty list with unique custom_id", True)
        results = []
        for item in requests:
            kind, reply = self._answer(item["custom_id"], item.get("params") or {}, True)
            if kind == "expired":
                result: dict[str, Any] = {"type": "expired"}
            elif reply is None:
                result = {"type": "errored", "error": {"type": "error", "request_id": self._id("req_"),
                                                       "error": {"type": "api_error", "message": f"fake error {kind}"}}}
            else:
                result = {"type": "succeeded", "message": reply}
            results.append({"custom_id": item["custom_id"], "result": result})
        now = time.time()
        batch_id = self._id("msgbatch_")
        self.anthropic[batch_id] = {"results": results, "created_at": now, "ready_at": now + self.api.batch_delay,
                                    "cancelled": False, "cancel_at": None}
        return web.json_response(self._anthropic_view(batch_id))

    def _anthropic_view(self, batch_id: str) -> dict[str, Any]:
        batch = self.anthropic[batch_id]
        ended = self._ended(batch)
        counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        if not ended:
            counts["processing"] = len(batch["results"])
        else:
            if batch["cancelled"]:
                for row in batch["results"]:
                    row["result"] = {"type": "canceled"}
            for row in batch["results"]:
                counts[row["result"]["type"]] += 1
        return {"id": batch_id, "type": "message_batch", "processing_status": "ended" if ended else "in_progress",
                "request_counts": counts, "created_at": _iso(batch["created_at"]),
                "expires_at": _iso(batch["created_at"] + 86400), "archived_at": None,
                "ended_at": _iso(time.time()) if ended else None, "cancel_initiated_at": batch["cancel_at"],
                "results_url": f"{self.api.url}/v1/messages/batches/{batch_id}/results" if ended else None}

    async def anthropic_results(self, request: web.Request) -> web.StreamResponse:
        if (refused := await self._enter(request, True)) is not None:
            return refused
        batch_id = request.match_info["id"]
        batch = self.anthropic.get(batch_id)
        if batch is None or not self._ended(batch):
            return self.api._error("404", anthropic=True)
        self._anthropic_view(batch_id)
        data = self._lines(batch["results"])
        return web.Response(body=data.encode("utf-8"), content_type="application/binary")

    async def anthropic_list(self, request: web.Request) -> web.StreamResponse:
        if (refused := await self._enter(request, True)) is not None:
            return refused
        views = [self._anthropic_view(i) for i in reversed(self.anthropic)]
        return web.json_response(self._page(views, request, "after_id", object_list=False))
