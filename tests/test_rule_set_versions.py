"""The Rules page's versions: an old version's thresholds beside the current ones, restoring one,
and going back to the defaults (each a new version that re-triages every job)."""

from __future__ import annotations

import re
from unittest import mock

import pytest
from django.urls import reverse

from fleet.models import AuditEvent
from tests.factories import JobFactory
from triage import services
from triage.models import RetriageRun, RuleSet
from triage.rules import default_thresholds

pytestmark = pytest.mark.django_db


def save(**changes) -> RuleSet:
    return services.save_rule_set(RuleSet.current().effective_thresholds() | changes, note="tuning").rule_set


def marked(page: str) -> set[str]:
    """The thresholds a version's page marks as differing from the current version."""
    return set(re.findall(r'<tr class="differs">\s*<td><code>(\w+)</code> <span class="tag">differs</span>', page))


def test_an_old_versions_thresholds_are_shown_beside_the_current_ones_with_the_differences_marked(
    client, operator, member_a
):
    """The Rules page listed the last 20 versions by number, date and note only: what v2 had set, and
    what it differs in from the current version, could not be seen."""
    RuleSet.current()
    v2 = save(install_min_s=900.0, min_samples=7)
    save(install_min_s=1200.0, min_samples=5)
    url = reverse("triage:rule-set-version", args=[2])
    client.force_login(member_a)
    assert client.get(url).status_code == 404
    client.force_login(operator)
    assert f'href="{url}">v2</a>' in client.get(reverse("triage:rule-set")).content.decode()

    page = client.get(url).content.decode()
    assert marked(page) == {"install_min_s", "min_samples"}
    assert (
        "2 thresholds differ from the current version v3: <code>min_samples</code>, <code>install_min_s</code>" in page
    )
    row = page.split("<td><code>install_min_s</code>", 1)[1].split("</tr>", 1)[0]
    # v2's value, the current one, the default and the unit, as the form shows them.
    assert re.findall(r'<td class="num">(?:<strong>)?([\d.]+)', row) == ["900.0", "1200.0", "600.0"]
    assert '<td class="unit">s</td>' in row
    row = page.split("<td><code>min_samples</code>", 1)[1].split("</tr>", 1)[0]
    assert re.findall(r'<td class="num">(?:<strong>)?([\d.]+)', row) == ["7", "5", "5"]  # counts whole
    assert v2.note in page

    current = client.get(reverse("triage:rule-set-version", args=[3])).content.decode()
    assert marked(current) == set() and "This is the version every job is triaged with now." in current
    save(install_min_s=900.0)  # v4: v2 differs from it only in min_samples
    assert marked(client.get(url).content.decode()) == {"min_samples"}
    assert client.get(reverse("triage:rule-set-version", args=[99])).status_code == 404


def test_an_old_version_is_restored_as_a_new_version_that_retriages_every_job(client, operator, member_a):
    """Going back to an earlier version's thresholds meant typing each of them into the form again."""
    JobFactory.create_batch(3)
    RuleSet.current()
    v2 = save(install_min_s=900.0)
    save(install_min_s=1200.0, min_samples=7)
    url = reverse("triage:rule-set-restore", args=[2])
    client.force_login(member_a)
    assert client.post(url).status_code == 404 and RuleSet.objects.count() == 3
    client.force_login(operator)
    assert client.get(url).status_code == 405
    page = client.get(reverse("triage:rule-set-version", args=[2])).content.decode()
    assert f'action="{url}"' in page and "Restore v2 as v4 and re-triage 3 jobs</button>" in page

    response = client.post(url, follow=True)
    assert "Saved rule set v4; every job is being re-triaged with it." in response.content.decode()
    v4 = RuleSet.objects.get(version=4)
    assert v4.effective_thresholds() == v2.effective_thresholds() and v4.note == "restored from v2"
    assert RetriageRun.objects.get(rule_set=v4).jobs_total == 3
    event = AuditEvent.objects.get(action="rule_set.restore")
    assert event.actor == operator and event.target_repr == "rule set v4"
    assert event.details == {
        "version": 4,
        "changed": {"install_min_s": [1200.0, 900.0], "min_samples": [7, 5]},
        "note": "restored from v2",
        "restored_from": 2,
    }
    # v2 is now the same as the current version: nothing to restore, and no re-triage.
    assert 'id="restore"' not in client.get(reverse("triage:rule-set-version", args=[2])).content.decode()
    response = client.post(url, follow=True)
    assert "Nothing changed; no new version was made." in response.content.decode()
    assert RuleSet.objects.count() == 4 and RetriageRun.objects.count() == 3  # v2, v3, v4
    assert client.post(reverse("triage:rule-set-restore", args=[99])).status_code == 404


