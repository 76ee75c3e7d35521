"""The audit log page: each entry's details read as labelled values (not Python dict text), and the
log narrows by action and by who acted."""

from __future__ import annotations

import re

import pytest

from fleet import audit

pytestmark = pytest.mark.django_db


def details_cells(page: str) -> list[str]:
    return re.findall(r'<dl class="audit-details">(.*?)</dl>', page, re.S)


def test_readable_flattens_nested_details_joins_lists_and_shows_changes_as_old_to_new():
    details = {
        "version": 3,
        "changed": {"idle_util": [5, 10], "low_util_threshold": [30.0, 25.0]},
        "note": "",
        "fields": ["url", "token"],
        "reads_metrics": False,
        "labels": {"team": {"slug": "nlp"}},
        "blobs": [f"b{n}" for n in range(25)],
        "rows": [{"cluster": "alpha", "price": "2.5"}],
    }
    assert audit.readable(details) == [  # by key: the same on PostgreSQL, whose jsonb keeps no order
        ("blobs", ", ".join(f"b{n}" for n in range(20)) + " and 5 more"),
        ("changed.idle_util", "5 → 10"),
        ("changed.low_util_threshold", "30.0 → 25.0"),
        ("fields", "url, token"),
        ("labels.team.slug", "nlp"),
        ("note", "–"),
        ("reads_metrics", "no"),
        ("rows", "cluster: alpha; price: 2.5"),
        ("version", "3"),
    ]
    assert audit.readable({}) == [] and audit.readable(["a", "b"]) == [("details", "a, b")]


def test_the_page_shows_details_as_labelled_values_escaped_not_dict_text(operator_client, operator):
    audit.record(operator, "connector.edit", "prom", {"fields": ["url", "token"], "note": "<b>x</b>"})
    audit.record(operator, "rule_set.save", "v2", {"version": 2, "changed": {"idle_util": [5, 10]}})
    audit.record(None, "series.prune", "3 series")
    page = operator_client.get("/audit/").content.decode()
    assert "{&#x27;" not in page and "{'" not in page  # no Python dict text
    cells = details_cells(page)
    assert cells[0] == "<dt>changed.idle_util</dt><dd>5 → 10</dd><dt>version</dt><dd>2</dd>"
    assert cells[1] == "<dt>fields</dt><dd>url, token</dd><dt>note</dt><dd>&lt;b&gt;x&lt;/b&gt;</dd>"
    assert len(cells) == 2  # the prune has no details: a dash


@pytest.fixture
def entries(operator, researcher):
    audit.record(operator, "token.create", "t1", {"prefix": "aaa"})
    audit.record(operator, "token.revoke", "t1", {"prefix": "aaa"})
    audit.record(researcher, "feedback.remove", "answer 7")
    audit.record(None, "series.prune", "3 series", {"days": 90})


def whats(page: str) -> list[str]:
    return re.findall(r"<td><code>([a-z_.]+)</code></td>", page)


def test_the_log_narrows_by_action_and_by_who(operator_client, entries):
    page = operator_client.get("/audit/").content.decode()
    assert '<option value="token.create">token.create (1)</option>' in page
    assert '<option value="olivia-operator">olivia-operator (2)</option>' in page
    assert '<option value="system">system (1)</option>' in page
    assert whats(operator_client.get("/audit/?user=olivia-operator").content.decode()) == [
        "token.revoke",
        "token.create",
    ]
    assert whats(operator_client.get("/audit/?user=system").content.decode()) == ["series.prune"]
    both = operator_client.get("/audit/?user=olivia-operator&action=token.revoke").content.decode()
    assert whats(both) == ["token.revoke"] and '<option value="token.revoke" selected>' in both
    none = operator_client.get("/audit/?user=rita-researcher&action=token.revoke").content.decode()
    assert whats(none) == [] and "No entry matches these filters." in none


@pytest.mark.parametrize(
    ("query", "problem"),
    [
        ("action=token.explode", "Action: No entry records the action “token.explode”."),
        ("user=mallory", "Who: No entry was made by “mallory”."),  # as the form names it
        ("user=%3Cscript%3E", "Who: No entry was made by “&lt;script&gt;”."),
    ],
)
def test_an_unknown_action_or_user_is_said_not_an_empty_log(operator_client, entries, query, problem):
    response = operator_client.get(f"/audit/?{query}")
    assert response.status_code == 200
    page = response.content.decode()
    assert problem in page and "Showing every entry instead." in page and len(whats(page)) == 4


def test_the_filters_stay_across_pages(operator_client, operator, settings):
    for n in range(105):
        audit.record(operator, "token.create", f"t{n}")
    audit.record(None, "series.prune", "x")
    first = operator_client.get("/audit/?action=token.create").content.decode()
    assert 'href="?action=token.create&amp;page=2"' in first
    second = operator_client.get("/audit/?action=token.create&page=2").content.decode()
    assert whats(second) == ["token.create"] * 5


# What the page's intro calls each kind of recorded action (the part of its name before the dot).
INTRO_WORDS = {
    "rule_set": "thresholds",
    "price": "GPU-hour prices",
    "exchange_rate": "exchange rates",
    "token": "machine and personal API tokens",
    "personal_token": "machine and personal API tokens",
    "connector": "connectors",
    "team": "teams",
    "ingest_run": "ingest runs",
    "job": "jobs",
    "alert_webhook": "chat webhooks",
    "idle_alerts": "idle alerts",
    "digest": "digest retries",
    "feedback": "job owners' answers",
    "sso": "single sign-on",
    "storage": "orphaned files",
    "series": "metric series",
}


def test_the_intro_names_every_kind_of_action_the_log_records(operator_client):
    """The intro listed machine tokens but not personal ones, though their creation and revocation are
    recorded (and said nothing of exchange rates, chat webhooks, answers taken down, single sign-on or
    what the system itself records). Each kind of action the code records is named in it."""
    from html import unescape

    from tests.test_docs_audit_actions import recorded_actions

    page = operator_client.get("/audit/").content.decode()
    intro = " ".join(unescape(re.search(r"<h1>Audit log</h1>\s*<p[^>]*>(.*?)</p>", page, re.S).group(1)).split())
    kinds = {action.split(".")[0] for action in recorded_actions()}
    assert kinds <= set(INTRO_WORDS), f"say in the intro (and here) what these are: {kinds - set(INTRO_WORDS)}"
    missing = {kind: words for kind, words in INTRO_WORDS.items() if kind in kinds and words not in intro}
    assert not missing, f"the intro ({intro!r}) does not name {missing}"
