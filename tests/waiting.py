"""Waiting for what another process or thread does (a worker, a server, a browser): poll until it holds.

    run = wait_for("the import to finish", lambda: IngestRun.objects.get(pk=pk), 180, until=lambda r: r.is_finished)

`read` is called until `until` holds of what it returns (by default: until it is truthy), and that value is
returned. Past the deadline the test fails, naming what it waited for and the last value read, so a
timeout in CI says where things stood rather than only that they did not get there. Read something that
says where things stand (a run's status, a page's JSON), not a bare True/False, where it is cheap.
A fixed sleep is for waiting out a time the code under test must let pass, never for something to happen.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import pytest

T = TypeVar("T")

LAST_VALUE_CHARS = 500  # of the last value's repr in the failure message (a page's JSON can be long)


def wait_for(
    what: str,
    read: Callable[[], T],
    seconds: float = 60,
    *,
    until: Callable[[T], object] = bool,
    every: float = 0.05,
    detail: Callable[[], str] | None = None,
) -> T:
    """The first value `read()` returns of which `until` holds, reading every `every` s; the test fails after
    `seconds` saying it waited for `what` and what `read()` gave last. `read` runs at least once, and once more
    after the deadline has passed (a last look, so a slow read does not cost the wait its final chance).
    `detail`, on a timeout: more to tell, on lines of its own (the tail of a server's log)."""
    deadline = time.monotonic() + seconds
    while True:
        past_deadline = time.monotonic() >= deadline
        value = read()
        if until(value):
            return value
        if past_deadline:
            last = repr(value)
            if len(last) > LAST_VALUE_CHARS:
                last = last[:LAST_VALUE_CHARS] + "…"
            more = f"\n{detail()}" if detail else ""
            pytest.fail(f"timed out after {seconds:g} s waiting for {what}; last seen: {last}{more}")
        time.sleep(every)
