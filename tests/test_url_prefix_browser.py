"""The product under a path prefix in a real headless Chromium, behind a reverse proxy that does what
README's nginx snippet does (`location /triage/ { proxy_pass http://127.0.0.1:8000/; }`): an operator
logs in at /triage/login/, uploads an archive (the page's XMLHttpRequest, then the run page polling its
status while it runs) and opens an imported job's page (its timeline fetched as JSON). Every request the browser
makes goes under /triage/ and none fails; the proxy answers 404 to any other address, as a proxy
in front of other applications would.
"""

from __future__ import annotations

import http.client
from urllib.parse import urlsplit

import pytest

from config.url_prefix import prefix_settings
from fleet.models import Job
from tests.conftest import EXAMPLE_ARCHIVE
from tests.loopback import LoopbackServer
from tests.test_browser import STALE, browser  # noqa: F401  (the browser fixture)
from tests.test_dashboard_browser import console_errors
from tests.test_upload_browser import PASSWORD, SHOTS, finished_run_page, upload

PREFIX = "/triage"
HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "content-length"}


class PrefixProxy(LoopbackServer):
    """Passes requests under PREFIX on to `upstream` with the prefix taken off the path; answers 404 to
    any other. `seen` is (method, path as the browser asked, status) for every request."""

    protocol_version = "HTTP/1.1"

    def __init__(self, upstream: str):
        super().__init__()
        self.upstream = urlsplit(upstream)
        self.seen: list[tuple[str, str, int]] = []

    def handle(self, request) -> None:
        if not request.path.startswith(f"{PREFIX}/"):
            self.seen.append((request.command, request.path, 404))
            self._answer(request, 404, [], b"not under the prefix")
            return
        length = int(request.headers.get("Content-Length") or 0)
        body = request.rfile.read(length) if length else None
        headers = {name: value for name, value in request.headers.items() if name.lower() not in HOP_BY_HOP}
        if body is not None:
            headers["Content-Length"] = str(len(body))
        upstream = http.client.HTTPConnection(self.upstream.hostname, self.upstream.port, timeout=60)
        try:
            upstream.request(request.command, request.path.removeprefix(PREFIX), body=body, headers=headers)
            answer = upstream.getresponse()
            content = answer.read()
        finally:
            upstream.close()
        self.seen.append((request.command, request.path, answer.status))
        self._answer(request, answer.status, answer.getheaders(), content)

    @staticmethod
    def _answer(request, status: int, headers, content: bytes) -> None:
        request.send_response(status)
        for name, value in headers:
            if name.lower() not in HOP_BY_HOP:
                request.send_header(name, value)
        request.send_header("Content-Length", str(len(content)))
        request.end_headers()
        if request.command != "HEAD":
            request.wfile.write(content)


@pytest.fixture
def served_as_in_production(live_server, settings):
    """The live server under URL_PREFIX, running the application as gunicorn does (config.wsgi: Django's
    handler, WhiteNoise serving the static files), built under the prefix's settings. The live server's
    own static files handler, made once for the session without a prefix, is set aside meanwhile: it
    would take the proxied /static/ addresses and look them up by the prefixed path."""
    from django.core.handlers.wsgi import WSGIHandler

    for name, value in prefix_settings(PREFIX).items():
        setattr(settings, name, value)
    server = live_server.thread.httpd
    usual = server.get_app()
    server.set_app(WSGIHandler())
    yield live_server
    server.set_app(usual)


@pytest.mark.django_db(transaction=True)
def test_an_operator_uploads_and_reads_a_job_under_the_prefix(browser, served_as_in_production, operator, upload_dirs):  # noqa: F811
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.wait import WebDriverWait

    live_server = served_as_in_production
    operator.set_password(PASSWORD)
    operator.save()
    with PrefixProxy(live_server.url) as proxy:
        base = f"{proxy.url}{PREFIX}"
        # Another Django application served at the host's root left its login and CSRF cookies, path /:
        # the browser sends them to /triage/ too, after ours, and Django reads the last of a name.
        for name in ("sessionid", "csrftoken"):
            cookie = {"name": name, "value": "another-applications", "url": f"{proxy.url}/", "path": "/"}
            browser.execute_cdp_cmd("Network.setCookie", cookie)
        browser.get(f"{base}/jobs/")
        assert browser.current_url == f"{base}/login/?next={PREFIX}/jobs/"
        browser.find_element(By.ID, "id_username").send_keys(operator.username)
        browser.find_element(By.ID, "id_password").send_keys(PASSWORD)
        browser.find_element(By.CSS_SELECTOR, "button[type=submit].primary").click()
        WebDriverWait(browser, 10, ignored_exceptions=STALE).until(lambda b: b.current_url == f"{base}/jobs/")
        # The stylesheet came through the prefix: the top bar is dark, not the browser's default.
        bar = browser.find_element(By.CSS_SELECTOR, ".topbar").value_of_css_property("background-color")
        assert bar == "rgba(29, 35, 48, 1)", proxy.seen

        run_id, seen = upload(browser, base, EXAMPLE_ARCHIVE)
        assert seen and seen[-1]["percent"] == "100 %", seen  # the upload's progress, from its XMLHttpRequest
        assert finished_run_page(browser, "Succeeded")["created"] > 0
        assert browser.current_url == f"{base}/ingest-runs/{run_id}/"
        # The upload went by the page's XMLHttpRequest to the form's address, under the prefix (the run,
        # imported in a thread here, may be over before its page polls its status).
        assert ("POST", f"{PREFIX}/ingest-runs/upload/", 202) in proxy.seen, proxy.seen

        job = Job.objects.order_by("pk").first()
        browser.get(f"{base}/jobs/{job.pk}/")
        WebDriverWait(browser, 20).until(
            lambda b: b.execute_script("return document.getElementById('timeline').dataset.ready === '1'")
        )
        assert ("GET", f"{PREFIX}/jobs/{job.pk}/timeline.json", 200) in proxy.seen, proxy.seen
        SHOTS.mkdir(exist_ok=True)
        browser.save_screenshot(str(SHOTS / "url-prefix-job.png"))

        # The API's reference page: Swagger UI's files and its script's fetch of the schema, whose server
        # is the prefix (operations' addresses under it).
        browser.get(f"{base}/api/v1/docs/")
        wait = WebDriverWait(browser, 20, ignored_exceptions=STALE)
        wait.until(lambda b: b.find_elements(By.CSS_SELECTOR, ".swagger-ui .opblock-summary-path"))
        assert any(path.startswith(f"{PREFIX}/api/v1/schema/") and status == 200 for _, path, status in proxy.seen)
        servers = browser.find_elements(By.CSS_SELECTOR, ".swagger-ui .servers select option")
        assert [option.get_attribute("value") for option in servers] == [PREFIX]
        browser.get(f"{base}/jobs/")

        browser.execute_script("document.querySelector('form.logout').requestSubmit()")  # the top bar's "Log out"
        WebDriverWait(browser, 10, ignored_exceptions=STALE).until(lambda b: "/login/" in b.current_url)
        assert browser.current_url == f"{base}/login/"

    failed = [entry for entry in proxy.seen if entry[2] >= 400]
    assert not failed, failed
    assert not console_errors(browser)
