"""The command line's conventions: --version, -h, flags shown as flags, a plain progress line in CI
logs with pairs per second, a local OpenAI-compatible server without an invented key, and an
install name that is this project's."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from fakeapi import FakeAPI
from fakejudge import write_rubric

from cli_helpers import cli, jsonl

REPO = Path(__file__).resolve().parent.parent
QUERIES = [{"query_id": "q1", "text": "how to blanch spinach"}, {"query_id": "q2", "text": "bounty hunter pay"}]
CORPUS = [{"doc_id": f"d{i}", "text": f"passage {i} about spinach and bounty hunters"} for i in range(12)]




def test_version_names_this_distribution(capsys):
    from importlib.metadata import version

    for flag in ("--version", "-V"):
        code, out, _ = cli(capsys, flag)
        assert code == 0 and out.strip() == f"labeller-relevance {version('labeller-relevance')}"


def _commands():
    from typer.main import get_command

    from labeller.cli.app import app

    root = get_command(app)
    for name, command in root.commands.items():
        subcommands = getattr(command, "commands", None)
        if subcommands:
            yield from ([name, sub] for sub in subcommands)
        yield [name]


@pytest.mark.parametrize("path", list(_commands()), ids=lambda p: " ".join(p))
def test_every_help_answers_to_h_and_shows_flags_as_flags(path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    code, short, _ = cli(capsys, *path, "-h")
    assert code == 0
    code, long, _ = cli(capsys, *path, "--help")
    assert code == 0 and short == long
    assert "Usage: labeller " + " ".join(path) in short
    # typer's signature-like rendering must not come back: <bool>, <list[Path]>, {config}, <path>
    assert not re.search(r"<(bool|int|float|str|path|list\[[^\]]*\])>", short), short
    usage = next(line for line in short.splitlines() if "Usage:" in line)
    assert not re.search(r"\{[a-z_]+\}", usage), usage


def test_a_flag_has_no_value_shown_and_an_argument_reads_as_a_name(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    _, text, _ = cli(capsys, "run", "-h")
    assert "Usage: labeller run [OPTIONS] CONFIG" in text
    json_line = next(line for line in text.splitlines() if "--json" in line)
    assert "BOOL" not in json_line.upper().replace("BOOLEAN", "")
    assert re.search(r"--set\s+TEXT \(repeatable\)", text)
    _, text, _ = cli(capsys, "evaluate", "-h")
    assert re.search(r"--run\s+PATH\s+\(repeatable\)", text) or "--run" in text and "PATH" in text
    assert "METRIC=VALUE" in text  # --min


def _label_args(tmp_path: Path, server: FakeAPI) -> list[str]:
    jsonl(tmp_path / "queries.jsonl", QUERIES)
    jsonl(tmp_path / "corpus.jsonl", CORPUS)
    jsonl(tmp_path / "pairs.jsonl", [{"query_id": q["query_id"], "doc_id": d["doc_id"]} for q in QUERIES
                                     for d in CORPUS])
    write_rubric(tmp_path)
    return ["label", "--queries", "queries.jsonl", "--corpus", "corpus.jsonl", "--pairs", "pairs.jsonl",
            "--rubric", "rubric.md", "--judge", "openai:local-model", "--base-url", server.openai_url,
            "--concurrency", "2"]


def test_a_ci_log_gets_plain_progress_lines_with_pairs_per_second(tmp_path):
    """stderr is a pipe here, as in CI: no bar redraws, a plain line every LABELLER_PROGRESS_SECONDS."""
    with FakeAPI(latency=0.05) as server:
        env = {**os.environ, "LABELLER_PROGRESS_SECONDS": "0.2", "OPENAI_API_KEY": "sk-test-0123456789"}
        done = subprocess.run([sys.executable, "-m", "labeller", *_label_args(tmp_path, server)], cwd=tmp_path,
                              env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("labeller: labelling ")]
    assert len(lines) >= 2, done.stderr
    assert "\r" not in done.stderr and "\x1b[" not in done.stderr  # no terminal control in a log
    rates = [float(m.group(1)) for m in (re.search(r"([\d.]+) pairs/s", line) for line in lines) if m]
    assert rates and max(rates) > 0
    counts = [int(re.search(r"labelling (\d+)/24 pairs", line).group(1)) for line in lines]
    assert counts == sorted(counts) and counts[-1] <= 24


def test_no_progress_line_in_a_short_run(tmp_path):
    with FakeAPI(latency=0.0) as server:
        env = {**os.environ, "OPENAI_API_KEY": "sk-test-0123456789"}
        env.pop("LABELLER_PROGRESS_SECONDS", None)
        done = subprocess.run([sys.executable, "-m", "labeller", *_label_args(tmp_path, server)], cwd=tmp_path,
                              env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "labeller: labelling" not in done.stderr


def test_a_local_server_needs_no_invented_key(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeAPI() as server:
        code, _, err = cli(capsys, *_label_args(tmp_path, server))
        assert code == 0, err
        assert server.total == 24
        sent = {r.headers.get("authorization") for r in server.requests}
    assert sent == {"Bearer labeller-local-server-no-key"}


def test_openai_itself_still_needs_its_key(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeAPI() as server:
        args = _label_args(tmp_path, server)
        args[args.index("--base-url") + 1] = "https://api.openai.com/v1"
        code, _, err = cli(capsys, *args)
        assert code == 2 and "set the OPENAI_API_KEY environment variable" in err
        del args[args.index("--base-url"):args.index("--base-url") + 2]
        code, _, err = cli(capsys, *args)  # no --base-url at all
        assert code == 2 and "OPENAI_API_KEY" in err and server.total == 0


def test_the_distribution_name_is_free_of_the_other_labeller():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["name"] == "labeller-relevance"
    assert project["scripts"] == {"labeller": "labeller.cli:main"}


INSTALL = re.compile(r"pip install\s+(?:-[-\w]+\s+)*(\S+)")


@pytest.mark.parametrize("doc", ["README.md", "docs", "pipelines", "benchmarks/README.md", "gold", "rubrics"])
def test_every_install_line_installs_this_project(doc):
    """`pip install labeller` (or labeller[extra]) installs the unrelated PyPI project: never documented."""
    root = REPO / doc
    files = [root] if root.is_file() else [p for p in root.rglob("*") if p.suffix in (".md", ".yml", ".yaml")]
    for path in files:
        for target in INSTALL.findall(path.read_text(encoding="utf-8")):
            target = target.strip("\"'`")
            assert not re.fullmatch(r"labeller(\[[\w,]+\])?", target), f"{path}: pip install {target}"


def test_the_github_actions_example_installs_this_project_restores_the_cache_and_gates():
    import yaml

    workflow = yaml.safe_load((REPO / "pipelines" / "ci" / "regression.yml").read_text())
    steps = workflow["jobs"]["regression"]["steps"]
    runs = [s.get("run", "") for s in steps]
    installs = [r for r in runs if "pip install" in r]
    assert installs and all(re.search(r"pip install (-e )?\"?\.(\[\w+\])?\"?(\s|$)", r) for r in installs), installs
    assert any(s.get("uses", "").startswith("actions/checkout") for s in steps[: steps.index(
        next(s for s in steps if "pip install" in s.get("run", "")))])
    cache = next(s for s in steps if s.get("uses", "").startswith("actions/cache"))
    assert ".labeller-cache" in cache["with"]["path"] and cache["with"].get("restore-keys")
    gate = next(r for r in runs if "labeller run" in r)
    assert "--junit" in gate and "--summary" in gate and "|| true" not in gate and "continue-on-error" not in str(
        next(s for s in steps if "labeller run" in s.get("run", "")))
