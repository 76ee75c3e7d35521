"""The audit log: every operator action that changes thresholds, prices, tokens, connectors or
data, or retries a digest, leaves one entry naming who, what and the change; operators read it."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from django.contrib.auth.models import Group

from fleet.access import OPERATORS_GROUP
from fleet.models import AuditEvent, Cluster, GpuModelPrice, MachineToken, PersonalToken
from tests.factories import ClusterFactory, JobFactory, UserFactory
from tests.test_connectors_ui import SECRET, form_data


@pytest.fixture
def staff_operator(db):
    """An operator who may use the admin (the admin needs is_staff on top of the role)."""
    user = UserFactory(username="sam-staff")
    user.is_staff = user.is_superuser = True
    user.save()
    user.groups.add(Group.objects.get_or_create(name=OPERATORS_GROUP)[0])
    return user


def actions() -> list[str]:
    return list(AuditEvent.objects.order_by("pk").values_list("action", flat=True))


def test_record_keeps_who_what_and_details(operator):
    from fleet import audit

    cluster = ClusterFactory(name="c1")
    event = audit.record(operator, "price.change", cluster, {"from": "1.0", "to": "2.0"})
    assert (event.actor, event.actor_name, event.target_type, event.target_id) == (
        operator,
        "olivia-operator",
        "fleet.cluster",
        str(cluster.pk),
    )
    assert audit.record(None, "retention.purge", "3 series").actor_name == "system"


def test_tokens_created_and_revoked_are_logged(client, operator):
    client.force_login(operator)
    client.post("/tokens/", {"name": "ci-pusher", "pushes_archives": "on"})
    token = MachineToken.objects.get(name="ci-pusher")
    client.post(f"/tokens/{token.prefix}/revoke/")
    assert actions() == ["token.create", "token.revoke"]
    event = AuditEvent.objects.get(action="token.create")
    assert event.actor == operator and event.details == {
        "prefix": token.prefix,
        "pushes_archives": True,
        "reads_metrics": False,
        "reads_reports": False,
        "reads_jobs": False,
    }
    assert token.prefix in event.target_repr or "ci-pusher" in event.target_repr


def test_a_tokens_audit_entries_name_it_by_its_prefix_never_by_its_hash(client, operator, researcher):
    """The library's id of a token is its prefix and its key's hash, which the tokens page keeps out of
    addresses: the audit log names a token by its prefix (what its row and its addresses show)."""
    client.force_login(operator)
    client.post("/tokens/", {"name": "ci-pusher", "pushes_archives": "on"})
    machine = MachineToken.objects.get(name="ci-pusher")
    client.post(f"/tokens/{machine.prefix}/edit/", {"reads_jobs": "on"})
    client.post(f"/tokens/{machine.prefix}/revoke/")
    client.force_login(researcher)
    client.post("/account/tokens/", {"name": "notebook", "lifetime": "30"})
    client.post("/account/tokens/", {"name": "laptop", "lifetime": "30"})
    mine = {token.name: token for token in PersonalToken.objects.filter(owner=researcher)}
    client.post(f"/account/tokens/{mine['notebook'].prefix}/revoke/")
    client.force_login(operator)
    client.post(f"/tokens/personal/{mine['laptop'].prefix}/revoke/")

    expected = [
        ("token.create", machine),
        ("token.change", machine),
        ("token.revoke", machine),
        ("personal_token.create", mine["notebook"]),
        ("personal_token.create", mine["laptop"]),
        ("personal_token.revoke", mine["notebook"]),
        ("personal_token.revoke", mine["laptop"]),
    ]
    events = list(AuditEvent.objects.order_by("pk"))
    assert [event.action for event in events] == [action for action, _ in expected]
    for event, (_, token) in zip(events, expected, strict=True):
        assert (event.target_type, event.target_id) == (token._meta.label_lower, token.prefix)
        kept = json.dumps([event.target_id, event.target_repr, str(event), event.details])
        # The hash (and each long piece of it: a hasher's salt, its digest), whole or cut short.
        pieces = [token.hashed_key, token.pk, *(part for part in token.hashed_key.split("$") if len(part) >= 8)]
        assert not [piece for piece in pieces if piece[:16] in kept], event.action


def test_the_admin_finds_a_tokens_entries_by_its_prefix(client, staff_operator):
    """An operator matches a token's row (its name and prefix… on the tokens page) to its entries: the
    admin's search takes the prefix."""
    client.force_login(staff_operator)
    for name in ("ci-pusher", "exporter"):
        client.post("/tokens/", {"name": name, "pushes_archives": "on"})
    pusher = MachineToken.objects.get(name="ci-pusher")
    client.post(f"/tokens/{pusher.prefix}/revoke/")
    found = client.get("/admin/fleet/auditevent/", {"q": pusher.prefix}).context["cl"].result_list
    assert sorted((event.action, event.target_repr) for event in found) == [
        ("token.create", "ci-pusher"),
        ("token.revoke", "ci-pusher"),
    ]


