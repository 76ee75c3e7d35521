"""The operator's connector pages: operators only, CSRF, secrets write-only and encrypted at rest."""

from __future__ import annotations

import base64

import pytest
from django.test import Client
from django.urls import reverse

from fleet.connectors.models import Connector

pytestmark = pytest.mark.django_db

SECRET = "tok-3f9a-very-secret"


def form_data(**overrides) -> dict:
    data = {
        "name": "slurm-c1",
        "kind": "slurm",
        "url": "http://127.0.0.1:9",
        "cluster": "c1",
        "enabled": "on",
        "interval_minutes": "15",
        "auth": "header",
        "secret_header": "X-SLURM-USER-TOKEN",
        "secret": SECRET,
        "headers": '{"X-SLURM-USER-NAME": "svc"}',
        "verify_tls": "on",
        "options": '{"api_version": "v0.0.41", "account_teams": {"vision": "Computer Vision"}}',
    }
    data.update(overrides)
    return data


def test_only_operators_see_connectors(client, member_a, researcher, operator):
    for user in (member_a, researcher):
        client.force_login(user)
        assert client.get(reverse("connectors:list")).status_code == 404
        assert client.get(reverse("connectors:create")).status_code == 404
    client.logout()
    assert client.get(reverse("connectors:list")).status_code == 302  # to the login page
    client.force_login(operator)
    assert client.get(reverse("connectors:list")).status_code == 200


def test_a_secret_is_stored_encrypted_and_never_shown_back(client, operator):
    client.force_login(operator)
    response = client.post(reverse("connectors:create"), form_data())
    assert response.status_code == 302, response.content.decode()[:2000]
    connector = Connector.objects.get(name="slurm-c1")
    assert SECRET not in connector.secret_encrypted and connector.secret() == SECRET
    assert connector.to_settings().headers["X-SLURM-USER-TOKEN"] == SECRET
    for url in (reverse("connectors:list"), reverse("connectors:edit", args=[connector.pk])):
        page = client.get(url).content.decode()
        assert SECRET not in page and connector.secret_encrypted not in page
    # Saving the form again without typing the secret keeps it.
    data = form_data(secret="", interval_minutes="5")
    assert client.post(reverse("connectors:edit", args=[connector.pk]), data).status_code == 302
    connector.refresh_from_db()
    assert connector.secret() == SECRET and connector.interval_minutes == 5


def test_a_secret_reference_reads_the_environment(client, operator, monkeypatch):
    monkeypatch.setenv("FLEET_SECRET_PROM_TOKEN", "from-env")
    client.force_login(operator)
    data = form_data(
        name="prom",
        kind="prometheus",
        cluster="",
        auth="bearer",
        secret="",
        secret_reference="env:FLEET_SECRET_PROM_TOKEN",
        options='{"step": "30s"}',
    )
    assert client.post(reverse("connectors:create"), data).status_code == 302
    connector = Connector.objects.get(name="prom")
    assert connector.secret_encrypted == "" and connector.to_settings().headers["Authorization"] == "Bearer from-env"
    bad = form_data(name="x", secret="", secret_reference="$(reboot)")
    assert "Use env:" in client.post(reverse("connectors:create"), bad).content.decode()


def test_posts_need_csrf(operator):
    client = Client(enforce_csrf_checks=True)
    client.force_login(operator)
    assert client.post(reverse("connectors:create"), form_data()).status_code == 403
    connector = Connector.objects.create(name="g", kind="generic", url="http://127.0.0.1:9", cluster="c1")
    assert client.post(reverse("connectors:sync", args=[connector.pk])).status_code == 403


def test_pull_now_records_the_failure_on_the_health_page(client, operator, settings):
    settings.CONNECTOR_HTTP_RETRIES = 0
    settings.CONNECTOR_HTTP_TIMEOUT = 0.5
    connector = Connector.objects.create(name="g", kind="generic", url="http://127.0.0.1:9", cluster="c1")
    client.force_login(operator)
    # Queued at once (the view writes nothing first), so a queue that is down is said on the page;
    # in-process (no Redis) the pull runs in the request.
    assert client.post(reverse("connectors:sync", args=[connector.pk])).status_code == 302
    connector.refresh_from_db()
    assert connector.health == "failing" and "127.0.0.1:9 refused the connection" in connector.last_error
    page = client.get(reverse("connectors:list")).content.decode()
    assert "failing" in page and "127.0.0.1:9 refused the connection" in page


@pytest.mark.parametrize(
    ("overrides", "field", "message"),
    [
        ({"secret": SECRET + "\nline2"}, "secret", "The secret holds a line break or a character HTTP headers cannot"),
        ({"secret": "tok☃"}, "secret", "The secret holds a line break"),
        ({"headers": '{"X-A": "a\\r\\nX-Injected: 1"}'}, "headers", "The header 'X-A' holds a line break"),
        ({"headers": '{"X-☃": "a"}'}, "headers", "is not a valid HTTP header name"),
        ({"auth": "basic", "username": "用户"}, "username", "The user name holds a line break or a character"),
        ({"secret_header": "X Token"}, "secret_header", "is not a valid HTTP header name"),
    ],
)
def test_secrets_and_headers_http_cannot_send_are_refused_without_quoting_them(
    client, operator, overrides, field, message
):
    """The HTTP library failed on them with an error quoting the header's value, which the check and
    the pull then showed on the page: the secret itself, or a 500 for non-Latin-1 text."""
    client.force_login(operator)
    response = client.post(reverse("connectors:create"), form_data(**overrides))
    assert response.status_code == 200 and not Connector.objects.exists()
    page = response.content.decode()
    assert message in page.replace("&#x27;", "'")
    assert SECRET not in page


def test_a_secret_file_of_several_lines_fails_the_check_and_the_pull_without_showing_it(
    client, operator, tmp_path, settings, django_capture_on_commit_callbacks
):
    settings.CONNECTOR_SECRET_DIRS = [str(tmp_path)]
    token = tmp_path / "token"
    token.write_text(f"{SECRET}\nsecond line\n")
    client.force_login(operator)
    data = form_data(secret="", secret_reference=f"file:{token}")
    assert client.post(reverse("connectors:create"), data).status_code == 302
    connector = Connector.objects.get()
    checked = client.post(reverse("connectors:check", args=[connector.pk]), follow=True).content.decode()
    assert "the secret holds a line break or a character HTTP headers cannot carry" in checked
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("connectors:sync", args=[connector.pk]))
    connector.refresh_from_db()
    run = connector.runs.get() if hasattr(connector, "runs") else None
    shown = [checked, connector.last_error, client.get(reverse("connectors:list")).content.decode()]
    assert connector.last_error.startswith("the secret holds a line break or a character HTTP headers cannot carry")
    assert all(SECRET not in text for text in shown) and (run is None or SECRET not in str(run.errors))


