"""The product served under a path prefix (https://ops.example.com/triage/), as URL_PREFIX=/triage sets
it up (docs/operations.md, "Serving under a path prefix"): a reverse proxy strips the prefix before
passing the request on, and every address the service hands out — links, forms, scripts' requests,
redirects, the static files, emails' links, the OpenAPI schema's server — carries it.

Django's test client does not set the script prefix that reverse() and {% url %} put in front of an
address, as the WSGI handler does for every request (from FORCE_SCRIPT_NAME), so `under_prefix`
sets it for the test, as it is in a web process and in a worker (django.setup()).
"""

from __future__ import annotations

import re
import threading
from html import unescape
from html.parser import HTMLParser
from urllib.parse import parse_qs, urljoin, urlsplit

import pytest
from django.contrib.staticfiles import finders
from django.test import Client
from django.test.utils import override_script_prefix
from django.urls import Resolver404, resolve, reverse

from config.url_prefix import prefix_settings
from tests.test_access_matrix import ROWS, client_for
from tests.test_accessibility import is_page
from tests.test_digests import WEEK as DIGEST_WEEK
from tests.test_digests import fleet, path_of  # noqa: F401  (fleet: a triaged week of two teams)
from tests.test_digests import links as digest_links
from tests.test_sso import provider, sso  # noqa: F401  (the fake identity provider, single sign-on on)

PREFIX = "/triage"
HOST = "http://testserver"
VIEWERS = ("operator", "researcher", "member")
# Attributes whose value is an address a browser or the page's script goes to.
ADDRESS_ATTRIBUTES = {"href", "src", "action", "formaction", "data-src", "data-url", "data-status-url"}


@pytest.fixture
def under_prefix(settings):
    for name, value in prefix_settings(PREFIX).items():
        setattr(settings, name, value)
    with override_script_prefix(f"{PREFIX}/"):
        yield


class _Addresses(HTMLParser):
    def __init__(self):
        super().__init__()
        self.found: list[tuple[str, str, str]] = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ADDRESS_ATTRIBUTES and value is not None:
                self.found.append((tag, name, value))


def addresses(html: str) -> list[tuple[str, str, str]]:
    parser = _Addresses()
    parser.feed(html)
    return parser.found


def outside_the_prefix(page: str, address: str) -> str | None:
    """What is wrong with an address on the page at `page` (an address within the site) served under
    PREFIX: it leads out of the prefix, or within it to nothing. None for a good one or another site's."""
    if address.startswith(("mailto:", "javascript:", "data:", "tel:")):
        return None
    full = urlsplit(urljoin(f"{HOST}{PREFIX}{page}", address))
    if f"{full.scheme}://{full.netloc}" != HOST:
        return None  # another site's (the docs' links to GitHub, the provider's)
    if not full.path.startswith(f"{PREFIX}/"):
        return "leaves the prefix"
    within = full.path.removeprefix(PREFIX)
    if within.startswith("/static/"):
        return None if finders.find(within.removeprefix("/static/")) else "no such static file"
    try:
        resolve(within)
    except Resolver404:
        return "resolves to no page"
    return None


def test_outside_the_prefix_tells_good_addresses_from_bad():
    assert outside_the_prefix("/jobs/", "/triage/jobs/?sort=util") is None
    assert outside_the_prefix("/jobs/", "?page=2") is None  # the page's own address, the prefix kept
    assert outside_the_prefix("/jobs/", "/triage/static/css/app.css") is None
    assert outside_the_prefix("/jobs/", "https://github.com/") is None
    assert outside_the_prefix("/jobs/", "/jobs/") == "leaves the prefix"
    assert outside_the_prefix("/jobs/", "/static/css/app.css") == "leaves the prefix"
    assert outside_the_prefix("/jobs/", "/triage/no-such-page/") == "resolves to no page"


def _page_rows():
    return [row for row in ROWS if is_page(row) and row.name not in ("login", "digests:unsubscribe")]


