"""The tests' stand-in platform (tests/connector_servers.py) itself: a fault that keeps a client waiting must not
outlive the test that asked for it."""

from __future__ import annotations

import http.client

import pytest

from tests.connector_servers import TIMEOUT_SLEEP_S, FakePlatform


def get(server: FakePlatform, path: str, timeout: float) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", server.httpd.server_address[1], timeout=timeout)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def test_a_timeout_fault_ends_when_the_server_stops():
    """The "timeout" fault answers after the client gave up. It slept TIMEOUT_SLEEP_S on its request's thread
    whatever happened, so a test that stopped its server went on with a thread still sleeping behind it; it
    now waits on the server's `closing` and ends with it."""
    with FakePlatform() as server:
        server.route("/jobs", lambda path, query: (200, {"jobs": []}, {}))
        server.fault("/jobs", "timeout")
        with pytest.raises(TimeoutError):
            get(server, "/jobs", timeout=0.2)
    assert server.handlers_left(within=TIMEOUT_SLEEP_S / 5) == []
    assert server.count("/jobs", "timeout") == 1


def test_a_timeout_fault_still_answers_late_while_the_server_runs():
    """Within the test the fault is what it was: the answer comes, after the client's timeout."""
    with FakePlatform() as server:
        server.route("/jobs", lambda path, query: (200, {"jobs": []}, {}))
        server.fault("/jobs", "timeout")
        assert get(server, "/jobs", timeout=TIMEOUT_SLEEP_S + 5) == (200, b'{"jobs": []}')