@pytest.mark.parametrize(
    ("kind", "options", "message"),
    [
        ("slurm", {"window_hours": "x"}, "option 'window_hours' must be a number from 0.01 to 8784 (got 'x')"),
        ("slurm", {"initial_days": 1e9}, "option 'initial_days' must be a number from 0 to 3660"),
        ("slurm", {"account_teams": ["ml"]}, "option 'account_teams' must be a JSON object of names to names"),
        ("kubernetes", {"settle_minutes": []}, "option 'settle_minutes' must be a number"),
        ("kubernetes", {"page_size": "x"}, "option 'page_size' must be a whole number from 1 to 10000"),
        ("prometheus", {"step": "abc"}, "option 'step' must be a duration from 1ms to 1d"),
        ("generic", {"page_size": 2.5}, "option 'page_size' must be a whole number"),
    ],
)
def test_options_a_connector_cannot_read_are_a_message_not_a_server_error(
    client, operator, kind, options, message, django_capture_on_commit_callbacks
):
    import json

    from fleet.models import IngestRun

    cluster = "" if kind == "prometheus" else "c1"
    connector = Connector.objects.create(
        name="c", kind=kind, url="http://127.0.0.1:9", cluster=cluster, options=json.loads(json.dumps(options))
    )
    client.force_login(operator)
    checked = client.post(reverse("connectors:check", args=[connector.pk]), follow=True)
    assert checked.status_code == 200 and message in checked.content.decode().replace("&#x27;", "'")
    with django_capture_on_commit_callbacks(execute=True):
        assert client.post(reverse("connectors:sync", args=[connector.pk])).status_code == 302
    connector.refresh_from_db()
    assert message in connector.last_error
    assert not IngestRun.objects.filter(status=IngestRun.Status.RUNNING).exists()  # the pull's run ended


def test_an_interval_past_a_year_is_refused_and_an_old_one_keeps_the_schedule_running(client, operator):
    """The beat adds the interval to the last run: 99,999,999,999 minutes went past the calendar's end
    (OverflowError), which stopped the schedule of every connector."""
    from datetime import timedelta

    from django.utils import timezone

    from fleet.connectors.sync import due_connectors

    client.force_login(operator)
    page = client.post(reverse("connectors:create"), form_data(interval_minutes="99999999999")).content.decode()
    assert "Ensure this value is less than or equal to 527040" in page and not Connector.objects.exists()
    old = Connector.objects.create(name="old", kind="generic", url="http://127.0.0.1:9", cluster="c1")
    Connector.objects.filter(pk=old.pk).update(
        interval_minutes=2_000_000_000, last_run_at=timezone.now() - timedelta(days=400)
    )  # saved before the bound
    fresh = Connector.objects.create(name="fresh", kind="generic", url="http://127.0.0.1:9", cluster="c1")
    assert set(due_connectors()) == {old.pk, fresh.pk}


def test_the_form_shows_each_kind_s_options_and_auth_and_every_example_is_valid(client, operator):
    import json
    from html import unescape

    from fleet.connectors.base import ConnectorSettings
    from fleet.connectors.http import HttpClient
    from fleet.connectors.registry import kinds

    client.force_login(operator)
    page = unescape(client.get(reverse("connectors:create")).content.decode())
    for kind, cls in kinds().items():
        assert f'id="kind-{kind}"' in page and cls.options_example in page and cls.auth_hint in page
        # An example an operator copies must be accepted as it is.
        settings = ConnectorSettings(
            name="x", kind=kind, url="http://127.0.0.1:9/", options=json.loads(cls.options_example)
        )
        cls(settings, HttpClient(settings))
    assert "Basic, user name api, the API key as the secret." in page
    wandb = form_data(name="wandb", kind="wandb", auth="basic", username="api", secret_header="", headers="{}",
                      url="https://api.wandb.ai", options=kinds()["wandb"].options_example)  # fmt: skip
    assert client.post(reverse("connectors:create"), wandb).status_code == 302
    assert Connector.objects.get(name="wandb").to_settings().basic_auth == ("api", SECRET)


def test_the_form_shows_every_field_once_in_its_group_with_its_error_beside_it(client, operator):
    """The form is laid out by hand in fieldsets: a field left out of them would vanish from the
    page, and the connector could not be configured."""
    import re

    from fleet.connectors.forms import ConnectorForm

    grouped = [name for _, names in ConnectorForm.FIELDSETS for name in names]
    with_secret = Connector(pk=1, name="x", kind="generic", url="http://x", secret_ref="env:X")  # every field
    assert sorted(grouped) == sorted(ConnectorForm(instance=with_secret).fields) and len(grouped) == len(set(grouped))
    client.force_login(operator)
    page = client.get(reverse("connectors:create")).content.decode()
    assert re.findall(r"<legend>([^<]+)</legend>", page) == [legend for legend, _ in ConnectorForm.FIELDSETS]
    for name in grouped:
        shown = name != "clear_secret"  # a new connector has no stored secret to clear
        assert len(re.findall(rf'<label for="id_{name}">', page)) == shown, name
        assert page.count(f'name="{name}"') == shown, name
    assert '<label for="id_url">URL</label>' in page and '<label for="id_ca_bundle">CA bundle</label>' in page
    # A help text is the input's description, for a screen reader too.
    assert 'aria-describedby="id_url_helptext"' in page and 'id="id_url_helptext"' in page
    refused = client.post(reverse("connectors:create"), form_data(auth="basic", username="")).content.decode()
    field = re.search(r'<div class="field invalid">(.*?)</div>', refused, re.S)
    assert field and 'for="id_username"' in field.group(1) and "Basic auth needs a user name." in field.group(1)


@pytest.mark.parametrize(
    ("kind", "url"),
    [
        ("prometheus", "https://prometheus:9090"),  # the form's own example
        ("slurm", "http://slurmrestd:6820"),
        ("mlflow", "http://mlflow:5000"),
        ("kubernetes", "https://kubernetes/"),
        ("generic", "http://localhost:8080/api/fleet"),
        ("wandb", "https://wandb-server.ml.svc.cluster.local"),
    ],
)
def test_an_in_cluster_service_name_is_a_valid_url(client, operator, kind, url):
    """Inside a cluster or a compose network a platform answers on a single-label name, which
    Django's URL check refused ("Enter a valid URL"), the help text's own example among them."""
    from fleet.connectors.registry import kinds

    client.force_login(operator)
    data = form_data(name=f"c-{kind}", kind=kind, url=url, cluster="" if kind == "prometheus" else "c1")
    data["options"] = kinds()[kind].options_example  # the form data's are Slurm's, which other kinds refuse
    response = client.post(reverse("connectors:create"), data)
    assert response.status_code == 302, response.content.decode()[:3000]
    connector = Connector.objects.get(name=f"c-{kind}")
    connector.full_clean()  # the model's own check agrees with the form's
    assert connector.url == url and connector.to_settings().url == url


@pytest.mark.parametrize(
    "url",
    [
        "ftp://prometheus:21",  # only http(s): the connectors speak nothing else
        "file:///etc/passwd",
        "javascript:alert(1)",
        "prometheus:9090",  # no scheme: "prometheus" reads as one
        "http://",
        "http://:9090",
        "http://12345",  # all digits is an address to a resolver (http://2130706433 is 127.0.0.1)
        "http://999.1.1.1",
        "http://-prometheus-:9090",
        "http://prom etheus:9090",
        "http://prometheus:99999999",
    ],
)
def test_a_url_the_connectors_cannot_use_is_still_refused(client, operator, url):
    from django.core.exceptions import ValidationError

    client.force_login(operator)
    response = client.post(reverse("connectors:create"), form_data(url=url))
    assert response.status_code == 200 and not Connector.objects.exists()
    assert "Enter an http(s) URL with a host" in response.content.decode()
    with pytest.raises(ValidationError):
        Connector(name="x", kind="generic", url=url, cluster="c1").full_clean()