@pytest.mark.django_db
def test_every_address_on_every_page_stays_under_the_prefix(world, under_prefix):
    """Each page of the access matrix, as each of operator, researcher and member that may open it:
    every link, image, script, stylesheet, form and address a script fetches starts with /triage/
    and leads to a page or a static file of the site."""
    clients = {role: client_for(role, world) for role in VIEWERS}
    pages = [
        (row.path.format(**world["params"]), role)
        for row in _page_rows()
        for role in VIEWERS
        if row.expected[role] == "200"
    ]
    pages += [("/login/", "anonymous"), ("/password/reset/", "anonymous"), ("/api/v1/docs/", "anonymous")]
    clients["anonymous"] = Client()
    assert len(pages) > 60
    problems = []
    for page, role in pages:
        response = clients[role].get(page)
        assert response.status_code == 200, f"{role} {page}: {response.status_code}"
        if not response["Content-Type"].startswith("text/html"):
            continue
        for tag, attribute, address in addresses(response.content.decode()):
            wrong = outside_the_prefix(page.split("?")[0], address)
            if wrong:
                problems.append(f"{role} {page}: <{tag} {attribute}={address!r}> {wrong}")
    assert not problems, "\n".join(problems)


@pytest.mark.django_db
def test_logging_in_and_out_keeps_the_prefix(member_a, under_prefix):
    client = Client()
    sent = client.get("/jobs/?sort=util")
    assert sent.status_code == 302
    assert sent["Location"] == "/triage/login/?next=/triage/jobs/%3Fsort%3Dutil"
    member_a.set_password("correct horse battery staple")
    member_a.save()
    login = {"username": member_a.username, "password": "correct horse battery staple"}
    back = client.post("/login/", {**login, "next": "/triage/jobs/?sort=util"})
    assert back.status_code == 302 and back["Location"] == "/triage/jobs/?sort=util"
    assert client.get("/jobs/").status_code == 200
    out = client.post("/logout/")
    assert out.status_code == 302 and out["Location"] == "/triage/login/"
    landed = Client().post("/login/", login)  # no `next`: the overview
    assert landed.status_code == 302 and landed["Location"] == "/triage/overview/"
    assert Client().get("/")["Location"] == "/triage/login/?next=/triage/"


@pytest.mark.django_db
def test_the_home_page_sends_its_query_on_under_the_prefix(member_a, under_prefix):
    client = Client()
    client.force_login(member_a)
    sent = client.get("/?cluster=c1&from=2026-10-19&to=2026-11-23")
    assert sent.status_code == 302
    assert sent["Location"] == "/triage/overview/?cluster=c1&from=2026-10-19&to=2026-11-23"


@pytest.mark.django_db
def test_the_session_and_csrf_cookies_are_the_prefix_s(member_a, under_prefix):
    """Another application on the same host (/grafana/, a second Fleet Triage under /triage-test/) is not
    sent this one's login; one at the host's root sends its `sessionid` and `csrftoken` here too (path
    /), which a cookie of our own name does not mistake for ours (tests/test_url_prefix_browser.py)."""
    client = Client()
    client.get("/login/")
    assert client.cookies["csrftoken_triage"]["path"] == "/triage/"
    client.force_login(member_a)
    assert client.get("/jobs/").status_code == 200
    client.post("/logout/")
    assert client.cookies["sessionid_triage"]["path"] == "/triage/"


@pytest.mark.django_db
def test_a_job_page_opened_from_a_job_page_keeps_the_jobs_list_it_came_from(world, under_prefix):
    """A job page reached from another job page (another run of it) takes the jobs list to go back to
    from that page's address (its Referer); under a prefix the Referer's path starts with the prefix,
    and it was not taken for a job page: the back link lost the list's filters."""
    client = client_for("member", world)
    job = world["params"]["job_a"]
    referer = f"{HOST}{PREFIX}/jobs/{job}/?back=sort%3Dutil"
    page = client.get(f"/jobs/{job}/", HTTP_REFERER=referer)
    assert page.status_code == 200
    assert '<a href="/triage/jobs/?sort=util">&larr; Jobs</a>' in page.content.decode()


