"""Check connection for a connector that takes its series from a metrics source (a Slurm or generic
connector with metrics_from Prometheus), against loopback servers: its pulls fail when that source does
not answer, and Check connection said only that the connector answered."""

from __future__ import annotations

import pytest
from django.urls import reverse

from fleet.connectors.models import Connector
from tests.connector_servers import FakePlatform
from tests.test_connectors_sync import GenericApi

pytestmark = pytest.mark.django_db


def test_check_connection_checks_the_metrics_source_too(client, operator, settings):
    settings.CONNECTOR_HTTP_RETRIES = 0
    client.force_login(operator)
    with FakePlatform() as platform, FakePlatform() as prometheus:
        GenericApi(1).install(platform)
        prometheus.route("/api/v1/labels", lambda path, query: (200, {"status": "success", "data": ["Hostname"]}, {}))
        prom = Connector.objects.create(name="prom", kind="prometheus", url="http://127.0.0.1:9")  # nothing there
        api = Connector.objects.create(name="api", kind="generic", url=platform.url, cluster="c1", metrics_from=prom)
        check = reverse("connectors:check", args=[api.pk])

        said = client.post(check, follow=True).content.decode()
        assert (
            "api: it answers, but its metrics source prom does not, so its pulls fail: 127.0.0.1:9 refused the "
            "connection: check the port in the URL and that the service is running." in said
        )
        Connector.objects.filter(pk=prom.pk).update(url=prometheus.url)
        said = client.post(check, follow=True).content.decode()
        assert "api answers. jobs_endpoint: True, metrics from prom: answers" in said
        assert prometheus.count("/api/v1/labels") == 1