@pytest.mark.parametrize("url", ["https://admin:hunter2@prometheus:9090", "https://admin@slurm.example.org/"])
def test_a_password_in_the_url_is_refused_and_not_shown_back(client, operator, url):
    """The URL is shown on the connectors' pages and in pull errors: a password in it would be echoed
    to everyone who sees them. Refused, it is never stored (the form shows its author what they typed)."""
    client.force_login(operator)
    response = client.post(reverse("connectors:create"), form_data(url=url))
    assert response.status_code == 200 and not Connector.objects.exists()
    assert "Leave the user name and password out of the URL: choose basic auth" in response.content.decode()
    assert "hunter2" not in client.get(reverse("connectors:list")).content.decode()


def test_keeping_or_clearing_the_stored_secret_is_offered_only_when_there_is_one(client, operator):
    """A new connector has no stored secret to keep or clear: the form offered both all the same."""
    client.force_login(operator)
    keep, clear = "Leave blank to keep the stored one", 'name="clear_secret"'
    page = client.get(reverse("connectors:create")).content.decode()
    assert 'name="secret"' in page and keep not in page and clear not in page
    without = Connector.objects.create(name="open", kind="generic", url="http://127.0.0.1:9", cluster="c1")
    page = client.get(reverse("connectors:edit", args=[without.pk])).content.decode()
    assert keep not in page and clear not in page
    assert client.post(reverse("connectors:create"), form_data()).status_code == 302
    stored = Connector.objects.get(name="slurm-c1")
    page = client.get(reverse("connectors:edit", args=[stored.pk])).content.decode()
    assert keep in page and clear in page
    # Clearing it still works, and the auth kind then asks for a secret again.
    refused = client.post(reverse("connectors:edit", args=[stored.pk]), form_data(secret="", clear_secret="on"))
    assert "This auth kind needs a secret" in refused.content.decode()
    cleared = form_data(secret="", clear_secret="on", auth="none")
    assert client.post(reverse("connectors:edit", args=[stored.pk]), cleared).status_code == 302
    stored.refresh_from_db()
    assert not stored.has_secret


def test_the_cluster_field_offers_the_clusters_jobs_came_from(client, operator):
    from fleet.models import Cluster

    Cluster.objects.create(name="alpha")
    Cluster.objects.create(name="<beta>")
    client.force_login(operator)
    page = client.get(reverse("connectors:create")).content.decode()
    assert 'list="known-clusters"' in page
    assert '<datalist id="known-clusters"><option value="&lt;beta&gt;"><option value="alpha"></datalist>' in page


def test_the_browser_and_the_server_agree_on_the_interval_and_the_name(client, operator):
    """The interval's input said min="0" (a PositiveIntegerField's default) while the server wants 1
    to 527040 minutes, and nothing said the name must be a slug until a name with a space was refused."""
    import re

    from fleet.connectors.forms import SLUG_PATTERN

    client.force_login(operator)
    page = client.get(reverse("connectors:create")).content.decode()
    interval = re.search(r'<input type="number" name="interval_minutes"[^>]*>', page).group(0)
    assert 'min="1"' in interval and 'max="527040"' in interval
    assert 'aria-describedby="id_interval_minutes_helptext"' in interval
    name = re.search(r'<input type="text" name="name"[^>]*>', page).group(0)
    assert f'pattern="{SLUG_PATTERN}"' in name and 'aria-describedby="id_name_helptext"' in name
    assert "Letters (a-z, A-Z), digits, hyphens (-) and underscores (_) only" in page
    refused = client.post(reverse("connectors:create"), form_data(interval_minutes="0")).content.decode()
    assert "Ensure this value is greater than or equal to 1." in refused and not Connector.objects.exists()
    # What the browser's pattern lets through is what the server takes, and the other way round.
    for index, candidate in enumerate(["slurm-c1", "a_b", "with space", "dot.ted", "ünï", "x/y"]):
        taken = client.post(reverse("connectors:create"), form_data(name=candidate, cluster=f"c{index}"))
        assert (taken.status_code == 302) == bool(re.fullmatch(SLUG_PATTERN, candidate)), candidate


def test_a_connector_s_page_shows_its_health_its_pulls_and_its_actions(client, operator, settings):
    """A connector had no page of its own: its name led to the edit form, and its pulls were only
    findable among every ingest run by the name they were given."""
    import re
    from datetime import timedelta

    from fleet.connectors import sync
    from fleet.models import IngestRun
    from tests.connector_servers import FakePlatform

    settings.CONNECTOR_HTTP_RETRIES = 0
    settings.CONNECTOR_HTTP_TIMEOUT = 0.5
    prom = Connector.objects.create(name="prom", kind="prometheus", url="http://127.0.0.1:9")
    with FakePlatform() as server:
        server.route("/jobs", lambda path, query: (200, {"jobs": [], "next_cursor": "", "has_more": False}, {}))
        api = Connector.objects.create(name="api", kind="generic", url=server.url, cluster="c1", metrics_from=prom)
        assert sync.sync_connector(api.pk).status == "succeeded"
    Connector.objects.filter(pk=api.pk).update(url="http://127.0.0.1:9")  # nothing answers there
    assert sync.sync_connector(api.pk).status == "failed"
    other = IngestRun.objects.create(archive_name="upload.tar.gz")  # not a pull of it
    api.refresh_from_db()
    failed, succeeded = api.runs.order_by("-pk")
    assert (failed.status, succeeded.status) == ("failed", "succeeded") and api.last_run == failed

    client.force_login(operator)
    page = client.get(reverse("connectors:detail", args=[api.pk])).content.decode()
    assert 'id="connector-health">failing</span>' in page and "1 failed pull in a row" in page
    assert f"{api.last_success_at:%Y-%m-%d %H:%M} UTC" in page and "127.0.0.1:9 refused the connection" in page
    assert "due now" not in page and f"{api.last_run_at + timedelta(minutes=15):%Y-%m-%d %H:%M} UTC" in page
    for run in (failed, succeeded):
        assert f'href="{reverse("fleet:ingest-run-detail", args=[run.pk])}"' in page
    assert f'href="{reverse("fleet:ingest-run-detail", args=[other.pk])}"' not in page
    actions = re.search(r'<div class="connector-actions".*?</div>', page, re.S).group(0)
    for url in (reverse("connectors:sync", args=[api.pk]), reverse("connectors:check", args=[api.pk])):
        assert f'<form method="post" action="{url}">' in actions
    assert f'href="{reverse("connectors:edit", args=[api.pk])}"' in actions
    assert f'href="{reverse("connectors:detail", args=[prom.pk])}">prom</a>' in page  # its series source
    served = client.get(reverse("connectors:detail", args=[prom.pk])).content.decode()
    assert "never run" in served and "No pulls yet." in served and "due now" in served
    assert f'href="{reverse("connectors:detail", args=[api.pk])}">api</a>' in served  # whom it serves
    # The list leads to the page; saving the form and an action taken on the page come back to it.
    assert (
        f'href="{reverse("connectors:detail", args=[api.pk])}"'
        in client.get(reverse("connectors:list")).content.decode()
    )
    detail = reverse("connectors:detail", args=[api.pk])
    edited = form_data(name="api", kind="generic", auth="none", secret="", secret_header="", headers="{}", options="{}")
    assert client.post(reverse("connectors:edit", args=[api.pk]), edited)["Location"] == detail
    assert client.post(reverse("connectors:check", args=[api.pk]))["Location"] == detail
    listed = client.post(reverse("connectors:check", args=[api.pk]), {"back": "list"})["Location"]
    assert listed == reverse("connectors:list")


