"""Whatever a query string or form holds, no page and no API answer is a server error.

Every GET row of the access matrix (docs/access-control.md) is opened as a role that may open it
(with a 200; the operator where they may), the query parameters it offers are read off it (its
forms' fields and its links' parameters), and it is requested again with hostile values in them:
a NUL character (PostgreSQL refuses it in any text), dates and times at the ends of the calendar or
with an offset PostgreSQL refuses, numbers too large for any column, words where a number belongs,
markup, text longer than SQLite matches a pattern against, invalid UTF-8 in the address, a parameter
given several times. Refusing (4xx) or ignoring a value are both fine; 5xx is not. Run in CI on PostgreSQL,
where most of these first failed.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from urllib.parse import parse_qsl, quote, urlsplit

import pytest
from django.http import QueryDict
from django.test import Client
from django.utils.datastructures import MultiValueDict

from config import middleware
from config.middleware import NUL_MESSAGE
from tests.test_access_matrix import ROWS, client_for

HOSTILE = [
    "\x00",
    "0001-01-01",
    "9999-12-31",
    "0001-01-01T00:00:00+05:00",
    "2026-11-02T00:00:00+17:47",
    "99999999999999999999",
    str(10**40),  # past a bigint by far (2**63 is 19 digits)
    "-1",
    "nan",
    "1e400",
    "-inf",
    "last",
    "é<script>'\"",
    "x" * 3000,
    "1.5",
    "2026-02-30",
    "Mars/Olympus",
]
# Each alone in every parameter as well: a parameter refused first can hide the next one's failure.
EACH_ALONE = ["\x00", "0001-01-01T00:00:00+05:00", "99999999999999999999", str(10**40), "1e400", "x" * 100_000]
# (100,000 characters: past SQLite's limit on a LIKE pattern, 50,000 bytes; the jobs list's search failed.)

PROBE = "unknown_parameter"  # read by name only as the query string is parsed
OPENERS = ["operator", "researcher", "member", "token"]  # in this order of preference
PAGES = [row for row in ROWS if row.method == "GET" and any(row.expected[role] == "200" for role in OPENERS)]


def offered_parameters(html: str) -> set[str]:
    """The query parameters a page offers: its form fields' names and its links' parameters."""
    names = set(re.findall(r'<(?:input|select|textarea)[^>]*\bname="([^"]+)"', html))
    for href in re.findall(r'href="([^"#]*\?[^"#]*)"', html):
        names.update(key for key, _ in parse_qsl(urlsplit(href.replace("&amp;", "&")).query))
    return names - {"csrfmiddlewaretoken"}


class ParameterReads:
    """Which query parameters a request's handling reads, by name, or that it read them all.

    A hostile value alone in a parameter no code reads gives the same answer as no value at all,
    so each value is sent alone only to the parameters read. Reading a value by its name is
    recorded; going through every parameter (items(), keys(), iterating: the admin's changelist
    filters do) counts as reading all of them, except where only the whole query is echoed into
    a link (urlencode, copy) and the NUL check every request passes (`_with_nul`).
    """

    BY_NAME = ("__getitem__", "get", "getlist", "pop", "setdefault", "__contains__")
    ALL = ("items", "lists", "values", "keys", "__iter__", "dict")
    ECHO = ("urlencode", "__deepcopy__", "__copy__")

    def __init__(self):
        self.names: set[str] = set()
        self.everything = False
        self._echoing = 0

    @contextmanager
    def recording(self, monkeypatch):
        recorder = self

        def by_name(method):
            def recorded(self, key, *args, **kwargs):
                if isinstance(self, QueryDict) and not recorder._echoing:
                    recorder.names.add(key)
                return method(self, key, *args, **kwargs)

            return recorded

        def all_of(method):
            def recorded(self, *args, **kwargs):
                if isinstance(self, QueryDict) and not recorder._echoing:
                    recorder.everything = True
                return method(self, *args, **kwargs)

            return recorded

        def echo(method):
            def recorded(self, *args, **kwargs):
                recorder._echoing += 1
                try:
                    return method(self, *args, **kwargs)
                finally:
                    recorder._echoing -= 1

            return recorded

        with monkeypatch.context() as patch:
            for wrap, names in ((by_name, self.BY_NAME), (all_of, self.ALL), (echo, self.ECHO)):
                for name in names:
                    # Where the method is defined; dict's own (keys, `in`) are shadowed on MultiValueDict.
                    owners = [cls for cls in (QueryDict, MultiValueDict) if name in vars(cls)] or [MultiValueDict]
                    for cls in owners:
                        patch.setattr(cls, name, wrap(vars(cls).get(name) or getattr(dict, name)))
            patch.setattr(middleware, "_with_nul", echo(middleware._with_nul))
            yield self


@pytest.mark.parametrize("row", PAGES, ids=[row.id for row in PAGES])
def test_no_query_string_makes_a_page_fail(row, world, monkeypatch):
    client = client_for(next(role for role in OPENERS if row.expected[role] == "200"), world)
    # A row's own query (the jobs list as CSV) stays under every hostile one: without it the row was
    # its page without the query again, the same requests twice and the CSV export never sent one.
    path, _, own_query = row.path.format(**world["params"]).partition("?")
    own = dict(parse_qsl(own_query))
    page = client.get(path, own)
    assert page.status_code == 200
    # What the page reads given one parameter, one it does not know: given none, some pages read
    # nothing at all (`request.GET or None`), so that would say nothing of a parameter given alone.
    with ParameterReads().recording(monkeypatch) as reads:
        assert client.get(path, {**own, PROBE: "1"}).status_code < 500
    names = offered_parameters(page.content.decode()) if "html" in page["Content-Type"] else set()
    names |= {"page", "sort", "from", "to", "cluster", "team", "start", "end", "after"}  # common to many pages
    names |= {"run", "ingest_run"}  # the jobs list's and API's ingest run, offered by the run's page
    # Ids and numbers some pages read that none of their forms or links may offer.
    names |= {"study", "job", "item", "version", "rule_set", "gold", "line", "events", "max_id", "before", "week"}
    failures = []
    queries = [dict.fromkeys(names, value) for value in HOSTILE]
    # A parameter the page does not read beside an unknown one is not read when it is given alone
    # either: up to its first read the two requests take the same path, so there is none.
    alone = names if reads.everything else {name for name in reads.names if isinstance(name, str)} - {PROBE}
    queries += [{name: value} for name in sorted(alone) for value in EACH_ALONE]
    for query in queries:
        response = client.get(path, {**own, **query})
        if response.status_code >= 500:
            failures.append(f"{response.status_code} for {query!r:.120}")
    # Bytes no UTF-8 text holds (a lone surrogate's encoding too), each parameter given three times.
    raw = "&".join(f"{quote(name)}=%ff%fe&{quote(name)}=%ed%a0%80&{quote(name)}=1" for name in sorted(names))
    response = client.get(f"{path}?{'&'.join(filter(None, (own_query, raw)))}")
    if response.status_code >= 500:
        failures.append(f"{response.status_code} for invalid UTF-8 in every parameter, each given three times")
    assert not failures, f"{path} (parameters {sorted(names)}):\n" + "\n".join(failures)


def test_a_nul_in_the_query_or_a_form_is_a_clear_400_on_pages_and_the_api(world):
    from fleet.models import MachineToken

    client = Client()
    client.force_login(world["users"]["operator"])
    page = client.get("/overview/", {"cluster": "c1\x00", "period": "7d"})
    assert page.status_code == 400
    assert page.content.decode() == f"The field cluster {NUL_MESSAGE}"
    api = client.get("/api/v1/jobs/", {"team": "\x00", "user": "ann"})
    assert api.status_code == 400 and api.json() == {"team": [f"This {NUL_MESSAGE}"]}
    tokens = MachineToken.objects.count()
    form = client.post("/tokens/", {"name": "rack\x00-7"})
    assert form.status_code == 400 and form.content.decode() == f"The field name {NUL_MESSAGE}"
    assert MachineToken.objects.count() == tokens
    revoke = client.post(f"/tokens/{world['params']['token_spare']}%00/revoke/")
    assert revoke.status_code == 400 and revoke.content.decode() == f"The address {NUL_MESSAGE}"
    assert not MachineToken.objects.filter(revoked=True).exists()
    api_path = client.get("/api/v1/ingest-runs/%00/")
    assert api_path.status_code == 400 and api_path.json() == {"address": [f"This {NUL_MESSAGE}"]}
    assert client.get("/overview/", {"cluster": "c1"}).status_code == 200


def test_a_version_that_is_not_a_number_finds_nothing(world):
    """Study pages read versions and positions from the address and forms: words are no version."""
    params = world["params"]
    lead = Client()
    lead.force_login(world["users"]["operator"])  # the lead of study_other
    url = f"/studies/{params['study_other']}/rules/triage/"
    assert lead.post(url, {"gold": "first", "rule_set": "1"}).status_code == 404
    rater = Client()
    rater.force_login(world["users"]["researcher"])
    response = rater.get(f"/studies/{params['study']}/label/", {"after": "last"})
    assert response.status_code == 302  # to the first job to label, or the study when all are done


def test_the_parameters_recorded_as_read_are_the_ones_a_page_reads(world, monkeypatch):
    """The recording that chooses which parameters get each hostile value alone: were it to miss
    reads (a change in Django's QueryDict), the test above would quietly send fewer values."""
    client = client_for("operator", world)
    with ParameterReads().recording(monkeypatch) as reads:
        assert client.get("/overview/", {PROBE: "1"}).status_code == 200
    assert {"period", "from", "to", "cluster"} <= reads.names and not reads.everything
    assert "page" not in reads.names  # offered by many pages, read by the jobs list, not here
    with ParameterReads().recording(monkeypatch) as reads:
        assert client.get("/healthz", {PROBE: "1"}).status_code == 200
    assert reads.names <= {PROBE} and not reads.everything  # the NUL check reads every request's query
    with ParameterReads().recording(monkeypatch) as reads:
        assert client.get("/api/v1/jobs/", {PROBE: "1"}).status_code == 400  # names what it does not know
    assert reads.everything  # it goes through every parameter to find those it does not know