@pytest.mark.django_db
def test_the_api_schema_names_the_prefix_as_its_server(operator, under_prefix):
    client = Client()
    client.force_login(operator)
    schema = client.get("/api/v1/schema/", HTTP_ACCEPT="application/json")
    assert schema.status_code == 200
    document = schema.json()
    assert document["servers"] == [{"url": PREFIX}]
    assert "/api/v1/jobs/" in document["paths"]  # each path is the server's, under it


@pytest.mark.django_db
def test_emails_link_under_the_prefix_once(member_a, settings, under_prefix):
    """PUBLIC_BASE_URL given with the prefix or without, a mailed link has it once."""
    from fleet.accounts import reset_mail
    from triage.digests.services import absolute

    for base in ("https://ops.example.com", "https://ops.example.com/triage", "https://ops.example.com/triage/"):
        settings.PUBLIC_BASE_URL = prefix_settings(PREFIX, public_base_url=base)["PUBLIC_BASE_URL"]
        body = reset_mail(member_a).body
        assert "https://ops.example.com/triage/login/" in body, base
        assert "https://ops.example.com/triage/password/reset/" in body, base
        assert "/triage/triage/" not in absolute(reverse("dashboard:job-list"))
        assert absolute(reverse("dashboard:job-list")) == "https://ops.example.com/triage/jobs/"


def on_a_thread_of_its_own(work):
    """What `work()` gives, run as a worker in a threads pool (`celery worker --pool threads`) runs a
    task: on a thread of its own, whose script prefix nothing has set (it is "/" there, while
    `under_prefix` set it for the test's own thread, as django.setup() does for a worker's main one)."""
    from django.db import connection

    outcome = {}

    def run():
        try:
            outcome["value"] = work()
        except BaseException as exc:  # noqa: BLE001 (raised again on the test's thread)
            outcome["error"] = exc
        finally:
            connection.close()  # the thread's own

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=120)
    assert not thread.is_alive(), "the thread did not finish"
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


@pytest.mark.django_db(transaction=True)  # the thread reads the fleet on a connection of its own
def test_a_digest_sent_from_a_thread_of_its_own_links_under_the_prefix(fleet, member_a, settings, under_prefix):  # noqa: F811
    """A threads-pool worker sent the team's digest with every link outside the prefix
    (https://ops.example.com/jobs/7/#findings): reverse() puts the thread's script prefix in front,
    and a task's thread had none."""
    from django.core import mail

    from triage.digests.models import DigestKind
    from triage.digests.tasks import send_digest_task

    settings.PUBLIC_BASE_URL = "https://ops.example.com"
    team_id = member_a.team_memberships.get().team_id
    on_a_thread_of_its_own(lambda: send_digest_task.apply(args=[DigestKind.TEAM, DIGEST_WEEK, team_id]).get())
    (message,) = [m for m in mail.outbox if member_a.email in m.to]
    html = message.alternatives[0][0]
    urls = {unescape(url) for url in digest_links(html)} | {message.extra_headers["List-Unsubscribe"].strip("<>")}
    assert f"https://ops.example.com/triage/jobs/{fleet['resnet'].pk}/#findings" in urls
    for url in urls:
        assert url.startswith("https://ops.example.com/triage/"), url
        assert outside_the_prefix("/", path_of(url)) is None, url
    in_text = re.findall(r"https?://[^\s<>()]+", message.body)  # the plain-text part's links
    assert in_text and all(url.startswith("https://ops.example.com/triage/") for url in in_text), in_text


@pytest.mark.django_db
def test_a_password_reset_mail_built_on_a_thread_of_its_own_links_under_the_prefix(member_a, settings, under_prefix):
    from fleet.accounts import reset_mail

    settings.PUBLIC_BASE_URL = "https://ops.example.com"
    body = on_a_thread_of_its_own(lambda: reset_mail(member_a).body)
    assert "https://ops.example.com/triage/login/" in body
    assert "https://ops.example.com/triage/password/reset/" in body


