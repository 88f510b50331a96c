"""The real servers the exporter tests push to, started and stopped by the tests within bounded time.

- `pushgateway`: Debian's prometheus-pushgateway on a free loopback port (.ci/run installs it);
- `mlflow_server`: `mlflow server` (the dev extra installs mlflow) on a sqlite file and a local artifact dir;
- `otlp_receiver`: a loopback HTTP server that decodes each OTLP/HTTP metrics request with the
  opentelemetry-proto messages (the OpenTelemetry Collector is not packaged for Debian); the SDK
  exporter that sends to it is the real one.

A missing binary skips locally and fails when CI is set, as the PostgreSQL fixtures do. Import the
fixtures into a test module: `from exporter_servers import pushgateway, mlflow_server, otlp_receiver`.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

PUSHGATEWAY = "prometheus-pushgateway"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def missing(what: str, how: str) -> None:
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"CI is set but {what} is missing: {how}")
    pytest.skip(f"{what} is not installed on this machine ({how})")


def _wait_ready(url: str, process: subprocess.Popen, seconds: float, log: Path) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}: {log.read_text(errors='replace')[-2000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as reply:
                if reply.status == 200:
                    return
        except urllib.error.HTTPError as exc:
            if exc.code == 401:  # up, and asking for the credentials it was configured with
                return
        except OSError:
            pass
        time.sleep(0.3)
    raise RuntimeError(f"server not ready at {url} after {seconds:.0f} s: {log.read_text(errors='replace')[-2000:]}")


@contextmanager
def _server(args: list[str], ready: str, seconds: float, log: Path) -> Iterator[subprocess.Popen]:
    """Start `args` in a process group of its own; stop the whole group (terminate, then kill) on exit.
    The servers' own usage reports (MLflow's telemetry) are off: tests never leave the machine."""
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "true"}
    with open(log, "wb") as out:
        process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, env=env)
    try:
        _wait_ready(ready, process, seconds, log)
        yield process
    finally:
        for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
            try:
                os.killpg(process.pid, sig)
                process.wait(timeout=wait)
                break
            except (ProcessLookupError, subprocess.TimeoutExpired):
                continue


# bcrypt of export_helpers.SECRET for the user "ci" (a test password, hashed once with crypt's blowfish)
CI_USER_HASH = "$2b$04$/Towc./eE5wO39TpVJMk4OQp.jVyLX2lvWR5ButitSVeLb445aNzK"


@contextmanager
def pushgateway_server(root: Path, *, basic_auth: bool = False) -> Iterator[str]:
    """Debian's Pushgateway on a free port; with basic_auth, only the user "ci" with export_helpers.SECRET."""
    binary = shutil.which(PUSHGATEWAY)
    if binary is None:
        missing(PUSHGATEWAY, "apt-get install -y prometheus-pushgateway; .ci/run does")
    url = f"http://127.0.0.1:{free_port()}"
    # Debian's build persists to /var/lib/prometheus by default: this one keeps its metrics in memory only
    args = [binary, f"--web.listen-address={url.removeprefix('http://')}", "--persistence.file="]
    if basic_auth:
        (root / "web.yml").write_text(f"basic_auth_users:\n  ci: {CI_USER_HASH}\n")
        args.append(f"--web.config.file={root / 'web.yml'}")
    with _server(args, f"{url}/-/ready", 30, root / "pushgateway.log"):
        yield url


@pytest.fixture(scope="module")
def pushgateway(tmp_path_factory) -> Iterator[str]:
    with pushgateway_server(tmp_path_factory.mktemp("pushgateway")) as url:
        yield url


def mlflow_binary() -> str | None:
    beside = Path(sys.executable).parent / "mlflow"
    return str(beside) if beside.is_file() else shutil.which("mlflow")


@pytest.fixture(scope="module")
def mlflow_server(tmp_path_factory) -> Iterator[str]:
    binary = mlflow_binary()
    if binary is None:
        missing("mlflow", "pip install mlflow, in the dev extra")
    root = tmp_path_factory.mktemp("mlflow")
    port = free_port()
    args = [binary, "server", "--backend-store-uri", f"sqlite:///{root / 'mlflow.db'}",
            "--artifacts-destination", str(root / "artifacts"), "--host", "127.0.0.1", "--port", str(port),
            "--workers", "1"]
    with _server(args, f"http://127.0.0.1:{port}/health", 180, root / "server.log"):
        yield f"http://127.0.0.1:{port}"


class OtlpReceiver:
    """What arrived: one decoded ExportMetricsServiceRequest per POST to /v1/metrics, with its headers."""

    def __init__(self) -> None:
        self.requests: list = []
        self.headers: list[dict[str, str]] = []  # names lower-cased
        self.url = ""

    def points(self) -> list[tuple[str, str, float, dict[str, str], dict[str, str]]]:
        """(scope, metric name, value, attributes, resource attributes) of every gauge point received."""
        out = []
        for request in self.requests:
            for rm in request.resource_metrics:
                resource = {a.key: a.value.string_value for a in rm.resource.attributes}
                for sm in rm.scope_metrics:
                    for metric in sm.metrics:
                        for point in metric.gauge.data_points:
                            value = point.as_double if point.HasField("as_double") else float(point.as_int)
                            attributes = {a.key: a.value.string_value for a in point.attributes}
                            out.append((sm.scope.name, metric.name, value, attributes, resource))
        return out


@pytest.fixture
def otlp_receiver() -> Iterator[OtlpReceiver]:
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
        ExportMetricsServiceRequest, ExportMetricsServiceResponse)

    received = OtlpReceiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 -- http.server's name
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if self.path != "/v1/metrics" or self.headers.get("Content-Type") != "application/x-protobuf":
                self.send_response(404)
                self.end_headers()
                return
            request = ExportMetricsServiceRequest()
            request.ParseFromString(body)
            received.requests.append(request)
            received.headers.append({k.lower(): v for k, v in self.headers.items()})
            reply = ExportMetricsServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    received.url = f"http://127.0.0.1:{server.server_address[1]}/v1/metrics"
    try:
        yield received
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@contextmanager
def prometheus_scraping(gateway: str, root: Path) -> Iterator[str]:
    """Debian's Prometheus server scraping `gateway` every second as docs/exporters.md says to (honor_labels),
    for the dashboard's queries. Skips locally without the package; fails in CI."""
    binary = shutil.which("prometheus")
    if binary is None:
        missing("prometheus", "apt-get install -y prometheus; .ci/run does")
    port = free_port()
    (root / "prometheus.yml").write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        "scrape_configs:\n  - job_name: pushgateway\n    honor_labels: true\n"
        f"    static_configs:\n      - targets: ['{gateway.removeprefix('http://')}']\n")
    args = [binary, f"--config.file={root / 'prometheus.yml'}", f"--storage.tsdb.path={root / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}"]
    with _server(args, f"http://127.0.0.1:{port}/-/ready", 60, root / "prometheus.log"):
        yield f"http://127.0.0.1:{port}"