def test_an_old_version_holding_a_value_refused_today_is_not_restored(client, operator):
    """Versions saved before the form bounded each unit can hold a share of 2 or 2.5 samples."""
    RuleSet.current()
    RuleSet.objects.create(version=2, thresholds={"min_coverage": 2, "min_samples": 2.5})
    services.save_rule_set(RuleSet.deployment_defaults(), note="the defaults again")  # v3
    client.force_login(operator)
    response = client.post(reverse("triage:rule-set-restore", args=[2]), follow=True)
    text = response.content.decode()
    assert "v2 was not restored: it holds a value refused today" in text
    assert "min_coverage: Ensure this value is less than or equal to 1" in text and "min_samples: Enter a whole" in text
    assert RuleSet.objects.count() == 3 and not AuditEvent.objects.filter(action="rule_set.restore").exists()


def test_reset_to_the_defaults_shows_what_changes_and_asks_before_it_retriages_every_job(client, operator, member_a):
    """Going back to the defaults meant retyping every threshold changed since; and since it re-triages
    every job, the Rules page's reset only leads to a page that says so, with the button that does it."""
    JobFactory.create_batch(2)
    RuleSet.current()
    save(install_min_s=900.0, min_samples=7)
    url = reverse("triage:rule-set-defaults")
    client.force_login(member_a)
    assert client.get(url).status_code == 404 and client.post(url).status_code == 404
    client.force_login(operator)
    rules = client.get(reverse("triage:rule-set")).content.decode()
    assert f'<a href="{url}">Reset every threshold to its default&hellip;</a>' in rules
    assert f'action="{url}"' not in rules  # no POST from the Rules page itself

    page = client.get(url).content.decode()
    assert marked(page) == {"min_samples", "install_min_s"}
    assert "2 thresholds of the current version v2 differ from the default" in page
    assert "re-triages every one of the 2 jobs" in page
    assert "Reset to the defaults as v3 and re-triage 2 jobs</button>" in page
    assert RuleSet.objects.count() == 2  # looking is not resetting

    response = client.post(url, follow=True)
    assert "Saved rule set v3; every job is being re-triaged with it." in response.content.decode()
    v3 = RuleSet.objects.get(version=3)
    assert v3.effective_thresholds() == default_thresholds() and v3.note == "reset to the defaults"
    assert RetriageRun.objects.get(rule_set=v3).jobs_total == 2
    event = AuditEvent.objects.get(action="rule_set.reset")
    assert event.actor == operator
    assert event.details["changed"] == {"min_samples": [7, 5], "install_min_s": [900.0, 600.0]}

    page = client.get(url).content.decode()
    assert "already has the default thresholds: resetting would change nothing" in page and 'id="reset"' not in page
    assert "Nothing changed; no new version was made." in client.post(url, follow=True).content.decode()
    assert RuleSet.objects.count() == 3


def test_reset_goes_back_to_version_1_s_thresholds_with_the_deployment_s_low_util_threshold(client, operator, settings):
    """A deployment that set LOW_UTIL_THRESHOLD=40 starts at 40 %; resetting took it to the built-in 50 %
    instead, so "reset to the defaults" and "restore v1" gave two different rule sets."""
    settings.LOW_UTIL_THRESHOLD = 40.0
    JobFactory()
    assert RuleSet.current().effective_thresholds()["low_util_threshold"] == 40.0
    save(low_util_threshold=30.0)
    client.force_login(operator)
    client.post(reverse("triage:rule-set-defaults"))
    v3 = RuleSet.objects.get(version=3)
    assert v3.effective_thresholds() == RuleSet.objects.get(version=1).effective_thresholds()
    assert v3.effective_thresholds()["low_util_threshold"] == 40.0


