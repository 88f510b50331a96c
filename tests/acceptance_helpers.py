"""Suites, ACLs and candidate files for the acceptance tests (written into a test's tmp_path)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

from acceptance_kb import ACL

HERE = Path(__file__).resolve().parent
THRESHOLDS = {"evidence_coverage": 1.0, "answerable": 1.0, "no_answer": 1.0, "access_denied": 1.0,
              "metrics": {"ndcg@5": 0.9}}


def case_text(id, query, user, groups, expected, split="held_out", reviewer="rita", evidence=None) -> str:
    """One [[cases]] block as a suite author writes it (held-out cases reviewed 2026-11-20)."""
    text = (f'\n[[cases]]\nid = "{id}"\nquery = "{query}"\nidentity = {{ user = "{user}", groups = '
            f'{json.dumps(groups)} }}\nexpected = "{expected}"\nsplit = "{split}"\nreviewer = "{reviewer}"\n')
    text += 'reviewed_at = "2026-11-20"\n' if split == "held_out" else ""
    if evidence:
        doc, revision = evidence
        text += f'[[cases.evidence]]\ndoc_id = "{doc}"\nsource_uri = "kb://{doc}"\nrevision = "{revision}"\n'
    return text


CASES = "".join([
    case_text("c1", "kite couriers invoice", "alice", ["finance"], "answerable", evidence=("inv-1", "r2")),
    case_text("c2", "toner invoice", "alice", ["finance"], "answerable", evidence=("inv-2", "r1")),
    case_text("c3", "zebra migration", "alice", ["finance"], "no_answer"),
    case_text("c4", "salary review", "bob", ["sales"], "access_denied"),
    case_text("t1", "holiday calendar", "bob", [], "answerable", split="tuning", reviewer="sam"),
])


def toml_value(value) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f'"{k}" = {toml_value(v)}' for k, v in value.items()) + " }"
    return json.dumps(value)


def write_suite(root: Path, thresholds: dict | None = None, *, workload: str = "warmup = 1\nconcurrency = 2",
                access: str = 'acl = "acl.jsonl"', cases: str = CASES, extra: str = "", unit: str = "document",
                name: str = "suite.toml") -> Path:
    limits = {**THRESHOLDS, **(thresholds or {})}
    limits = {k: v for k, v in limits.items() if v is not None}
    (root / "acl.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ACL), encoding="utf-8")
    text = (f'[suite]\nname = "kb-release"\nversion = "1"\nretrieval_unit = "{unit}"\nk = 5\n\n'
            '[thresholds]\napproved_by = "priya"\napproved_at = "2026-11-25"\n'
            + "".join(f"{k} = {toml_value(v)}\n" for k, v in limits.items())
            + '\n[conditions]\ncorpus_snapshot = "kb-2026-11-30"\nevaluation_budget = "no judge calls"\n'
            f'[conditions.workload]\n{workload}\n' + (f"\n[access]\n{access}\n" if access else "") + extra + cases)
    path = root / name
    path.write_text(text, encoding="utf-8")
    return path


def write_candidate(root: Path, name: str, kind: str, system: dict, *, hook: dict | None = None,
                    extra: str = "") -> Path:
    lines = [f'name = "{name}"', f'kind = "{kind}"', extra, "[configuration]", 'index = "kb-2026-11-30"',
             "[system]"] + [f"{k} = {toml_value(v)}" for k, v in system.items()]
    if hook:
        lines += ["[change_hook]"] + [f"{k} = {toml_value(v)}" for k, v in hook.items()]
    path = root / f"{name}.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class McpHttpServer:
    """tests/mcp_kb_server.py over streamable HTTP on 127.0.0.1, as a real subprocess."""

    def __init__(self, *faults: str, env: dict | None = None):
        import os

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.proc = subprocess.Popen([sys.executable, str(HERE / "mcp_kb_server.py"), "http", str(self.port), *faults],
                                     env={**os.environ, **(env or {})}, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)

    def __enter__(self) -> McpHttpServer:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return self
            except OSError:
                time.sleep(0.1)
        self.proc.kill()
        raise RuntimeError("the MCP test server did not start")

    def __exit__(self, *exc) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


def citing_grounder(rows):
    """An answer judge for the CLI's --grounding: an answer citing a document it retrieved is grounded."""
    return [{"query_id": r.query_id, "groundedness": float(bool(r.citations) and r.citations[0] in r.returned),
             "attribution": "correct"} for r in rows]
