"""The tests' poll helper (tests/waiting.py): it returns what it waited for; its timeout says where things stood."""

from __future__ import annotations

import itertools
import time

import pytest

from tests.waiting import wait_for


def test_it_returns_the_first_value_that_holds():
    counter = itertools.count(1)
    assert wait_for("the count to reach 3", lambda: next(counter), 5, until=lambda n: n >= 3, every=0) == 3
    assert next(counter) == 4  # read no more than needed

    assert wait_for("a truthy value", iter([0, "", "ready"]).__next__, 5, every=0) == "ready"


def test_a_timeout_names_what_was_awaited_and_the_last_value_read():
    seen = []

    def status():
        seen.append(time.monotonic())
        return {"status": "running", "jobs_done": len(seen)}

    started = time.monotonic()
    with pytest.raises(pytest.fail.Exception) as failure:
        wait_for("the import to finish", status, 0.2, until=lambda s: s["status"] == "succeeded", every=0.05)
    message = str(failure.value)
    assert message.startswith("timed out after 0.2 s waiting for the import to finish; last seen: ")
    assert repr({"status": "running", "jobs_done": len(seen)}) in message
    assert seen[-1] - started >= 0.2  # a last look once the time was up
    assert 2 < len(seen) < 20


def test_a_long_last_value_is_cut_short():
    with pytest.raises(pytest.fail.Exception) as failure:
        wait_for("a short page", lambda: "x" * 10_000, 0, until=lambda page: len(page) < 10)
    assert str(failure.value).endswith("x" * 100 + "…") and len(str(failure.value)) < 600


def test_a_timeout_can_tell_more():
    with pytest.raises(pytest.fail.Exception) as failure:
        wait_for("the server to scrape", dict, 0, detail=lambda: "server.log:\nlevel=error msg=refused")
    assert str(failure.value) == (
        "timed out after 0 s waiting for the server to scrape; last seen: {}\nserver.log:\nlevel=error msg=refused"
    )
