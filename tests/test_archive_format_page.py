"""The archive format for people in a browser: docs/archive-format.md as a page of the product, behind
login, linked from the upload page. Its Markdown is rendered with raw HTML escaped."""

import re

import pytest
from django.urls import reverse

from fleet.docs_pages import render_markdown

pytestmark = pytest.mark.django_db


def test_the_upload_page_links_to_the_archive_format_page(client, operator):
    """The upload page sent a browser-only user to docs/archive-format.md, a file in the repository."""
    client.force_login(operator)
    page = client.get(reverse("fleet:ingest-upload")).content.decode()
    assert f'href="{reverse("fleet:archive-format")}"' in page


def test_the_archive_format_page_is_the_documents_text(client, member_a):
    """Any person logged in reads it (a member writing an exporter too): its headings, tables and code."""
    client.force_login(member_a)
    response = client.get(reverse("fleet:archive-format"))
    assert response.status_code == 200
    page = response.content.decode()
    assert "<h1>Fleet archive format, version 1</h1>" in page
    assert "<h2>Layout</h2>" in page
    # Tables and code blocks as the pages' own, in a box that scrolls sideways on a phone.
    assert '<div class="table-scroll"><table class="data">' in page
    assert '<div class="table-scroll"><pre class="code"><code' in page
    assert "<code>manifest.json</code>" in page
    # Where the document points into the repository (the example archive, the schemas, another
    # document), a browser has nothing to open: the path stays as text, with no link that 404s.
    assert not re.search(r'href="(?!https?://|#|/)', page.split('id="archive-format"', 1)[1])
    assert "docs/examples/example-archive/" in page


def test_the_archive_format_page_needs_a_login(client):
    response = client.get(reverse("fleet:archive-format"))
    assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_raw_html_and_script_links_in_the_markdown_are_escaped():
    """The document is ours, but its rendering does not trust it: raw HTML is shown as text, and a
    javascript: link is not a link."""
    html = render_markdown('<script>alert(1)</script>\n\n[x](javascript:alert(1)) <img src=x onerror="alert(1)">')
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "<img" not in html and "&lt;img" in html
    assert "href=" not in html


def test_links_out_stay_links_and_links_into_the_repository_become_their_paths():
    """A link into the repository (../fleet/schemas/job.schema.json, connectors.md#...) has nothing to
    open in a browser: its words stay, followed by the file's path in the repository."""
    html = render_markdown(
        "[site](https://example.org/a), [schema](../fleet/schemas/job.schema.json), [c](connectors.md#x)"
    )
    assert '<a href="https://example.org/a">site</a>' in html
    assert "schema (<code>fleet/schemas/job.schema.json</code>)" in html
    assert "c (<code>docs/connectors.md</code>)" in html
    assert "href=" not in html.replace('href="https://example.org/a"', "")
