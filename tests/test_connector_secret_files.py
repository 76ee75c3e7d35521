"""A connector's secret file (`file:/run/secrets/...`) is read on every pull and check: read whole, a
reference naming the wrong file (a log, a tarball) was held in memory and sent as a header to the
platform on every request. Only the first SECRET_FILE_MAX_BYTES are read; a bigger file fails the
check and the pull naming the file, and nothing is sent."""

from __future__ import annotations

import pytest
from django.urls import reverse

from fleet.connectors import sync
from fleet.connectors.models import Connector
from fleet.connectors.secrets import SECRET_FILE_MAX_BYTES
from tests.connector_servers import FakePlatform
from tests.test_connectors_sync import GenericApi

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _one_try(settings):
    settings.CONNECTOR_HTTP_RETRIES = 0


def test_a_secret_file_far_bigger_than_a_token_fails_by_name_and_is_never_sent(client, operator, settings, tmp_path):
    settings.CONNECTOR_SECRET_DIRS = [str(tmp_path)]
    wrong = tmp_path / "slurmdbd.log"
    wrong.write_text("x" * (4 * SECRET_FILE_MAX_BYTES))  # one long line: nothing else would stop it
    fine = tmp_path / "api-token"
    fine.write_text("e" * 4000 + "\n")  # a long token is still read
    with FakePlatform() as server:
        GenericApi(1).install(server)
        connector = Connector.objects.create(
            name="api", kind="generic", url=server.url, cluster="c1", auth="bearer", secret_ref=f"file:{wrong}"
        )
        client.force_login(operator)
        checked = client.post(reverse("connectors:check", args=[connector.pk]), follow=True).content.decode()
        said = (
            f"the secret file {wrong} holds more than {SECRET_FILE_MAX_BYTES // 1024} KiB, far more than a token: "
            "check that the reference names the token&#x27;s file"
        )
        assert said in checked
        result = sync.sync_connector(connector.pk)
        assert result.status == "failed" and result.message == said.replace("&#x27;", "'")
        assert server.requests == []  # neither the check nor the pull sent it

        Connector.objects.filter(pk=connector.pk).update(secret_ref=f"file:{fine}")
        assert sync.sync_connector(connector.pk).created == 1
        assert server.requests[0][2]["_headers"]["Authorization"] == "Bearer " + "e" * 4000


def test_a_secret_reference_naming_a_pipe_fails_at_once_by_name(client, operator, settings, tmp_path):
    """Opening a named pipe waits for a writer: a reference naming one (a secret manager's agent not
    running, a mistake) held the pull, and Check connection's page, for ever."""
    import os
    import threading

    from fleet.connectors.base import ConfigError
    from fleet.connectors.secrets import resolve_reference

    settings.CONNECTOR_SECRET_DIRS = [str(tmp_path)]
    pipe = tmp_path / "token"
    os.mkfifo(pipe)
    outcome = []

    def resolve():
        try:
            resolve_reference(f"file:{pipe}")
        except ConfigError as exc:
            outcome.append(str(exc))

    reader = threading.Thread(target=resolve, daemon=True)
    reader.start()
    reader.join(5)
    if reader.is_alive():  # let the stuck open go, then fail
        os.close(os.open(pipe, os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail("reading the secret waited on the pipe")
    said = f"the secret file {pipe} is not a regular file (a folder, a pipe or a device)"
    assert outcome == [said]
    connector = Connector.objects.create(
        name="api", kind="generic", url="http://127.0.0.1:9", cluster="c1", auth="bearer", secret_ref=f"file:{pipe}"
    )
    client.force_login(operator)
    assert said in client.post(reverse("connectors:check", args=[connector.pk]), follow=True).content.decode()
