"""Pull now without REDIS_URL (the embedded mode of `make demo`, where the README's first walk leads):
the task runs in the request, against a loopback server here, and the page said 'A pull of api was
queued.' after the pull had run (half a minute, for a platform that refused the connection) and
ended; it now says how it ended."""

from __future__ import annotations

import pytest
from django.urls import reverse

from fleet.connectors.models import Connector
from tests.connector_servers import FakePlatform
from tests.test_connectors_sync import GenericApi

pytestmark = pytest.mark.django_db


def said(client, connector) -> str:
    page = client.post(reverse("connectors:sync", args=[connector.pk]), follow=True).content.decode()
    return " ".join(page.split())


def test_pull_now_in_the_embedded_mode_says_how_the_pull_ended(client, operator, settings):
    settings.CONNECTOR_HTTP_RETRIES = 0  # tasks run in-process here (conftest), as without REDIS_URL
    client.force_login(operator)
    with FakePlatform() as platform:
        GenericApi(3).install(platform)
        api = Connector.objects.create(name="api", kind="generic", url=platform.url, cluster="c1")
        page = said(client, api)
        run = api.runs.get()
        link = reverse("fleet:ingest-run-detail", args=[run.pk])
        assert f'A pull of api ran (<a href="{link}">ingest run #{run.pk}</a>): 3 new, 0 updated, 0 unchanged.' in page
        assert "was queued" not in page

    down = Connector.objects.create(name="down", kind="generic", url="http://127.0.0.1:9", cluster="c2")
    page = said(client, down)
    run = down.runs.get()
    assert (
        f'The pull of down failed (<a href="{reverse("fleet:ingest-run-detail", args=[run.pk])}">ingest run '
        f"#{run.pk}</a>): 127.0.0.1:9 refused the connection: check the port in the URL and that the service is "
        "running." in page
    )
    prom = Connector.objects.create(name="prom", kind="prometheus", url="http://127.0.0.1:9")
    assert "prom was checked: 127.0.0.1:9 refused the connection" in said(client, prom)