def compose_healthcheck_address(monkeypatch, url_prefix: str | None) -> str:
    """The address docker-compose.yml's web healthcheck asks, run in an environment with `url_prefix`."""
    import urllib.request

    import yaml

    from tests.conftest import REPO

    test = yaml.safe_load((REPO / "docker-compose.yml").read_text())["services"]["web"]["healthcheck"]["test"]
    assert test[:3] == ["CMD", "python", "-c"], test
    asked = []
    monkeypatch.setattr(urllib.request, "urlopen", lambda url, *args, **kwargs: asked.append(url))
    if url_prefix is None:
        monkeypatch.delenv("URL_PREFIX", raising=False)
    else:
        monkeypatch.setenv("URL_PREFIX", url_prefix)
    exec(test[3], {})  # noqa: S102 (the repository's own healthcheck)
    (address,) = asked
    return address


@pytest.mark.django_db
def test_the_health_check_answers_under_the_prefix_however_the_prefix_is_taken_off(
    client, settings, under_prefix, monkeypatch
):
    """A load balancer asks https://ops.example.com/triage/healthz through the proxy. A probe straight at
    the web process asked /triage/healthz too and got a 404 behind the snippet's proxy (which takes the
    prefix off), while gunicorn started with SCRIPT_NAME=/triage refuses /healthz itself (500, "does not
    start with SCRIPT_NAME"): no one address answered in both set-ups, and compose's healthcheck
    (/healthz) failed in the second. Now <prefix>/healthz answers in both, and compose asks it."""
    settings.ALLOWED_HOSTS = ["ops.example.com"]
    settings.SECURE_SSL_REDIRECT = True
    by_address = {"HTTP_HOST": "127.0.0.1:8000"}  # over plain HTTP, as probes ask

    def healthy(response) -> bool:
        return response.status_code == 200 and response.json() == {"status": "ok"}

    assert healthy(client.get("/healthz", **by_address))  # through the snippet's proxy, or straight at it
    assert healthy(client.get("/healthz", SCRIPT_NAME=PREFIX, **by_address))  # gunicorn took the prefix off
    assert healthy(client.get(f"{PREFIX}/healthz", **by_address))  # straight at the web process, prefix and all
    assert client.get(f"{PREFIX}/login/", **by_address).status_code == 400  # only the health check: as before
    assert compose_healthcheck_address(monkeypatch, "/triage/") == "http://127.0.0.1:8000/triage/healthz"
    assert compose_healthcheck_address(monkeypatch, None) == "http://127.0.0.1:8000/healthz"


# A request to the WSGI application as gunicorn runs it (config.wsgi), in a process of its own with
# URL_PREFIX set: the proxy in front has taken the prefix off the path.
WSGI_REQUESTS = r"""
import json, re, wsgiref.util
from config.wsgi import application

def get(path):
    environ = {"PATH_INFO": path, "HTTP_HOST": "127.0.0.1"}
    wsgiref.util.setup_testing_defaults(environ)
    said = {}

    def start(status, headers, exc_info=None):
        said.update(status=status, headers=dict(headers))

    body = b"".join(application(environ, start))
    return int(said["status"][:3]), said["headers"], body.decode("utf-8", "replace")

_, _, login = get("/login/")
jobs, headers, _ = get("/jobs/")
css = re.search(r'<link rel="stylesheet" href="([^"]+)"', login).group(1)
print(json.dumps({
    "stylesheet": css,
    "form": re.search(r'<form[^>]* action="([^"]+)"', login).group(1),
    "jobs": [jobs, headers.get("Location")],
    "stylesheet_served": get(css.removeprefix("/triage"))[0],
}))
"""


