import socket

import pytest

from conftest import RealNetworkError


def test_guard_blocks_real_network():
    with pytest.raises(RealNetworkError):
        socket.create_connection(("203.0.113.7", 443), timeout=0.1)


def test_guard_allows_loopback():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    client = socket.create_connection(server.getsockname(), timeout=1)
    client.close()
    server.close()