def test_past_pulls_are_linked_to_their_connector_by_the_migration():
    from importlib import import_module

    from django.apps import apps

    from fleet.models import IngestRun

    migration = import_module("fleet.migrations.0016_ingestrun_connector")
    connector = Connector.objects.create(name="old", kind="generic", url="http://127.0.0.1:9", cluster="c1")
    pull = IngestRun.objects.create(source="connector", archive_path="connector:old", archive_name="old pull")
    upload = IngestRun.objects.create(source="upload", archive_path="connector:old", archive_name="connector:old")
    migration.link_past_pulls(apps, None)
    assert list(connector.runs.all()) == [pull] and IngestRun.objects.get(pk=upload.pk).connector is None


def test_deleting_a_connector_asks_first_keeps_its_jobs_and_runs_and_is_audited(client, operator, settings):
    """There was no way to delete a connector. Deleting one must not take the jobs it imported (or
    their runs) with it, nor fail on the rows that point at it: its pulls' runs, and the connectors
    that take their series from it, which it refuses to strand."""
    from django.db.models import ProtectedError

    from fleet.connectors import sync
    from fleet.models import AuditEvent, IngestRun, Job
    from tests.connector_servers import FakePlatform
    from tests.test_connectors_sync import GenericApi

    settings.CONNECTOR_HTTP_RETRIES = 0
    prom = Connector.objects.create(name="prom", kind="prometheus", url="http://127.0.0.1:9")
    with FakePlatform() as server:
        GenericApi(3).install(server)
        api = Connector.objects.create(name="api", kind="generic", url=server.url, cluster="c1")
        assert sync.sync_connector(api.pk).created == 3
    api.set_secret(SECRET)
    api.metrics_from = prom  # after the pull, which would have asked it (nothing answers) for series
    api.save()
    run = api.runs.get()
    client.force_login(operator)
    delete = reverse("connectors:delete", args=[api.pk])
    assert f'href="{delete}"' in client.get(reverse("connectors:detail", args=[api.pk])).content.decode()

    # The Prometheus connector serves `api`: its page says so, and neither the POST nor the ORM deletes it.
    page = client.get(reverse("connectors:delete", args=[prom.pk])).content.decode()
    assert "prom cannot be deleted while" in page and ">api</a>" in page and "<form" not in page.split("<main")[-1]
    assert client.post(reverse("connectors:delete", args=[prom.pk])).status_code == 200
    assert Connector.objects.filter(pk=prom.pk).exists() and not actions_logged("connector.delete")
    with pytest.raises(ProtectedError):
        prom.delete()

    # The confirmation says what stays; a GET deletes nothing.
    page = client.get(delete).content.decode()
    assert "keeps the 3 jobs its pulls stored" in page and "keeps its 1 pull on" in page
    assert f'<form method="post" action="{delete}"' in page and "csrfmiddlewaretoken" in page
    assert Connector.objects.filter(pk=api.pk).exists() and SECRET not in page

    # A pull holding its lease: refused, not deleted under it.
    assert sync.acquire(api.pk, "a-running-pull")
    assert client.post(delete)["Location"] == reverse("connectors:detail", args=[api.pk])
    assert Connector.objects.filter(pk=api.pk).exists()
    sync.release(api.pk, "a-running-pull")

    response = client.post(delete)
    assert response.status_code == 302 and response["Location"] == reverse("connectors:list")
    assert not Connector.objects.filter(pk=api.pk).exists()
    assert Job.objects.filter(ingest_run=run).count() == 3  # the jobs stay, still with their run
    assert IngestRun.objects.get(pk=run.pk).connector is None
    event = AuditEvent.objects.get(action="connector.delete")
    assert event.target_repr == "api" and event.details | {"url": ""} == {
        "kind": "generic",
        "url": "",
        "cluster": "c1",
        "runs": 1,
        "jobs": 3,
        "jobs_deleted": 0,
        "clusters_deleted": [],
    }
    assert SECRET not in str(event.details)
    # Now nothing takes series from prom: it goes too.
    assert client.post(reverse("connectors:delete", args=[prom.pk])).status_code == 302
    assert not Connector.objects.exists()


def actions_logged(action: str) -> bool:
    from fleet.models import AuditEvent

    return AuditEvent.objects.filter(action=action).exists()


def test_deleting_a_connector_takes_a_post_with_csrf(client, operator):
    connector = Connector.objects.create(name="g", kind="generic", url="http://127.0.0.1:9", cluster="c1")
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(operator)
    assert strict.post(reverse("connectors:delete", args=[connector.pk])).status_code == 403
    client.force_login(operator)
    assert client.put(reverse("connectors:delete", args=[connector.pk])).status_code == 405
    assert Connector.objects.filter(pk=connector.pk).exists()


@pytest.mark.parametrize(
    ("kind", "options", "message"),
    [
        ("slurm", {"windw_hours": 12}, "Unknown option 'windw_hours' for Slurm (slurmrestd); its options are: "
         "account_teams, api_version, default_team, exclusive_nodes, gpu_jobs_only, initial_days, settle_minutes, "
         "window_hours."),
        ("slurm", {"gpu_jobs_only": "no"},
         'Option \'gpu_jobs_only\' must be true or false, without quotes (got "no").'),
        ("slurm", {"account_teams": ["ml"]}, "Option 'account_teams' must be a JSON object of names to names"),
        ("slurm", {"window_hours": [1]}, "Option 'window_hours' must be a number, e.g. 24 (got [1])."),
        ("slurm", {"window_hours": "x"}, "Option 'window_hours' must be a number from 0.01 to 8784 (got 'x')."),
        ("slurm", {"initial_days": 1e9}, "Option 'initial_days' must be a number from 0 to 3660"),
        ("kubernetes", {"namespace": 3}, "Option 'namespace' must be text in quotes"),
        ("prometheus", {"step": "abc"}, "Option 'step' must be a duration from 1ms to 1d"),
        ("prometheus", {"node_exporter": 0}, "Option 'node_exporter' must be true or false"),
        ("generic", {"page_size": 2.5}, "Option 'page_size' must be a whole number from 1 to 10000"),
        ("mlflow", {}, "Option 'experiment_ids' must be a JSON list of experiment ids"),
        ("wandb", {"entity": "lab", "projects": "resnet"}, "Option 'projects' must be a JSON list of text"),
    ],
)  # fmt: skip
def test_options_the_kind_does_not_know_or_cannot_read_are_refused_by_name(client, operator, kind, options, message):
    """The form took any JSON object: a misspelt option was ignored without a word, "no" for a
    true/false option read as true, and a wrong value surfaced only at the next pull."""
    import json
    import re
    from html import unescape

    client.force_login(operator)
    data = form_data(name="c", kind=kind, options=json.dumps(options), cluster="" if kind == "prometheus" else "c1")
    response = client.post(reverse("connectors:create"), data)
    assert response.status_code == 200 and not Connector.objects.exists()
    field = re.search(
        r'<div class="field invalid">(?:(?!<div).)*?for="id_options".*?</div>', response.content.decode(), re.S
    )
    assert field and message in unescape(field.group(0))