def test_the_web_process_hands_out_addresses_under_url_prefix(tmp_path):
    """URL_PREFIX=/triage as config.wsgi (gunicorn) starts: the pages' stylesheet and the redirect to the
    login page are under /triage/, and the stylesheet is served where the proxy passes it on (/static/).
    The web process's first reading of STATIC_URL is at start-up, before any request sets the prefix:
    a STATIC_URL relative to the prefix was read then as /static/."""
    import json
    import os
    import subprocess
    import sys

    from tests.conftest import REPO

    clean = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "DATABASE_URL", "STATIC_ROOT"}}
    env = {**clean, "DEBUG": "1", "DATA_DIR": str(tmp_path), "URL_PREFIX": "/triage"}
    # No migrate first: these requests read no table (they open no database file), and a 500 would say so.
    done = subprocess.run(
        [sys.executable, "-c", WSGI_REQUESTS], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["stylesheet"].startswith("/triage/static/css/app"), seen
    assert seen["stylesheet_served"] == 200, seen
    assert seen["form"] == "/triage/login/", seen
    assert seen["jobs"] == [302, "/triage/login/?next=/triage/jobs/"], seen


SETTINGS_READ = r"""
import json
from django.conf import settings
from config.url_prefix import prefix_settings
given = prefix_settings("/tools/triage/", public_base_url="https://ops.example.com/tools/triage")
print(json.dumps({"given": given, "settings": {name: getattr(settings, name) for name in given}}))
"""


def test_the_settings_module_applies_every_setting_url_prefix_decides(tmp_path):
    """config/settings.py names each setting prefix_settings() decides: one it left out would keep
    Django's default (a cookie sent to the whole host, or under another name)."""
    import json
    import os
    import subprocess
    import sys

    from tests.conftest import REPO

    clean = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "DATABASE_URL", "STATIC_ROOT"}}
    env = {
        **clean,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DEBUG": "1",
        "DATA_DIR": str(tmp_path),
        "URL_PREFIX": "/tools/triage/",
        "PUBLIC_BASE_URL": "https://ops.example.com/tools/triage",
    }
    done = subprocess.run(
        [sys.executable, "-c", SETTINGS_READ], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["settings"] == seen["given"]
    assert seen["settings"]["STATIC_URL"] == "/tools/triage/static/"
    assert seen["settings"]["PUBLIC_BASE_URL"] == "https://ops.example.com"


@pytest.mark.django_db
def test_single_sign_on_comes_back_under_the_prefix(sso, under_prefix):  # noqa: F811
    """The provider is given the callback under the prefix (the address to register with it), sends the
    browser back there, and the person lands on the page they asked for, under the prefix."""
    import requests

    client = Client()
    start = client.get("/login/sso/?next=/triage/jobs/")
    assert start.status_code == 302
    query = parse_qs(urlsplit(start["Location"]).query)
    assert query["redirect_uri"] == [f"{HOST}{PREFIX}/login/sso/callback/"]
    at_provider = requests.get(start["Location"], allow_redirects=False, timeout=10)
    back = urlsplit(at_provider.headers["Location"])
    assert back.path == f"{PREFIX}/login/sso/callback/"
    landed = client.get(back.path.removeprefix(PREFIX), {k: v[0] for k, v in parse_qs(back.query).items()})
    assert landed.status_code == 302 and landed["Location"] == f"{PREFIX}/jobs/"


@pytest.mark.django_db
def test_the_admin_s_links_stay_under_the_prefix(django_user_model, under_prefix):
    """The admin site (staff): its pages' links, its "View site" among them, and its logout."""
    admin = django_user_model.objects.create_superuser("root", "root@example.org", "x")
    client = Client()
    client.force_login(admin)
    problems = []
    for page in ("/admin/", "/admin/auth/user/", f"/admin/auth/user/{admin.pk}/change/"):
        response = client.get(page)
        assert response.status_code == 200, page
        problems += [
            f"{page}: <{tag} {attribute}={address!r}> {wrong}"
            for tag, attribute, address in addresses(response.content.decode())
            if (wrong := outside_the_prefix(page, address))
        ]
        assert f'<a href="{PREFIX}/">View site</a>' in response.content.decode()
    assert not problems, "\n".join(problems)
    out = client.post("/admin/logout/")
    assert out.status_code in (200, 302)
    assert out.get("Location", f"{PREFIX}/login/").startswith(f"{PREFIX}/")