def test_a_threshold_change_is_logged_with_old_and_new_values(client, operator):
    from triage.models import RuleSet
    from triage.rules import THRESHOLDS

    client.force_login(operator)
    values = RuleSet.current().effective_thresholds()
    name = next(iter(THRESHOLDS))
    data = dict(values) | {name: values[name] + 1, "note": "looser"}
    assert client.post("/triage/rules/", data).status_code == 302
    event = AuditEvent.objects.get(action="rule_set.save")
    assert event.details["changed"] == {name: [values[name], values[name] + 1]}
    assert event.details["note"] == "looser"


def test_connector_create_edit_and_sync_are_logged_without_secrets(client, operator):
    from fleet.connectors.models import Connector

    client.force_login(operator)
    assert client.post("/connectors/new/", form_data()).status_code == 302
    connector = Connector.objects.get()
    data = form_data() | {"interval_minutes": "30", "secret": ""}
    assert client.post(f"/connectors/{connector.pk}/edit/", data).status_code == 302
    client.post(f"/connectors/{connector.pk}/sync/")
    assert actions() == ["connector.create", "connector.edit", "connector.sync"]
    assert "interval_minutes" in AuditEvent.objects.get(action="connector.edit").details["fields"]
    assert SECRET not in json.dumps(list(AuditEvent.objects.values()), default=str)


def test_a_digest_retry_is_logged(client, operator, team_a, settings):
    from unittest import mock

    from triage.digests.models import Delivery, DigestKind

    delivery = Delivery.objects.create(
        recipient="a@example.org", kind=DigestKind.TEAM, team=team_a, iso_week="2026-W45", status=Delivery.Status.FAILED
    )
    client.force_login(operator)
    with mock.patch("triage.digests.services.retry_delivery_group") as retry:
        client.post(f"/digests/deliveries/{delivery.pk}/retry/")
    retry.assert_called_once()
    event = AuditEvent.objects.get(action="digest.retry")
    assert event.details == {"kind": "team", "week": "2026-W45"}