def test_every_option_a_kind_reads_is_declared_and_every_declared_one_is_read():
    """The form refuses options a kind does not declare: a kind reading one it did not declare could
    never be set from the form, and one declared but never read would be accepted and ignored."""
    import inspect
    import re

    from fleet.connectors.options import OPTION_TYPES
    from fleet.connectors.registry import kinds

    for kind, cls in kinds().items():
        source = inspect.getsource(inspect.getmodule(cls))
        read = set(re.findall(r"options(?:\.get\(|\[|, )\"(\w+)\"", source))
        assert read == set(cls.options_schema), kind
        assert set(cls.options_schema.values()) <= set(OPTION_TYPES), kind


RAW_LIBRARY_TEXT = (
    "HTTPConnectionPool",
    "HTTPSConnectionPool",
    "Max retries",
    "NewConnectionError",
    "Errno",
    "Caused by",
)


def _closed_port() -> int:
    import socket

    with socket.socket() as probe:  # a port just free: nothing listens on it
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_pull_or_check_that_gets_no_answer_says_so_in_a_sentence_and_logs_the_rest(
    client, operator, settings, caplog, django_capture_on_commit_callbacks
):
    """A failed pull or check showed urllib3's text on the page: "HTTPConnectionPool(host='127.0.0.1',
    port=...): Max retries exceeded with url: /jobs?limit=1 (Caused by NewConnectionError(...))", and
    a pull's last error began with the exception's class ("TransientError: ...")."""
    import logging

    settings.CONNECTOR_HTTP_RETRIES = 1
    settings.CONNECTOR_HTTP_BACKOFF = 0.01
    settings.CONNECTOR_HTTP_TIMEOUT = 0.5
    port = _closed_port()
    connector = Connector.objects.create(name="g", kind="generic", url=f"http://127.0.0.1:{port}", cluster="c1")
    refused = f"127.0.0.1:{port} refused the connection: check the port in the URL and that the service is running."
    client.force_login(operator)
    with caplog.at_level(logging.WARNING, logger="fleet.connectors"):
        checked = client.post(reverse("connectors:check", args=[connector.pk]), follow=True).content.decode()
        with django_capture_on_commit_callbacks(execute=True):
            client.post(reverse("connectors:sync", args=[connector.pk]))
    assert f"g: {refused}" in checked.replace("&#x27;", "'")
    connector.refresh_from_db()
    assert connector.last_error == refused
    pages = [
        checked,
        client.get(reverse("connectors:detail", args=[connector.pk])).content.decode(),
        client.get(reverse("connectors:list")).content.decode(),
        client.get(reverse("fleet:ingest-run-detail", args=[connector.last_run_id])).content.decode(),
    ]
    assert all(refused in page for page in pages[1:])
    assert not [(n, raw) for n, page in enumerate(pages) for raw in RAW_LIBRARY_TEXT if raw in page]
    assert not [n for n, page in enumerate(pages) if "TransientError" in page]
    # Kept for whoever debugs: the library's text, and the kind of failure.
    assert "Max retries exceeded" in caplog.text and "Connection refused" in caplog.text
    assert f"TransientError: {refused}" in caplog.text


def _answer(status, body):
    return lambda path, query: (status, body(query) if callable(body) else body, {})


@pytest.mark.parametrize(
    ("status", "body", "message"),
    [
        (401, lambda q: {"error": f"bad token {q['_headers'].get('Authorization')}"},
         '{where} refused the credentials (HTTP 401, "bad token (secret removed)"): check the auth kind '
         "and the secret, or the variable or file it is read from."),
        (403, {"message": "forbidden"},
         '{where} does not let these credentials read /api/jobs (HTTP 403, "forbidden"): check the permissions of '
         "the account or token."),
        (404, {"message": "no route"}, '{where} has nothing at /api/jobs (HTTP 404, "no route"): check the path in '
         "the URL, and the API version."),
        (503, {"error": "down"}, "{where} answered HTTP 503 (a server error) to every try at /api/jobs: check the "
         "service's health and logs."),
    ],
)  # fmt: skip
def test_an_http_error_is_a_sentence_naming_the_host_and_what_to_check(
    client, operator, settings, status, body, message
):
    from tests.connector_servers import FakePlatform

    settings.CONNECTOR_HTTP_RETRIES = 0
    client.force_login(operator)
    with FakePlatform() as server:
        server.route("/api/jobs", _answer(status, body))
        connector = Connector(name="g", kind="generic", url=server.url + "/api", cluster="c1", auth="bearer")
        connector.set_secret(SECRET)
        connector.save()
        page = client.post(reverse("connectors:check", args=[connector.pk]), follow=True).content.decode()
    expected = message.format(where=server.url.removeprefix("http://"))
    assert f"g: {expected}" in page.replace("&#x27;", "'").replace("&quot;", '"')
    assert SECRET not in page and not [raw for raw in RAW_LIBRARY_TEXT if raw in page]


@pytest.mark.parametrize(
    ("auth", "fields", "sent"),
    [
        # What each kind of auth puts on the wire, which a server may quote back whole.
        ("basic", {"username": "svc"}, base64.b64encode(f"svc:{SECRET}".encode()).decode()),
        ("bearer", {}, SECRET),
        ("header", {"secret_header": "X-Token"}, SECRET),
    ],
)
def test_a_server_quoting_the_credentials_back_has_them_cut_from_every_message(
    client, operator, settings, caplog, django_capture_on_commit_callbacks, auth, fields, sent
):
    """With basic auth the password was cut from a server's quoted error, but the `Authorization:
    Basic <base64 of user:password>` it had been sent was shown whole: anyone reading the connector's
    page could decode the password from it."""
    import logging

    from tests.connector_servers import FakePlatform

    settings.CONNECTOR_HTTP_RETRIES = 0

    def quote_the_request(query):
        headers = query["_headers"]
        return {"error": f"denied: Authorization={headers.get('Authorization')} X-Token={headers.get('X-Token')}"}

    client.force_login(operator)
    with FakePlatform() as server, caplog.at_level(logging.INFO):
        server.route("/api/jobs", _answer(401, quote_the_request))
        connector = Connector(name="g", kind="generic", url=server.url + "/api", cluster="c1", auth=auth, **fields)
        connector.set_secret(SECRET)
        connector.save()
        checked = client.post(reverse("connectors:check", args=[connector.pk]), follow=True).content.decode()
        with django_capture_on_commit_callbacks(execute=True):
            client.post(reverse("connectors:sync", args=[connector.pk]))
    connector.refresh_from_db()
    shown = {
        "check": checked,
        "last error": connector.last_error,
        "connector page": client.get(reverse("connectors:detail", args=[connector.pk])).content.decode(),
        "run page": client.get(reverse("fleet:ingest-run-detail", args=[connector.last_run_id])).content.decode(),
        "log": caplog.text,
    }
    assert "refused the credentials (HTTP 401" in connector.last_error
    assert "(secret removed)" in connector.last_error
    assert [where for where, text in shown.items() if sent in text or SECRET in text] == []


