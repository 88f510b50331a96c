"""The exporter interface itself: any job's `--json` as a batch (outcome rates included), targets whose
credentials never show, JSON pointers, and a backend whose extra is not installed (exit 2 before the job)."""

from __future__ import annotations

import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from export_helpers import SECRET
from exporter_servers import pushgateway  # noqa: F401 -- fixture
from labeller.errors import ConfigError
from labeller.exporters import ExportBatch, RunLabels, export_settings, parse_target, prepare, push
from labeller.exporters.batches import figures_at, gate_at, pointer, resolve

REPO = Path(__file__).resolve().parents[1]


def test_any_jobs_json_exports_through_the_same_interface_outcome_rates_included(pushgateway):  # noqa: F811
    """What the downstream-outcomes job does with its own --json: pick its figures, push them."""
    data = {"outcome_rate": {"retrieval_succeeded": 0.91, "retrieval_failed": 0.35, "undefined": None},
            "predictors": {"ndcg@10": 0.83}, "gate": {"passed": False}}
    batch = ExportBatch(labels=RunLabels(pipeline="outcomes", retriever="bm25", judge="offline:lexical"),
                        figures=[*figures_at(data, ("outcome_rate",), "outcome"),
                                 *figures_at(data, ("predictors",), "metric", prefix="auc_"),
                                 *gate_at(data, ("gate", "passed"), "downstream")])
    said: list[str] = []
    assert push(batch, prepare(export_settings([f"prometheus={pushgateway}"])), said.append) == []
    assert said == [f"exported 4 figures to prometheus={pushgateway}: job labeller, pipeline=outcomes, retriever=bm25"]
    with urllib.request.urlopen(f"{pushgateway}/metrics", timeout=10) as reply:
        text = reply.read().decode()
    lines = [line for line in text.splitlines() if 'pipeline="outcomes"' in line]
    assert any(line.startswith("labeller_outcome_rate{") and 'name="retrieval_succeeded"' in line
               and line.endswith(" 0.91") for line in lines), lines
    assert any('name="auc_ndcg@10"' in line and line.endswith(" 0.83") for line in lines), lines
    assert any(line.startswith("labeller_gate_passed{") and line.endswith(" 0") for line in lines), lines
    assert not any('name="undefined"' in line for line in lines)  # null in the JSON: not a figure


def test_a_url_with_credentials_keeps_them_apart_and_never_shows_them():
    target = parse_target(f"MLflow=https://ci:{SECRET}@tracking.example:5000/base/?x=1")
    assert (target.backend, target.url) == ("mlflow", "https://tracking.example:5000/base?x=1")
    assert target.password.get_secret_value() == SECRET and target.username.get_secret_value() == "ci"
    assert SECRET not in target.spec + repr(target) + str(target)
    token = parse_target("otlp=http://127.0.0.1:4318/v1/metrics?api-key=TOKEN42")
    assert "TOKEN42" not in token.spec
    for bad in (f"prometheus=http://ci:{SECRET}@[::1", f"otlp=http://ci:{SECRET}@h:4318/#frag"):
        with pytest.raises(ConfigError) as err:
            parse_target(bad)
        assert SECRET not in str(err.value)


def test_the_same_target_from_the_config_and_the_command_line_is_pushed_to_once():
    settings = export_settings(["prometheus=http://h:9091", "mlflow=http://h:5000", "prometheus=http://h:9091/",
                                "PROMETHEUS=http://h:9091"], "nightly", 5)
    assert [t.spec for t in settings.targets] == ["prometheus=http://h:9091", "mlflow=http://h:5000"]
    assert (settings.experiment, settings.timeout) == ("nightly", 5)


@pytest.mark.parametrize("key", ["ndcg@10", "a/b", "x~y", "run 1.trec"])
def test_pointers_name_keys_with_slashes_and_tildes(key):
    data = {"runs": {key: {"metrics": {"m": 0.5}}}, "list": [{key: 1}]}
    assert resolve(data, pointer("runs", key, "metrics", "m")) == 0.5
    assert resolve(data, pointer("list", 0, key)) == 1


def test_a_backend_whose_extra_is_missing_is_exit_2_before_the_job_runs(tmp_path):
    """A Python without prometheus_client (an import blocker stands in for an install without the extra)."""
    blocker = ("import sys, importlib.abc\n"
               "class Block(importlib.abc.MetaPathFinder):\n"
               "    def find_spec(self, name, path, target=None):\n"
               "        if name.split('.')[0] == 'prometheus_client':\n"
               "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
               "sys.meta_path.insert(0, Block())\n"
               "from labeller.cli import main\n"
               "main()\n")
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d1 1 1.0 x\n")
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\n")
    done = subprocess.run([sys.executable, "-c", blocker, "evaluate", "--run", str(run), "--labels",
                           str(tmp_path / "qrels.txt"), "--report", str(tmp_path / "rep"),
                           "--export", "prometheus=http://127.0.0.1:9"],
                          capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == ("labeller: error: --export prometheus needs its client library "
                                   "(prometheus_client): pip install 'labeller-relevance[prometheus]'")
    assert done.stdout == "" and not (tmp_path / "rep").exists()


def test_a_notebook_exports_an_in_memory_result_as_the_command_line_does(pushgateway):  # noqa: F811
    import pandas as pd

    import labeller
    from labeller.errors import ExportError

    labels = pd.DataFrame({"query_id": ["q1", "q1", "q2"], "doc_id": ["a", "b", "c"], "grade": [5, 1, 4]})
    result = labeller.evaluate(labels, {"q1": {"a": 2.0, "b": 1.0}, "q2": {"c": 1.0}}, "ndcg@10")
    said = labeller.export(result, to=f"prometheus={pushgateway}", experiment="notebook")
    assert said == [f"exported 2 figures to prometheus={pushgateway}: job notebook, pipeline=evaluate, "
                    f"retriever={result.run}"]
    with urllib.request.urlopen(f"{pushgateway}/metrics", timeout=10) as reply:
        lines = [x for x in reply.read().decode().splitlines() if 'job="notebook"' in x and 'name="ndcg@10"' in x]
    assert len(lines) == 1 and float(lines[0].rsplit(" ", 1)[1]) == result.metrics["ndcg@10"] == 1.0
    with pytest.raises(ExportError, match="connection refused"):
        labeller.export(result, to="prometheus=http://127.0.0.1:9")
    with pytest.raises(TypeError, match="not dict"):
        labeller.export({"ndcg@10": 1.0}, to=f"prometheus={pushgateway}")
