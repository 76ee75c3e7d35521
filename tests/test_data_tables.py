"""Every data table says what it is and what each header heads: a caption (read when a screen reader
enters the table, and listed in its tables menu) and a scope on each <th> (col for a column's, row
for a row's), so each cell is read with its headers. The overview's 'The numbers' tables had both,
and the jobs table, the job page's files table and the other pages' tables had neither."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

from django.urls import reverse

from fleet.models import Artifact
from tests.factories import JobFactory
from tests.test_jobs_page import triaged
from triage.taxonomy import Category

ROOT = Path(__file__).resolve().parent.parent
# The web pages' templates; the digest mails lay out with tables of their own (role=presentation).
TEMPLATES = sorted(
    path
    for folder in ("templates", "triage/templates")
    for path in (ROOT / folder).rglob("*.html")
    if "emails" not in path.relative_to(ROOT).parts
)


def test_every_table_in_the_templates_has_a_caption_and_every_header_a_scope():
    missing = []
    for path in TEMPLATES:
        source = path.read_text()
        name = path.relative_to(ROOT)
        for table in re.finditer(r"<table\b[^>]*>", source):
            if not source[table.end() :].lstrip().startswith("<caption"):
                missing.append(f"{name}: {table.group(0)} has no caption")
        for header in re.finditer(r"<th\b[^>]*>", source):
            if not re.search(r'\bscope="(col|row)"', header.group(0)):
                missing.append(f"{name}: {header.group(0)} has no scope")
    assert TEMPLATES and missing == []


class Tables(HTMLParser):
    """Each <table>'s caption text and its headers' scopes, as a page serves them."""

    def __init__(self):
        super().__init__()
        self.tables: list[dict] = []
        self.in_caption = False

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append({"caption": "", "first": None, "scopes": []})
        elif self.tables:
            table = self.tables[-1]
            table["first"] = table["first"] or tag
            if tag == "caption":
                self.in_caption = True
            elif tag == "th":
                table["scopes"].append(dict(attrs).get("scope"))

    def handle_endtag(self, tag):
        if tag == "caption":
            self.in_caption = False

    def handle_data(self, data):
        if self.in_caption:
            self.tables[-1]["caption"] += data


def tables_of(client, url: str) -> list[dict]:
    response = client.get(url)
    assert response.status_code == 200
    parser = Tables()
    parser.feed(response.content.decode())
    return parser.tables


def test_the_jobs_table_and_a_jobs_files_table_are_captioned_with_scoped_headers(client, operator, team_a):
    job = JobFactory(team=team_a, name="ckpt-job", mean_gpu_util=30)
    triaged(job, "classified", Category.MODEL_CHECKPOINTING)
    Artifact.objects.create(job=job, kind="log", path="stdout.log", file="artifacts/x", size=1, sha256="x")
    client.force_login(operator)

    (jobs,) = tables_of(client, reverse("dashboard:job-list"))
    assert jobs["first"] == "caption" and jobs["caption"] == "Jobs"
    assert len(jobs["scopes"]) == 13 and set(jobs["scopes"]) == {"col"}  # with State and Elapsed

    page = tables_of(client, reverse("dashboard:job-detail", args=[job.pk]))
    captions = [table["caption"] for table in page]
    assert "Logs, scripts and traces" in captions
    for table in page:
        assert table["first"] == "caption" and table["caption"].strip(), table
        assert table["scopes"] and None not in table["scopes"], table