def test_an_unknown_host_a_silent_server_and_tls_to_plain_http_are_named(client, operator, settings, monkeypatch):
    import socket
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    settings.CONNECTOR_HTTP_RETRIES = 0
    settings.CONNECTOR_HTTP_TIMEOUT = 0.3
    real_getaddrinfo = socket.getaddrinfo

    def getaddrinfo(host, *args, **kwargs):  # the resolver's answer for a name nobody has, without a network
        if host == "no-such-host.example":
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    silent = socket.socket()  # takes connections (the kernel's backlog) and never answers
    silent.bind(("127.0.0.1", 0))
    silent.listen(5)
    plain = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)  # http only
    threading.Thread(target=plain.serve_forever, daemon=True).start()
    silent_at, plain_at = f"127.0.0.1:{silent.getsockname()[1]}", f"127.0.0.1:{plain.server_address[1]}"
    cases = {
        "http://no-such-host.example:6820": "The host name no-such-host.example could not be found: check its "
        "spelling in the URL, and the DNS.",
        f"http://{silent_at}": f"{silent_at} took the connection but did not answer within 0.3 s: check that the "
        "service is healthy, or raise CONNECTOR_HTTP_TIMEOUT.",
        f"https://{plain_at}": f"The TLS connection to {plain_at} failed (its certificate is not trusted, has "
        "expired or names another host, or it does not speak https): check the CA bundle and the URL's scheme and "
        "host name.",
    }
    client.force_login(operator)
    try:
        for n, (url, message) in enumerate(cases.items()):
            connector = Connector.objects.create(name=f"c{n}", kind="generic", url=url, cluster="c1")
            page = client.post(reverse("connectors:check", args=[connector.pk]), follow=True).content.decode()
            assert f"c{n}: {message}" in page.replace("&#x27;", "'"), url
            assert not [raw for raw in RAW_LIBRARY_TEXT if raw in page], url
    finally:
        plain.shutdown()
        plain.server_close()
        silent.close()


def test_a_connect_timeout_is_told_from_a_refused_connection():
    """A connect timeout needs an address that drops packets, which a test cannot count on: the
    exception requests raises for one, as it builds it, stands in."""
    import requests
    from urllib3.exceptions import ConnectTimeoutError, MaxRetryError, NewConnectionError

    from fleet.connectors.http import connection_problem

    url = "https://10.255.255.1:6443/api/v1/pods"
    timeout = requests.exceptions.ConnectTimeout(
        MaxRetryError(None, "/api/v1/pods", ConnectTimeoutError(None, "Connection to 10.255.255.1 timed out."))
    )
    assert connection_problem(timeout, url, 30) == (
        "10.255.255.1:6443 did not take the connection within 30 s: check the host and port, and that no firewall "
        "drops the traffic."
    )
    unreachable = requests.exceptions.ConnectionError(
        MaxRetryError(None, "/", NewConnectionError(None, "[Errno 101] Network is unreachable"))
    )
    assert connection_problem(unreachable, url, 30).startswith("Could not connect to 10.255.255.1:6443: check the URL")


def test_check_connection_tries_once_while_a_pull_retries(
    client, operator, settings, django_capture_on_commit_callbacks
):
    """Check connection ran under the pulls' policy: five retries with doubling backoff kept the
    operator half a minute on a spinning page to learn the service was down. A person waiting
    gets one try; a pull in the background still retries."""
    from tests.connector_servers import FakePlatform

    settings.CONNECTOR_HTTP_RETRIES = 2
    settings.CONNECTOR_HTTP_BACKOFF = 0.01
    client.force_login(operator)
    with FakePlatform() as server:
        server.route("/api/jobs", _answer(503, {"error": "down"}))
        connector = Connector.objects.create(name="g", kind="generic", url=server.url + "/api", cluster="c1")
        page = client.post(reverse("connectors:check", args=[connector.pk]), follow=True).content.decode()
        assert "answered HTTP 503" in page
        assert server.count("/api/jobs") == 1
        with django_capture_on_commit_callbacks(execute=True):
            client.post(reverse("connectors:sync", args=[connector.pk]))
        assert server.count("/api/jobs") == 1 + 3  # the pull: a try and two retries


def test_a_stored_secret_is_not_kept_for_a_url_on_another_server(client, operator):
    """Secrets are write-only, and a redirect to another server never gets them; yet editing the URL
    to another server kept the stored secret, and the next check or pull sent it there: whoever
    could edit a connector read its token at a server of their own."""
    client.force_login(operator)
    assert client.post(reverse("connectors:create"), form_data()).status_code == 302
    connector = Connector.objects.get(name="slurm-c1")
    moved = client.post(
        reverse("connectors:edit", args=[connector.pk]), form_data(secret="", url="https://collector.example:8443")
    )
    assert moved.status_code == 200
    assert "enter the secret again" in moved.content.decode()
    connector.refresh_from_db()
    assert connector.url == "http://127.0.0.1:9" and connector.secret() == SECRET
    # The same server (http to https on it included) keeps it; so does typing the secret again.
    for url, secret in (("http://127.0.0.1:9/slurm/", ""), ("https://collector.example:8443", "new-token")):
        saved = client.post(reverse("connectors:edit", args=[connector.pk]), form_data(secret=secret, url=url))
        assert saved.status_code == 302, saved.content.decode()[:2000]
    connector.refresh_from_db()
    assert connector.url == "https://collector.example:8443" and connector.secret() == "new-token"
    # Moving it with the secret cleared, and no auth, is fine too.
    cleared = form_data(secret="", clear_secret="on", auth="none", url="https://elsewhere.example")
    assert client.post(reverse("connectors:edit", args=[connector.pk]), cleared).status_code == 302


# --- A reference names only what the server's administrator allows ----------------------------------


