"""Whatever a form is sent, no page answers with a server error.

Every page of the access matrix that a role may open (as in tests/test_hostile_queries.py) is opened,
each form on it that posts is read (its action, its fields and their values as the page fills them),
and it is sent back with one field at a time replaced by a hostile value: words where a number
belongs, numbers too large for any column, a time with an offset PostgreSQL refuses or before year
1 in UTC, very long text, markup. A form error, a refusal or a redirect are all fine; 5xx is not.
"""

from __future__ import annotations

from html.parser import HTMLParser
from urllib.parse import urljoin

import pytest

from tests.test_access_matrix import client_for
from tests.test_hostile_queries import OPENERS, PAGES

HOSTILE = [
    "last",
    "99999999999999999999",
    "1e400",
    "-inf",
    "-1",
    "0001-01-01T00:00:00+05:00",
    "x" * 3000,
    "é<script>'\"",
]
# Forms that start work outside the request (a re-triage of the fleet, a connector's pull, sending
# digests) are sent too: in tests their tasks run in-process, which is the point.


class _Forms(HTMLParser):
    """The page's POST forms: [(action, {field: [values]})], values as the page fills them."""

    def __init__(self):
        super().__init__()
        self.forms: list[tuple[str, dict[str, list[str]]]] = []
        self._select: str | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form":
            if (attrs.get("method") or "get").lower() == "post":
                self.forms.append((attrs.get("action") or "", {}))
            else:
                self.forms.append(("", None))  # a GET form: its fields are the query test's
            return
        if not self.forms or self.forms[-1][1] is None:
            return
        fields = self.forms[-1][1]
        name = attrs.get("name")
        if tag == "input" and name and name != "csrfmiddlewaretoken":
            kind = (attrs.get("type") or "text").lower()
            if kind in ("checkbox", "radio"):
                if "checked" in attrs:
                    fields.setdefault(name, []).append(attrs.get("value") or "on")
                else:
                    fields.setdefault(name, [])
            elif kind not in ("submit", "button", "file", "image", "reset"):
                fields.setdefault(name, []).append(attrs.get("value") or "")
        elif tag == "textarea" and name:
            fields.setdefault(name, []).append("")
        elif tag == "select" and name:
            self._select = name
            fields.setdefault(name, [])
        elif tag == "option" and self._select and "selected" in attrs:
            fields[self._select].append(attrs.get("value") or "")

    def handle_endtag(self, tag):
        if tag == "select":
            self._select = None


@pytest.mark.parametrize("row", PAGES, ids=[row.id for row in PAGES])
def test_no_form_sent_back_makes_a_page_fail(row, world):
    role = next(role for role in OPENERS if row.expected[role] == "200")
    client = client_for(role, world)
    path = row.path.format(**world["params"])
    page = client.get(path)
    if "html" not in page["Content-Type"]:
        return
    reader = _Forms()
    reader.feed(page.content.decode())
    failures = []
    for action, fields in reader.forms:
        if fields is None or "logout" in action:
            continue
        target = urljoin(path, action) if action else path
        for name in fields:
            for value in HOSTILE:
                response = client.post(target, {**fields, name: value})
                if response.status_code >= 500:
                    failures.append(f"{response.status_code}: POST {target} with {name}={value!r:.40}")
    assert not failures, "\n".join(failures)
