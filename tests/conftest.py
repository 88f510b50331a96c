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
