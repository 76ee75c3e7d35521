"""`make serve` (the end of `make demo`) shows a demo user the product's own 404 page, not Django's
technical one listing every URL pattern, and still serves the CSS: DEBUG off, on plain http."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from tests.conftest import REPO, free_port
from tests.waiting import wait_for


def served_command(port: int) -> str:
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    plan = subprocess.run(
        ["make", "-n", "serve", f"PORT={port}"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    return [line for line in plan.splitlines() if "runserver" in line][-1]


def test_the_demo_server_runs_without_debug():
    command = served_command(8000)
    assert "DEBUG=0" in command and "DEBUG=1" not in command, command
    assert "runserver 127.0.0.1:8000" in command


def fetch(url: str) -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:  # noqa: S310 (our own test server)
            return response.status, response.headers.get("Content-Type", ""), response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("Content-Type", ""), error.read().decode()


def test_the_demo_serves_the_login_page_with_its_css_and_the_products_404(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DEBUG", "SECRET_KEY", "DATABASE_URL")}
    env["DATA_DIR"] = str(tmp_path)
    port = free_port()  # `make serve PORT=…`, as the README says
    demo_env = {**env, "DEBUG": "1"}  # as `make demo-data` runs
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v0"], cwd=REPO, env=demo_env, check=True)
    server = subprocess.Popen(
        [
            "bash",
            "-c",
            "exec env "
            + served_command(port)
            .replace("runserver", "runserver --noreload")
            .replace(".venv/bin/python", sys.executable),
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:

        def login_page():
            if server.poll() is not None:
                pytest.fail(f"the demo server stopped: {server.stderr.read()}")
            try:
                return fetch(f"{base}/login/")
            except OSError:
                return None

        status, _, page = wait_for("the demo's login page", login_page, 60)
        assert status == 200 and "<form" in page
        stylesheets = re.findall(r'<link rel="stylesheet" href="([^"]+)"', page)
        assert stylesheets
        for href in stylesheets:
            css_status, css_type, css = fetch(base + href)
            assert css_status == 200 and css_type.startswith("text/css") and css, href
        status, _, page = fetch(f"{base}/no-such-page/")
        assert status == 404
        assert "URL patterns" not in page and "Django tried" not in page
        assert stylesheets[0] in page  # the product's page, in its layout
    finally:
        server.terminate()
        server.wait(10)
