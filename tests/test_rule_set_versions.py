"""The Rules page's versions: an old version's thresholds beside the current ones, restoring one,
and going back to the defaults (each a new version that re-triages every job)."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from triage import services
from triage.models import RuleSet

pytestmark = pytest.mark.django_db


def save(**changes) -> RuleSet:
    rule_set, _ = services.save_rule_set(RuleSet.current().effective_thresholds() | changes, note="tuning")
    return rule_set


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
    assert "<td>s</td>" in row
    row = page.split("<td><code>min_samples</code>", 1)[1].split("</tr>", 1)[0]
    assert re.findall(r'<td class="num">(?:<strong>)?([\d.]+)', row) == ["7", "5", "5"]  # counts whole
    assert v2.note in page

    current = client.get(reverse("triage:rule-set-version", args=[3])).content.decode()
    assert marked(current) == set() and "This is the version every job is triaged with now." in current
    save(install_min_s=900.0)  # v4: v2 differs from it only in min_samples
    assert marked(client.get(url).content.decode()) == {"min_samples"}
    assert client.get(reverse("triage:rule-set-version", args=[99])).status_code == 404
