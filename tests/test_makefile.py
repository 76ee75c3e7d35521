"""The Makefile's targets as README's "Two commands" promise them."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.conftest import REPO


def planned(*args: str) -> str:
    """What `make` would run (`-n`: printed, not run)."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    return subprocess.run(["make", "-n", *args], cwd=REPO, capture_output=True, text=True, check=True).stdout


def test_make_demo_serves_on_the_port_asked_for():
    """`make demo` always served on 127.0.0.1:8000: with that port taken (another service, a second
    checkout) runserver stopped with 'That port is already in use' after the whole demo was built."""
    assert "runserver 127.0.0.1:8000" in planned("serve")
    for target in ("serve", "demo"):
        plan = planned(target, "PORT=8123")
        assert "runserver 127.0.0.1:8123" in plan and "http://127.0.0.1:8123/" in plan, plan


def test_make_demo_s_links_in_mails_and_printed_pages_lead_to_the_port_it_serves_on():
    """`make demo PORT=8123` served on 8123, but the links it printed (an import's run page) and those in
    the digests previewed and mailed went to PUBLIC_BASE_URL's default, 127.0.0.1:8000: nothing there, or
    another checkout's demo. The demo's commands get the port as PUBLIC_BASE_URL, unless one is set."""
    for target in ("serve", "demo"):
        plan = planned(target, "PORT=8123")
        commands = [line for line in plan.splitlines() if "manage.py" in line]
        assert commands and all(
            "PUBLIC_BASE_URL=${PUBLIC_BASE_URL:-http://127.0.0.1:8123}" in line for line in commands
        ), plan
    assert "PUBLIC_BASE_URL=${PUBLIC_BASE_URL:-http://127.0.0.1:8000}" in planned("serve")
