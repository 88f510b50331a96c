"""Test-wide guards: no real network, no real API keys, no real model requests.

Any socket connection to an address outside 127.0.0.0/8 or ::1 fails the test. Provider
base URLs point at a closed loopback port unless a test starts its own fake server.
"""

from __future__ import annotations

import ipaddress
import socket

import pytest

_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


class RealNetworkError(RuntimeError):
    pass


def _check(address) -> None:
    if isinstance(address, (str, bytes)):  # unix socket
        return
    host = address[0]
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        if host == "localhost":
            return
        raise RealNetworkError(f"test tried to reach {host!r}: tests must not touch the network") from None
    if not ip.is_loopback:
        raise RealNetworkError(f"test tried to reach {host}: tests must not touch the network")


def _guarded_connect(self, address):
    _check(address)
    return _real_connect(self, address)


def _guarded_connect_ex(self, address):
    _check(address)
    return _real_connect_ex(self, address)


socket.socket.connect = _guarded_connect
socket.socket.connect_ex = _guarded_connect_ex


@pytest.fixture(autouse=True)
def _no_real_providers(monkeypatch, tmp_path):
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID"):
        monkeypatch.delenv(name, raising=False)
    # Port 9 (discard) on loopback is closed: an unconfigured client fails at once, and never leaves the machine.
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path.parent / "numba-cache"))
    yield



@pytest.fixture
def api():
    """A fake OpenAI/Anthropic server on loopback; faults are switched on per test."""
    from fakeapi import FakeAPI, Faults

    with FakeAPI(faults=Faults(retry_after=0.2)) as server:
        yield server


# -- PostgreSQL ---------------------------------------------------------------------------------
# The store tests run against a real server: the one .ci/run starts (LABELLER_TEST_POSTGRES), else one
# this session starts from the machine's postgresql package. In CI a missing server fails, never skips.


@pytest.fixture(scope="session")
def postgres_server():
    import os
    import tempfile
    import uuid
    from pathlib import Path

    url = os.environ.get("LABELLER_TEST_POSTGRES")
    if url:
        yield url
        return
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail("CI is set but LABELLER_TEST_POSTGRES is not: the store tests need the PostgreSQL server "
                    "that .ci/run starts")
    import pgserver

    if pgserver.find_bin() is None:
        pytest.skip("PostgreSQL is not installed on this machine (.ci/run installs and starts one)")
    root = Path(tempfile.gettempdir()) / f"labeller-test-pg-{uuid.uuid4().hex[:8]}"
    try:
        yield pgserver.start(root)
    finally:
        pgserver.stop(root)


@pytest.fixture
def postgres_url(postgres_server):
    """A URL to a fresh, empty database of its own on the test server, dropped afterwards."""
    import uuid
    from urllib.parse import urlsplit, urlunsplit

    import psycopg

    name = f"labeller_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_server, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    parts = urlsplit(postgres_server)
    yield urlunsplit((parts.scheme, parts.netloc, f"/{name}", parts.query, parts.fragment))
    with psycopg.connect(postgres_server, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture(params=["directory", "postgresql"])
def store_spec(request, tmp_path):
    """Each store test runs on both backends: a directory, and a database of its own on a real server."""
    if request.param == "directory":
        return str(tmp_path / "store")
    return request.getfixturevalue("postgres_url")