@pytest.mark.parametrize(
    ("reference", "refused"),
    [
        ("env:SECRET_KEY", "The environment variable SECRET_KEY may not be read by connectors"),
        ("env:DATABASE_URL", "The environment variable DATABASE_URL may not be read by connectors"),
        ("env:HOME", "The environment variable HOME may not be read by connectors"),
        ("file:/etc/passwd", "The file /etc/passwd is not in a folder connectors may read"),
        ("file:{secrets}/../outside", "The file {secrets}/../outside is not in a folder connectors may read"),
        ("file:{secrets}/link", "The file {secrets}/link is not in a folder connectors may read"),
    ],
)
def test_a_reference_to_a_server_setting_or_any_file_is_refused(
    client, operator, settings, tmp_path, reference, refused
):
    """Operators are not the server's administrators, yet a reference could name any variable or
    file: env:SECRET_KEY on a connector pointed at a server of the operator's own, and Check
    connection sent the service's SECRET_KEY (or the database's password, or /etc/shadow) there."""
    secrets_dir = tmp_path / "secrets"
    secrets_dir.mkdir()
    (tmp_path / "outside").write_text("not a connector's")
    (secrets_dir / "link").symlink_to(tmp_path / "outside")
    settings.CONNECTOR_SECRET_ENV = ["FLEET_SECRET_*", "SECRET_KEY"]  # never the service's own, even if listed
    settings.CONNECTOR_SECRET_DIRS = [str(secrets_dir)]
    client.force_login(operator)
    reference = reference.format(secrets=secrets_dir)
    response = client.post(reverse("connectors:create"), form_data(secret="", secret_reference=reference))
    assert response.status_code == 200 and not Connector.objects.exists()
    page = response.content.decode().replace("&#x27;", "'")
    assert refused.format(secrets=secrets_dir) in page
    assert (
        f"on this server a secret reference may name env: the variables FLEET_SECRET_*, SECRET_KEY"
        f" (CONNECTOR_SECRET_ENV) and file: files under {secrets_dir} (CONNECTOR_SECRET_DIRS)" in page
    )


def test_an_allowed_reference_is_read_and_one_stored_before_the_limits_fails_the_check_by_name(
    client, operator, settings, tmp_path, monkeypatch
):
    settings.CONNECTOR_SECRET_DIRS = [str(tmp_path)]
    (tmp_path / "slurm-jwt").write_text("jwt-from-file\n")
    client.force_login(operator)
    data = form_data(secret="", secret_reference=f"file:{tmp_path}/slurm-jwt")
    assert client.post(reverse("connectors:create"), data).status_code == 302
    assert Connector.objects.get().secret() == "jwt-from-file"
    # A reference saved before the limits (or that the settings no longer allow) is refused when used.
    monkeypatch.setenv("DATABASE_URL", "postgres://fleet:db-password@db/fleet")
    old = Connector.objects.create(
        name="old", kind="generic", url="http://127.0.0.1:9", cluster="c1", auth="bearer", secret_ref="env:DATABASE_URL"
    )
    checked = client.post(reverse("connectors:check", args=[old.pk]), follow=True).content.decode()
    assert "the environment variable DATABASE_URL may not be read by connectors" in checked
    assert "db-password" not in checked


def test_without_secret_folders_no_file_may_be_named(client, operator, settings):
    settings.CONNECTOR_SECRET_DIRS = []
    client.force_login(operator)
    data = form_data(secret="", secret_reference="file:/run/secrets/slurm-jwt")
    page = client.post(reverse("connectors:create"), data).content.decode()
    assert "and no file (CONNECTOR_SECRET_DIRS)" in page and not Connector.objects.exists()


def test_a_time_watermark_reads_like_the_site_s_other_times(client, operator):
    """A Slurm pull's watermark is an ISO time with microseconds ('2026-11-20T09:14:07.123456+00:00');
    the list and the connector's page showed it raw. They show it as every other time, in UTC to the
    minute, with the exact value kept in the element's datetime and title; a cursor stays as it is."""
    slurm = Connector.objects.create(
        name="slurm-prod", kind="slurm", url="http://127.0.0.1:9", cluster="c1",
        watermark="2026-11-20T09:14:07.123456+00:00",
    )  # fmt: skip
    Connector.objects.create(name="runs", kind="generic", url="http://127.0.0.1:9", cluster="c2", watermark="cur-81f2")
    client.force_login(operator)
    for url in (reverse("connectors:list"), reverse("connectors:detail", args=[slurm.pk])):
        page = client.get(url).content.decode()
        assert ">2026-11-20 09:14 UTC</time>" in page
        assert ">2026-11-20T09:14:07.123456+00:00<" not in page
    assert "<code>cur-81f2</code>" in client.get(reverse("connectors:list")).content.decode()


def test_pull_now_while_a_pull_runs_says_so_and_queues_none(client, operator, monkeypatch):
    """A second pull would only find the lease taken and end as 'locked', unseen; the page says a
    pull is running (linking its run when the lease names one) instead of 'a pull was queued'."""
    from fleet.connectors import sync
    from fleet.connectors import views as connector_views
    from fleet.models import IngestRun

    queued = []
    monkeypatch.setattr(connector_views, "publish", lambda *args, **kwargs: queued.append(args))
    connector = Connector.objects.create(name="g", kind="generic", url="http://127.0.0.1:9", cluster="c1")
    run = IngestRun.objects.create(source=IngestRun.Source.CONNECTOR, connector=connector,
                                   status=IngestRun.Status.RUNNING)  # fmt: skip
    client.force_login(operator)
    sync_url = reverse("connectors:sync", args=[connector.pk])

    assert sync.acquire(connector.pk, sync.lease_token("a-running-pull", run.pk))
    page = client.post(sync_url, follow=True).content.decode()
    run_link = reverse("fleet:ingest-run-detail", args=[run.pk])
    said = f'A pull of g is already running (<a href="{run_link}">ingest run #{run.pk}</a>); no other was queued.'
    assert said in page
    assert "was queued." not in page.replace("no other was queued.", "") and queued == []

    # A lease that names no run yet (its pull is starting): said too, without a link; from the list, back to it.
    sync.release(connector.pk, sync.lease_token("a-running-pull", run.pk))
    assert sync.acquire(connector.pk, "a-starting-pull")
    response = client.post(sync_url, {"back": "list"}, follow=True)
    assert response.redirect_chain[-1][0] == reverse("connectors:list")
    assert "A pull of g is already running; no other was queued." in response.content.decode() and queued == []

    # Once the lease is free (or expired), Pull now queues one again.
    sync.release(connector.pk, "a-starting-pull")
    assert "A pull of g was queued." in client.post(sync_url, follow=True).content.decode() and len(queued) == 1


def _help_and_error(page: str, name: str) -> tuple[str, str]:
    """The help text and the error shown beside one field of the form ("" when it has none)."""
    import re
    from html import unescape

    def small(css: str, suffix: str) -> str:
        found = re.search(rf'<small class="{css}" id="id_{name}_{suffix}">(.*?)</small>', page, re.S)
        return unescape(found.group(1)) if found else ""

    return small("muted", "helptext"), small("error", "error")


def test_a_metrics_source_s_list_row_says_whom_it_serves_and_every_empty_cell_reads_alike(client, operator):
    """The Lag column read "series for: no connector yet" for a Prometheus connector; and empty cells
    were "—" in Last success and Lag, "–" in Watermark and blank in Last error."""
    from tests.reading import table_rows

    prom = Connector.objects.create(name="prom", kind="prometheus", url="https://prometheus:9090")
    Connector.objects.create(name="lonely-prom", kind="prometheus", url="https://prometheus2:9090")
    Connector.objects.create(name="slurm-prod", kind="slurm", url="http://slurmrestd:6820", cluster="c1",
                             metrics_from=prom)  # fmt: skip
    client.force_login(operator)
    rows = table_rows(client.get("/connectors/").content.decode(), "Connectors")
    lonely, served, slurm = sorted(rows)  # the name cell reads the name, then (on its own line) the series
    name, _kind, _health, success, lag, watermark, error, _every, _actions = served
    assert name.startswith("prom") and name.endswith("series for slurm-prod")
    assert lonely[0].endswith("serves no connector yet") and lonely[4] == lag
    assert lag == "– no lag of its own: a metrics source stores no jobs"
    assert (success, watermark, error) == ("–", "–", "–")
    assert slurm[3:7] == ["–", "–", "–", "–"]