def test_admin_price_changes_and_deletions_are_logged(client, staff_operator):
    client.force_login(staff_operator)
    cluster = ClusterFactory(name="c1")
    response = client.post(
        "/admin/fleet/gpumodelprice/add/",
        {"cluster": cluster.pk, "gpu_model": "A100", "price_per_gpu_hour": "2.5", "currency": "USD"},
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    price = GpuModelPrice.objects.get()
    client.post(
        f"/admin/fleet/gpumodelprice/{price.pk}/change/",
        {"cluster": cluster.pk, "gpu_model": "A100", "price_per_gpu_hour": "3.0", "currency": "USD"},
    )
    client.post(f"/admin/fleet/gpumodelprice/{price.pk}/delete/", {"post": "yes"})
    assert actions() == ["price.create", "price.change", "price.delete"]
    change = AuditEvent.objects.get(action="price.change")
    assert Decimal(change.details["price_per_gpu_hour"]) == Decimal("3")
    assert change.details["fields"] == ["price_per_gpu_hour"]


def test_admin_exchange_rate_changes_are_logged_and_the_reporting_currency_refused(client, staff_operator):
    from fleet.models import ExchangeRate

    client.force_login(staff_operator)
    refused = client.post("/admin/fleet/exchangerate/add/", {"currency": "USD", "rate": "1"})
    assert refused.status_code == 200 and "USD is the reporting currency: its rate is 1." in refused.content.decode()
    assert client.post("/admin/fleet/exchangerate/add/", {"currency": "EUR", "rate": "1.08"}).status_code == 302
    rate = ExchangeRate.objects.get()
    client.post(f"/admin/fleet/exchangerate/{rate.pk}/change/", {"currency": "EUR", "rate": "1.1"})
    client.post(f"/admin/fleet/exchangerate/{rate.pk}/delete/", {"post": "yes"})
    assert actions() == ["exchange_rate.create", "exchange_rate.change", "exchange_rate.delete"]
    change = AuditEvent.objects.get(action="exchange_rate.change")
    assert change.details == {"fields": ["rate"], "currency": "EUR", "rate": "1.1"}


def test_prices_edited_inline_on_the_cluster_are_logged(client, staff_operator):
    client.force_login(staff_operator)
    cluster = ClusterFactory(name="c1", description="")
    prefix = "prices"
    data = {
        "name": "c1",
        "description": "",
        f"{prefix}-TOTAL_FORMS": "1",
        f"{prefix}-INITIAL_FORMS": "0",
        f"{prefix}-0-gpu_model": "",
        f"{prefix}-0-price_per_gpu_hour": "1.25",
        f"{prefix}-0-currency": "EUR",
    }
    response = client.post(f"/admin/fleet/cluster/{cluster.pk}/change/", data)
    assert response.status_code == 302, response.content.decode()[:3000]
    assert GpuModelPrice.objects.filter(cluster=cluster).exists()
    assert actions() == ["price.create"]
    assert AuditEvent.objects.get().details["currency"] == "EUR"
    assert Cluster.objects.count() == 1


def test_admin_job_deletion_is_logged(client, staff_operator):
    client.force_login(staff_operator)
    job = JobFactory()
    client.post(f"/admin/fleet/job/{job.pk}/delete/", {"post": "yes"})
    assert actions() == ["job.delete"]


def test_admin_lists_answers_read_only_and_logs_their_deletion(client, staff_operator, member_a):
    from triage.models import Feedback

    client.force_login(staff_operator)
    given = Feedback.objects.create(
        job=JobFactory(), category="model_checkpointing", user=member_a, verdict="wrong", comment="spam spam"
    )
    listed = client.get("/admin/triage/feedback/", {"q": "spam"}).content.decode()
    assert "alice-member" in listed and "/admin/triage/feedback/add/" not in listed  # nobody writes answers here
    assert client.post(f"/admin/triage/feedback/{given.pk}/change/", {"verdict": "right"}).status_code == 403
    given.refresh_from_db()
    assert (given.verdict, given.comment) == ("wrong", "spam spam")  # an author's words are not edited
    client.post(f"/admin/triage/feedback/{given.pk}/delete/", {"post": "yes"})
    assert not Feedback.objects.exists()
    event = AuditEvent.objects.get()
    assert event.action == "feedback.delete"
    assert (event.details["author"], event.details["comment"]) == ("alice-member", "spam spam")


def test_the_audit_page_is_for_operators_and_shows_entries_escaped(client, operator, member_a):
    from fleet import audit

    audit.record(operator, "token.create", "<script>alert(1)</script>", {"prefix": "abc"})
    audit.record(operator, "connector.sync", "prom")
    client.force_login(member_a)
    assert client.get("/audit/").status_code == 404
    client.force_login(operator)
    page = client.get("/audit/").content.decode()
    assert "token.create" in page and "connector.sync" in page and "olivia-operator" in page
    assert "<script>alert(1)" not in page and "&lt;script&gt;" in page
    only = client.get("/audit/?action=connector.sync").content.decode()
    assert "prom" in only and "&lt;script&gt;" not in only