def test_the_rules_form_marks_the_thresholds_that_differ_from_the_deployment_s_defaults(client, operator, settings):
    """Rows off their default carried a class nothing styled, and the default shown was the built-in
    one: a deployment with LOW_UTIL_THRESHOLD=40 read its untouched version 1 as changed."""
    settings.LOW_UTIL_THRESHOLD = 40.0
    RuleSet.current()
    client.force_login(operator)
    page = client.get(reverse("triage:rule-set")).content.decode()
    assert "changed</span>" not in page and '<td class="num">40.0</td>' in page
    save(min_samples=7)
    page = client.get(reverse("triage:rule-set")).content.decode()
    assert re.findall(r"<code>(\w+)</code></label> <span class=\"tag\">changed</span>", page) == ["min_samples"]


def test_two_operators_saving_the_same_change_at_once_make_one_version(client, operator):
    """Both saves read the current version before either had saved, and the "nothing changed"
    comparison ran there, before the save took its lock: the second save made a version identical to
    the first's (and re-triaged every job again) instead of saying nothing changed."""
    from django.contrib.auth.models import Group
    from django.test import Client

    from fleet.access import OPERATORS_GROUP
    from tests.factories import UserFactory

    JobFactory.create_batch(2)
    RuleSet.current()
    url = reverse("triage:rule-set")
    form = RuleSet.current().effective_thresholds() | {"install_min_s": 900.0, "note": "tuning"}
    client.force_login(operator)
    other = Client()
    other_operator = UserFactory(username="otto-operator")
    other_operator.groups.add(Group.objects.get_or_create(name=OPERATORS_GROUP)[0])
    other.force_login(other_operator)
    real_save, others = services.save_rule_set, []

    def the_other_save_goes_first(*args, **kwargs):
        # This operator's POST has read v1 and is about to save: the other operator's identical POST,
        # which also read v1 (before this one saved), runs in full now and saves v2.
        if not others:
            others.append("running")
            others[0] = other.post(url, form, follow=True)
        return real_save(*args, **kwargs)

    with mock.patch.object(services, "save_rule_set", the_other_save_goes_first):
        response = client.post(url, form, follow=True)

    assert "Saved rule set v2; every job is being re-triaged with it." in others[0].content.decode()
    assert "Nothing changed; no new version was made." in response.content.decode()
    assert list(RuleSet.objects.values_list("version", flat=True)) == [2, 1]
    assert RetriageRun.objects.count() == 1
    saved = AuditEvent.objects.get(action="rule_set.save")
    assert saved.actor == other_operator and saved.details["changed"] == {"install_min_s": [600.0, 900.0]}


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_on_postgresql_a_save_waiting_for_the_lock_compares_with_the_version_saved_meanwhile():
    """PostgreSQL's locking read returns the rows as its statement began: a save that had waited on the
    lock went on comparing with (and numbering after) the version before the one just committed."""
    from concurrent.futures import ThreadPoolExecutor

    from django.db import connections
    from psycopg.types.json import Jsonb

    from tests.conftest import blocked_query, hold_lock, require_postgresql
    from tests.test_services import _worker_database_url
    from tests.waiting import wait_for

    require_postgresql("the save waits on a row lock held from another connection, which SQLite has not")
    first = RuleSet.current()
    thresholds = first.effective_thresholds() | {"install_min_s": 900.0}
    # Another operator's save of the same change, half-way: it holds the lock and has made v2, uncommitted.
    other, _ = hold_lock(
        _worker_database_url(), "SELECT id FROM triage_ruleset WHERE id = %s FOR NO KEY UPDATE", first.pk
    )
    pool = ThreadPoolExecutor(1)
    try:
        other.execute(
            "INSERT INTO triage_ruleset (version, thresholds, note, created_at) VALUES (2, %s, '', now())",
            (Jsonb(thresholds),),
        )

        def save_in_its_own_connection():
            try:
                return services.save_rule_set(thresholds, note="the same change")
            finally:
                connections.close_all()

        waiting = pool.submit(save_in_its_own_connection)
        wait_for(
            "the save to wait for the lock", blocked_query, 30, until=lambda blocked: "FOR NO KEY UPDATE" in blocked
        )
        other.commit()
        assert waiting.result(timeout=30) is None
    finally:
        other.close()  # before waiting for the thread: a failed test must not leave it waiting for ever
        pool.shutdown()
    assert list(RuleSet.objects.values_list("version", flat=True)) == [2, 1]
    assert not RetriageRun.objects.exists()