@pytest.mark.parametrize(
    ("kind", "example"),
    [
        ("prometheus", "https://prometheus:9090"),
        ("slurm", "http://slurmrestd:6820"),
        ("kubernetes", "https://kubernetes.default.svc"),
        ("mlflow", "http://mlflow:5000"),
        ("wandb", "https://api.wandb.ai"),
        ("generic", "https://fleet-api.example.org"),
    ],
)
def test_the_url_help_gives_the_chosen_kind_s_example(client, operator, kind, example):
    client.force_login(operator)
    refused = client.post(reverse("connectors:create"), form_data(kind=kind, url="")).content.decode()
    help_text, _ = _help_and_error(refused, "url")
    assert f"e.g. {example}" in help_text
    others = {"https://prometheus:9090", "http://slurmrestd:6820", "https://api.wandb.ai"} - {example}
    assert not any(other in help_text for other in others), help_text
    connector = Connector.objects.create(name="x", kind=kind, url=example, cluster="c1")
    help_text, _ = _help_and_error(client.get(reverse("connectors:edit", args=[connector.pk])).content.decode(), "url")
    assert f"e.g. {example}" in help_text


def test_the_stored_url_field_s_help_names_no_one_kind_s_example():
    """The model's own help for a connector's URL said "e.g. https://prometheus:9090" for every kind, a
    Slurm, Kubernetes or W&B connector's too (the help any form made from the model shows, and the
    migrations record); each kind's example is the connector form's to give (`url_help`)."""
    from fleet.connectors.registry import kinds

    help_text = str(Connector._meta.get_field("url").help_text)
    examples = [cls.url_example for cls in kinds().values() if cls.url_example]
    assert "https://prometheus:9090" in examples and not any(example in help_text for example in examples)
    assert help_text.startswith("Base URL")


def test_the_empty_form_asks_for_a_kind_before_anything_that_depends_on_it(client, operator):
    client.force_login(operator)
    page = client.post(reverse("connectors:create"), {"interval_minutes": "15"}).content.decode()
    assert _help_and_error(page, "kind")[1] == "This field is required."
    assert _help_and_error(page, "cluster")[1] == ""  # a Prometheus connector needs none
    # Each kind's URL example is there before a kind is chosen.
    assert "https://prometheus:9090" in _help_and_error(page, "url")[0]
    assert "http://slurmrestd:6820" in _help_and_error(page, "url")[0]
    # Once a job-listing kind is chosen the cluster is asked for.
    page = client.post(reverse("connectors:create"), form_data(cluster="")).content.decode()
    assert _help_and_error(page, "cluster")[1] == "Jobs need a cluster name."


def test_a_wrong_w_and_b_option_error_shows_the_json_to_type(client, operator):
    client.force_login(operator)
    for options in ('{"entity": "vision-lab", "projects": "resnet"}', "{}", '{"entity": "vision-lab"}'):
        data = form_data(name="wandb", kind="wandb", auth="basic", username="api", secret_header="", headers="{}",
                         url="https://api.wandb.ai", options=options)  # fmt: skip
        _, error = _help_and_error(client.post(reverse("connectors:create"), data).content.decode(), "options")
        assert error and 'e.g. {"entity": "vision-lab", "projects": ["resnet", "llm"]}' in error, (options, error)


@pytest.mark.parametrize(
    ("field", "typed", "message"),
    [
        ("options", '{"api_version": "v0.0.41"\n "window_hours": 12}',
         "Options: not valid JSON at line 2, column 2: Expecting &#x27;,&#x27; delimiter."),
        ("options", "{api_version: 1}",
         "Options: not valid JSON at line 1, column 2: Expecting property name enclosed in double quotes."),
        ("headers", '{"X-Scope-OrgID": gpu}', "Headers: not valid JSON at line 1, column 19: Expecting value."),
        # Python's json reads these, and Django's field with it: nesting past the interpreter's stack
        # was a RecursionError (a server error); NaN, a lone surrogate and NUL would be saved on
        # SQLite and refused by PostgreSQL's jsonb (a server error there).
        ("options", "[" * 100_000, "Options: not valid JSON: nested too deeply."),
        ("options", '{"window_hours": NaN}',
         "Options: not valid JSON: NaN is not a JSON value (write null, or a number)."),
        ("options", '{"api_version": "\\ud800"}',
         "Options: not valid JSON: a \\ud800–\\udfff escape not paired as UTF-16 is not text."),
        ("options", '{"api_version": "v0\\u0000"}',
         "Options: api_version contains a NUL character (\\u0000), which cannot be stored; remove it."),
    ],
)  # fmt: skip
def test_json_that_does_not_parse_says_what_is_wrong_and_where_and_keeps_what_was_typed(
    client, operator, field, typed, message
):
    """Options and headers that were not JSON got Django's "Enter a valid JSON." (which field, and
    what about it?), and some JSON-like text a server error."""
    import re
    from html import escape

    client.force_login(operator)
    response = client.post(reverse("connectors:create"), form_data(**{field: typed}))
    assert response.status_code == 200 and not Connector.objects.exists()
    page = response.content.decode()
    error = re.search(rf'<small class="error" id="id_{field}_error">(.*?)</small>', page, re.S)
    assert error and error.group(1) == message
    assert escape(typed[:1000]) in page  # the text as typed, to correct it


def test_a_failing_connectors_row_says_what_its_count_counts_and_when_in_which_time_zone(client, operator):
    """The list said 'failing (104×)', a number with no unit (the connector's page says '104 failed pulls
    in a row'), and its last error's time had no time zone where its last success's, beside it, had."""
    from datetime import UTC, datetime

    from tests.reading import table_rows

    Connector.objects.create(
        name="slurm-prod",
        kind="slurm",
        url="http://slurmrestd:6820",
        cluster="c1",
        last_run_at=datetime(2026, 12, 7, 7, 48, tzinfo=UTC),
        last_success_at=datetime(2026, 12, 6, 5, 51, tzinfo=UTC),
        last_error="connection refused",
        last_error_at=datetime(2026, 12, 7, 7, 48, tzinfo=UTC),
        consecutive_failures=104,
    )
    Connector.objects.create(
        name="slurm-once", kind="slurm", url="http://slurmrestd2:6820", cluster="c2", consecutive_failures=1
    )
    client.force_login(operator)
    page = client.get("/connectors/").content.decode()
    rows = table_rows(page, "Connectors")
    once, prod = sorted(rows)
    # A date and its time keep to one line: in its narrow column the last success broke as '2026-12-' / '06 05:51'.
    assert '<span class="when">2026-12-06 05:51</span> UTC' in page
    assert prod[2] == "failing 104 failed pulls in a row" and once[2].endswith(" 1 failed pull in a row")
    assert prod[3] == "2026-12-06 05:51 UTC"
    assert prod[6] == "2026-12-07 07:48 UTC: connection refused"
