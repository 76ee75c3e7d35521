"""The jobs list: filters an operator combines, sorting, CSV export of the filtered set."""

import csv
import io
import re

import pytest
from django.urls import reverse

from tests.factories import JobFactory
from triage.models import Finding, JobTriage, RuleSet
from triage.rules import RULES_REVISION
from triage.taxonomy import Category

pytestmark = pytest.mark.django_db


def triaged(job, status, *categories):
    result = JobTriage.objects.create(job=job, rule_set=RuleSet.current(), status=status, is_current=True)
    for category in categories:
        Finding.objects.create(result=result, job=job, rule_set=result.rule_set, category=category, confidence=0.9,
                               summary="s", gpu_hours=1.0, evidence={}, guidance={})  # fmt: skip


@pytest.fixture
def jobs(team_a, team_b):
    ckpt = JobFactory(team=team_a, name="ckpt-job", mean_gpu_util=30, state="COMPLETED", unused_gpu_hours=5)
    triaged(ckpt, "classified", Category.MODEL_CHECKPOINTING)
    mystery = JobFactory(team=team_a, name="mystery-job", mean_gpu_util=20, state="FAILED", unused_gpu_hours=9)
    triaged(mystery, "unclassified")
    busy = JobFactory(team=team_b, name="=cmd|' /C calc'!A0", mean_gpu_util=90, unused_gpu_hours=0.5)
    triaged(busy, "healthy")
    return {"ckpt": ckpt, "mystery": mystery, "busy": busy}


def names(client, **params):
    response = client.get(reverse("dashboard:job-list"), params)
    assert response.status_code == 200
    return [job.name for job in response.context["page"].object_list]


def test_filters_combine(client, operator, jobs):
    client.force_login(operator)
    assert names(client, category="model_checkpointing") == ["ckpt-job"]
    assert names(client, status="unclassified") == ["mystery-job"]
    assert set(names(client, util_max="50")) == {"ckpt-job", "mystery-job"}
    assert names(client, util_min="25", util_max="50") == ["ckpt-job"]
    assert names(client, state="failed") == ["mystery-job"]
    assert names(client, team="team-b") == ["=cmd|' /C calc'!A0"]
    assert names(client, sort="unused")[:2] == ["mystery-job", "ckpt-job"]
    # The order menu says what each order puts first, and offers "Newest first" once.
    page = client.get(reverse("dashboard:job-list")).content.decode()
    assert '<option value="util">Lowest utilization first</option>' in page
    assert page.count(">Newest first<") == 1
    JobFactory(team=jobs["ckpt"].team, name="lost-triage-job", mean_gpu_util=10)  # its triage task was lost
    assert names(client, status="not_triaged") == ["lost-triage-job"]
    page = client.get(reverse("dashboard:job-list"), {"status": "not_triaged"}).content.decode()
    assert "not triaged yet" in page and 'value="not_triaged"' in page


def test_the_utilization_source_menu_says_its_choices_in_plain_words(client, operator, jobs):
    """The menu read "Any util source", "GPU samples", "Slurm avg (step accounting)": jargon, and two of
    them said nothing of what they chose once picked. Each option now says it whole."""
    client.force_login(operator)
    page = client.get(reverse("dashboard:job-list"), {"util_source": "slurm_step_accounting"}).content.decode()
    menu = page.split('name="util_source"')[1].split("</select>")[0]
    assert [text for _, text in re.findall(r'<option value="([^"]*)"[^>]*>([^<]*)</option>', menu)] == [
        "Any source",
        "From GPU samples",
        "From Slurm&#x27;s average",
    ]
    # Each option reads on after the menu's visible name.
    assert re.search(r'<span class="muted">Utilization figure</span>\s*<select name="util_source"', page)
    assert '<option value="slurm_step_accounting" selected>' in menu
    assert "util source" not in page.lower()


def test_bad_filter_values_show_a_message_not_an_error(client, operator, jobs):
    """The message named each filter by its parameter in the address ("util_min: Enter a number."), which the
    form shows nowhere: it names it as the form does."""
    client.force_login(operator)
    response = client.get(reverse("dashboard:job-list"), {"util_min": "lots", "start_from": "yesterday"})
    assert response.status_code == 200
    page = response.content.decode()
    assert "Showing all jobs instead" in page
    assert '<p id="id_util_min_error">Mean utilization at least: Enter a number.</p>' in page
    assert '<p id="id_start_from_error">Started from: Enter a valid date.</p>' in page
    assert 'aria-label="Mean utilization at least"' in page  # the field the message names
    page = client.get(reverse("dashboard:job-list"), {"sort": "best", "util_source": "x"}).content.decode()
    assert ">Order: Select a valid choice. best is not one of the available choices.</p>" in page
    assert ">Where the utilization figure came from: Select a valid choice." in page


def test_member_cannot_filter_their_way_into_another_team(client, member_a, jobs):
    client.force_login(member_a)
    assert set(names(client)) == {"ckpt-job", "mystery-job"}
    response = client.get(reverse("dashboard:job-list"), {"q": "calc"})
    assert list(response.context["page"].object_list) == []


def test_csv_export_has_the_filtered_jobs_with_causes_and_no_live_formulas(client, operator, jobs):
    client.force_login(operator)
    response = client.get(reverse("dashboard:job-list"), {"format": "csv", "util_min": "0"})
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert response["Content-Type"].startswith("text/csv")
    by_name = {row["name"]: row for row in rows}
    assert set(by_name) == {"ckpt-job", "mystery-job", "'=cmd|' /C calc'!A0"}
    assert by_name["ckpt-job"]["categories"] == "model_checkpointing"
    assert by_name["mystery-job"]["status"] == "unclassified"
    filtered = client.get(reverse("dashboard:job-list"), {"format": "csv", "category": "model_checkpointing"})
    assert len(list(csv.DictReader(io.StringIO(b"".join(filtered.streaming_content).decode())))) == 1


def test_job_list_query_count_does_not_grow_with_the_page(client, operator, jobs, django_assert_max_num_queries):
    client.force_login(operator)
    for i in range(40):
        triaged(JobFactory(name=f"extra-{i}"), "classified", Category.API_MISUSE)
    with django_assert_max_num_queries(13):  # 12, and one for the jobs the viewer rates in a blind study
        client.get(reverse("dashboard:job-list"))


def test_a_job_page_with_thousands_of_log_events_counts_them_and_lists_one_kind_on_request(client, member_a, team_a):
    """A log of a progress bar per line held 100,000 events; the page listed its first 500 and said
    nothing of the rest, so the OOM on the last line could not be found there."""
    from fleet.models import Artifact, LogEvent

    job = JobFactory(team=team_a)
    log = Artifact.objects.create(job=job, kind="log", path="stdout.log", file="artifacts/x", size=1, sha256="x")
    rows = [LogEvent(job=job, artifact=log, kind="download", line_no=n, text=f"{n}%|###") for n in range(1, 1201)]
    rows.append(LogEvent(job=job, artifact=log, kind="oom", line_no=1201, text="CUDA out of memory <b>"))
    LogEvent.objects.bulk_create(rows)
    client.force_login(member_a)
    page = client.get(reverse("dashboard:job-detail", args=[job.pk]))
    text = page.content.decode()
    assert "all 1,201" in text and "download 1,200" in text and "oom 1" in text
    assert "The first 500 of 1,201 events, in log order." in text
    assert "CUDA out of memory" not in text  # past the first 500
    one_kind = client.get(reverse("dashboard:job-detail", args=[job.pk]), {"events": "oom"}).content.decode()
    assert "CUDA out of memory &lt;b&gt;" in one_kind and "The first 500" not in one_kind
    assert "%|###" not in one_kind and '<a href="?#log-events">all 1,201</a>' in one_kind
    for unknown in ("nope", "<script>", "oom' OR 1=1"):  # not a kind the job has: every event, as without it
        response = client.get(reverse("dashboard:job-detail", args=[job.pk]), {"events": unknown})
        assert response.status_code == 200 and "The first 500 of 1,201 events" in response.content.decode()


def test_an_ingest_runs_page_links_to_the_jobs_it_created_or_updated(client, operator, member_a, storage_dir, tmp_path):
    """A run's page said "2 created, 1 updated" with no way to see which jobs: it now links to the
    jobs list filtered to that run, which keeps the run through other filters, the CSV and the API."""
    from fleet import ingest
    from tests.conftest import write_zip

    def archive(name: str, rows: list[str]):
        return write_zip(
            tmp_path / name,
            {
                "manifest.json": '{"format": "fleet-archive", "version": 1, "cluster": "c1"}',
                "jobs.csv": "job_id,user,team,gpu_count,start_time,end_time,name\n" + "\n".join(rows) + "\n",
            },
        )

    first = ingest.execute_run(
        ingest.create_run(
            archive(
                "monday.zip",
                [
                    "j1,ann,team-a,1,2026-11-02T10:00:00Z,2026-11-02T12:00:00Z,first-a",
                    "j2,bob,team-b,1,2026-11-02T10:00:00Z,2026-11-02T12:00:00Z,first-b",
                ],
            )
        ).pk
    )
    second = ingest.execute_run(
        ingest.create_run(
            archive(
                "tuesday.zip",
                [
                    "j1,ann,team-a,1,2026-11-02T10:00:00Z,2026-11-02T12:00:00Z,first-a",  # unchanged
                    "j2,bob,team-b,1,2026-11-02T10:00:00Z,2026-11-02T12:00:00Z,renamed-b",  # updated
                    "j3,ann,team-a,1,2026-11-03T10:00:00Z,2026-11-03T12:00:00Z,second-a",  # created
                ],
            )
        ).pk
    )
    assert (second.jobs_created, second.jobs_updated, second.jobs_unchanged) == (1, 1, 1)

    client.force_login(operator)
    page = client.get(reverse("fleet:ingest-run-detail", args=[second.pk])).content.decode()
    link = f"{reverse('dashboard:job-list')}?run={second.pk}"
    assert f'href="{link}"' in page and "the jobs it stored" in page

    # Its times say their zone, as the job page's do (to the tenth of a second, as its duration).
    def shown(moment) -> str:
        return f"{moment:%Y-%m-%d %H:%M:%S}.{moment.microsecond // 100_000} UTC"

    started = f"<dt>Started</dt><dd>{shown(second.started_at)}</dd>"
    assert started in page and f"<dt>Finished</dt><dd>{shown(second.finished_at)}</dd>" in page
    listing = client.get(link)
    assert sorted(job.name for job in listing.context["page"].object_list) == ["renamed-b", "second-a"]
    text = listing.content.decode()
    assert f"The jobs that ingest run #{second.pk} created or updated." in text
    assert f'<input type="hidden" name="run" value="{second.pk}">' in text  # kept by the filter form
    assert names(client, run=second.pk, team="team-a") == ["second-a"]
    assert names(client, run=first.pk) == ["first-a"]  # j2 was last stored by the second run
    exported = client.get(reverse("dashboard:job-list"), {"run": second.pk, "format": "csv"})
    rows = list(csv.DictReader(io.StringIO(b"".join(exported.streaming_content).decode())))
    assert sorted(row["name"] for row in rows) == ["renamed-b", "second-a"]
    api = client.get("/api/v1/jobs/", {"ingest_run": second.pk}).json()
    assert sorted(job["name"] for job in api["results"]) == ["renamed-b", "second-a"]

    client.force_login(member_a)  # team A's member: only team A's jobs of the run
    assert names(client, run=second.pk) == ["second-a"]
    assert client.get(reverse("fleet:ingest-run-detail", args=[second.pk])).status_code == 404


def test_a_job_page_gives_every_time_with_its_zone(client, member_a, team_a):
    """Started and ended said UTC; the submit time beside them did not, nor did an ingest run's times."""
    from datetime import UTC, datetime

    submitted = JobFactory(team=team_a, submit_time=datetime(2026, 11, 2, 7, 31, 48, tzinfo=UTC))
    unsubmitted = JobFactory(team=team_a, submit_time=None)
    client.force_login(member_a)
    page = client.get(reverse("dashboard:job-detail", args=[submitted.pk])).content.decode()
    assert "<dt>Submitted</dt><dd>2026-11-02 07:31:48 UTC</dd>" in page
    assert f"<dt>Started</dt><dd>{submitted.start_time:%Y-%m-%d %H:%M:%S} UTC</dd>" in page
    page = client.get(reverse("dashboard:job-detail", args=[unsubmitted.pk])).content.decode()
    assert "<dt>Submitted</dt><dd>–</dd>" in page


@pytest.mark.parametrize(
    ("field", "label", "limit"),
    [("q", "Search", 500), ("user", "User (whole name)", 200), ("name", "Job name", 500), ("state", "State", 50)],
)
def test_a_search_longer_than_any_job_holds_is_a_form_error_naming_the_field(
    client, operator, jobs, field, label, limit
):
    """A 100,000-character search or user was a server error on SQLite (the embedded default:
    "LIKE or GLOB pattern too complex"), in the list and its CSV alike. Longer than the field it
    searches, it can match nothing: the form says so and lists all jobs, as for any other error."""
    client.force_login(operator)
    response = client.get(reverse("dashboard:job-list"), {field: "x" * 100_000})
    assert response.status_code == 200
    warning = re.search(r'<div class="message warning">(.*?)</div>', response.content.decode(), re.S).group(1)
    assert (
        f'<p id="id_{field}_error">{label}: Ensure this value has at most {limit} characters (it has 100000).</p>'
        in warning
    )
    assert len(response.context["page"].object_list) == 3
    assert client.get(reverse("dashboard:job-list"), {field: "x" * 100_000, "format": "csv"}).status_code == 200
    if field != "state":  # a menu's: a state no job has is an error (tests/test_jobs_list_menus.py)
        assert names(client, **{field: "x" * limit}) == []  # as long as it may be: searched, nothing found


def test_a_job_is_found_by_its_id_as_the_pages_write_it(client, operator, jobs):
    client.force_login(operator)
    job = jobs["ckpt"]
    shown = f"{job.cluster.name}/{job.external_id}"  # the jobs table and a job's page title
    assert names(client, q=shown) == ["ckpt-job"]
    assert names(client, q=f"  {shown.upper()} ") == ["ckpt-job"]  # pasted with spaces, any case
    assert names(client, q=f"no-such-cluster/{job.external_id}") == []


def test_a_job_opened_from_a_filtered_list_leads_back_to_that_list(client, operator, jobs):
    client.force_login(operator)
    job = jobs["ckpt"]
    url = reverse("dashboard:job-detail", args=[job.pk])
    listed = "http://testserver" + reverse("dashboard:job-list") + "?category=model_checkpointing&sort=unused&page=2"
    page = client.get(url, HTTP_REFERER=listed).content.decode()
    back = reverse("dashboard:job-list") + "?category=model_checkpointing&amp;sort=unused&amp;page=2"
    assert f'<a href="{back}">&larr; Jobs</a>' in page
    # From anywhere else (another site, another page of ours), the back link is the plain list.
    for elsewhere in ("https://evil.example/jobs/?q=x", "http://testserver/overview/?period=30d"):
        page = client.get(url, HTTP_REFERER=elsewhere).content.decode()
        assert f'<a href="{reverse("dashboard:job-list")}">&larr; Jobs</a>' in page
    quoted = "http://testserver" + reverse("dashboard:job-list") + '?q="><script>alert(1)</script>'
    page = client.get(url, HTTP_REFERER=quoted).content.decode()
    assert "<script>alert(1)" not in page


@pytest.mark.parametrize("referer", ["http://[::1", "http://testserver]/jobs/?q=x", "http://[testserver/jobs/"])
def test_a_referer_that_is_no_address_leads_back_to_the_plain_list(client, operator, jobs, referer):
    """The Referer is whatever a client sends: one that is no URL (an unclosed IPv6 bracket) was a
    server error on the job page; it is a page whose back link is the plain list, as from elsewhere."""
    client.force_login(operator)
    url = reverse("dashboard:job-detail", args=[jobs["ckpt"].pk])
    page = client.get(url, HTTP_REFERER=referer)
    assert page.status_code == 200
    assert f'<a href="{reverse("dashboard:job-list")}">&larr; Jobs</a>' in page.content.decode()


def test_the_way_back_to_the_filtered_list_outlasts_the_job_pages_own_links_and_an_answer(client, operator, jobs):
    """'← Jobs' led back to the list only while the list was the Referer: after picking a kind of log
    event on the job page, or saving an answer (which comes back to the page), it led to the whole
    list. The list's rows now carry it (`back`), the job page's own links keep it, and a page reached
    from a job page that carries it keeps it too."""
    from urllib.parse import urlsplit

    from fleet.models import Artifact, LogEvent

    job = jobs["ckpt"]
    log = Artifact.objects.create(job=job, kind="log", path="stdout.log", file="artifacts/x", size=1, sha256="x")
    LogEvent.objects.create(job=job, artifact=log, kind="oom", line_no=1, text="CUDA out of memory")
    client.force_login(operator)
    url = reverse("dashboard:job-detail", args=[job.pk])
    listed = "category=model_checkpointing&sort=unused&page=1"
    back_to_list = f'<a href="{reverse("dashboard:job-list")}?{listed.replace("&", "&amp;")}">&larr; Jobs</a>'

    rows = client.get(reverse("dashboard:job-list"), dict(p.split("=") for p in listed.split("&"))).content.decode()
    row_link = f'href="{url}?back=category%3Dmodel_checkpointing%26sort%3Dunused%26page%3D1"'
    assert row_link in rows

    page = client.get(url, {"back": listed}).content.decode()  # the row's link, without a Referer
    assert back_to_list in page
    assert 'href="?back=category%3Dmodel_checkpointing%26sort%3Dunused%26page%3D1&amp;events=oom' in page

    # A kind of log event picked on the page, and the page an answer saved redirects to (whose
    # Referer is the job page the answer was given on): the same way back.
    assert back_to_list in client.get(url, {"back": listed, "events": "oom"}).content.decode()
    from_itself = f"http://testserver{url}?back=category%3Dmodel_checkpointing%26sort%3Dunused%26page%3D1"
    assert back_to_list in client.get(url, HTTP_REFERER=from_itself).content.decode()

    # Opened from nowhere in particular: the plain list, and the page's own links carry nothing.
    plain = client.get(url).content.decode()
    assert f'<a href="{reverse("dashboard:job-list")}">&larr; Jobs</a>' in plain and "back=" not in plain

    # A `back` made up to lead elsewhere is only ever the jobs list's query, escaped.
    for hostile in ("https://evil.example/", "//evil.example/", "javascript:alert(1)", '"><script>alert(1)</script>'):
        for response in (
            client.get(url, {"back": hostile}),
            client.get(url, HTTP_REFERER=f"http://testserver{url}?back={hostile}"),
            client.get(url, HTTP_REFERER=f"https://evil.example{url}?back=q%3Dx"),
        ):
            text = response.content.decode()
            href = text.split("&larr; Jobs</a>")[0].rsplit('<a href="', 1)[1].rstrip('">')
            assert urlsplit(href).netloc == "" and urlsplit(href).path == reverse("dashboard:job-list"), hostile
            assert "<script>alert(1)" not in text and 'href="javascript' not in text


def test_a_job_page_shows_each_causes_change_in_sight_and_which_to_fix_first(client, member_a, team_a):
    """The digest's "Fixes that pay most" links to a job's findings, whose change to make was folded
    away under "How to fix it" behind the evidence: its reader saw the windows and log lines, not the
    fix. Each finding says its change in sight, and of several the costliest says it comes first."""
    from triage.guidance import guidance_for

    job = JobFactory(team=team_a, name="two-causes", mean_gpu_util=30, gpu_count=1)
    result = JobTriage.objects.create(job=job, rule_set=RuleSet.current(), status="classified", is_current=True)
    CKPT = Category.MODEL_CHECKPOINTING
    for category, hours in ((Category.REMOTE_DATA_READING, 2.1), (CKPT, 2.5)):
        guidance = guidance_for(
            category, "default", {}, gpu_hours=hours, price_per_gpu_hour=None, currency="", job={"gpu_count": 1}
        )
        Finding.objects.create(result=result, job=job, rule_set=result.rule_set, category=category, confidence=0.9,
                               summary="s", gpu_hours=hours, evidence={}, guidance=guidance)  # fmt: skip
    client.force_login(member_a)
    html = client.get(reverse("dashboard:job-detail", args=[job.pk])).content.decode()
    blocks = {
        category: html.split(f'id="finding-{category}"')[1].split('class="finding"')[0]
        for category in (Category.MODEL_CHECKPOINTING, Category.REMOTE_DATA_READING)
    }
    for category, block in blocks.items():
        change = Finding.objects.get(job=job, category=category).guidance["change"]
        shown = block.split("<details")[0] if "<details" in block else block
        assert "<strong>What to change:</strong> " in shown
        assert change.split("`")[0] in shown.split("What to change:")[1]
        assert "What to change" not in block.split("How to fix it")[1]  # said once, not again folded away
    first = blocks[Category.MODEL_CHECKPOINTING]
    assert "Fix this first</strong> (of the 2 causes found, it cost the most GPU-hours)" in first
    assert "Fix this first" not in blocks[Category.REMOTE_DATA_READING]

    # A cause its people answered wrong is not the one to fix first, as the digest no longer urges it.
    client.post(reverse("triage:job-feedback", args=[job.pk]), {"category": CKPT, "verdict": "wrong"})
    html = client.get(reverse("dashboard:job-detail", args=[job.pk])).content.decode()
    first = html.split(f'id="finding-{Category.REMOTE_DATA_READING}"')[1].split('class="finding"')[0]
    assert "Fix this first</strong> (of the causes found that no one answered wrong or intended, it cost" in first
    assert html.count("Fix this first") == 1

    # One cause alone is not "first" of anything.
    Finding.objects.filter(job=job, category=Category.REMOTE_DATA_READING).delete()
    html = client.get(reverse("dashboard:job-detail", args=[job.pk])).content.decode()
    assert "Fix this first" not in html and "What to change:" in html


def test_a_job_still_running_when_stored_does_not_say_it_ended(client, member_a, team_a):
    """A job stored while it ran (an archive's `state` RUNNING) said "Ended" at its last sample, as if
    it had stopped there: it says it had not ended, and that its figures cover the time so far."""
    running = JobFactory(team=team_a, state="Running")
    done = JobFactory(team=team_a, state="COMPLETED")
    client.force_login(member_a)
    page = client.get(reverse("dashboard:job-detail", args=[running.pk])).content.decode()
    said = page.split('<dd id="job-unfinished">')[1].split("</dd>")[0]
    assert said.startswith("Not yet: the job was running when it was last stored, with samples up to ")
    assert f"{running.end_time:%Y-%m-%d %H:%M:%S} UTC ({running.wall_hours:.2f}\u00a0h so far)" in said
    assert "The figures on this page cover that time only." in said
    page = client.get(reverse("dashboard:job-detail", args=[done.pk])).content.decode()
    assert "job-unfinished" not in page
    assert f"<dt>Ended</dt><dd>{done.end_time:%Y-%m-%d %H:%M:%S} UTC ({done.wall_hours:.2f}\u00a0h)</dd>" in page


def test_a_jobs_length_keeps_its_unit_on_a_phone(client, member_a, team_a):
    """On a phone a job's Ended line broke inside its length, leaving 'h)' alone on the last line
    ('... 16:33:58 UTC (1.94' / 'h)'), on the job's page and a study's labeling page: number and unit
    stay together."""
    job = JobFactory(team=team_a, state="COMPLETED")
    client.force_login(member_a)
    page = client.get(reverse("dashboard:job-detail", args=[job.pk])).content.decode()
    assert f"({job.wall_hours:.2f}\u00a0h)" in page and f"({job.wall_hours:.2f} h)" not in page  # a no-break space


def test_a_findings_header_says_how_likely_the_cause_is_in_words_and_keeps_the_rules_terms_in_a_title(
    client, member_a, team_a
):
    """A finding's header read "sync_save_remote · confidence 0.95" and the triage line "Classified
    mean GPU util 28.2 % · rule set v1": the rules' names, not words a team member reads. They say how
    likely each cause is and what triage found; the sub-cause, the number, the status and the rule set's
    version stay on the page for the researchers and operators who use them."""
    job = JobFactory(team=team_a, name="two-causes", mean_gpu_util=28.2)
    result = JobTriage.objects.create(job=job, rule_set=RuleSet.current(), status="classified", is_current=True,
                                      mean_util=28.2, reason="mean GPU util 28.2 %")  # fmt: skip
    for category, sub, confidence in ((Category.MODEL_CHECKPOINTING, "sync_save_remote", 0.95),
                                      (Category.IMPROPER_BATCH_SIZE, "small_batch", 0.45)):  # fmt: skip
        Finding.objects.create(result=result, job=job, rule_set=result.rule_set, category=category, sub_cause=sub,
                               confidence=confidence, summary="s", gpu_hours=confidence, evidence={},
                               guidance={})  # fmt: skip
    client.force_login(member_a)
    html = client.get(reverse("dashboard:job-detail", args=[job.pk])).content.decode()
    header = html.split(f'id="finding-{Category.MODEL_CHECKPOINTING}"')[1].split("</h3>")[0]
    assert "very likely the cause</span>" in header
    assert 'title="The rules\' confidence: 0.95 of 1; sub-cause sync_save_remote"' in header
    assert "confidence 0.95" not in header.split('title="')[0] and ">sync_save_remote" not in header
    header = html.split(f'id="finding-{Category.IMPROPER_BATCH_SIZE}"')[1].split("</h3>")[0]
    assert "· the rules are unsure</span>" in header
    triage_line = html.split("Why the GPUs idled</h2>")[1].split("</p>")[0]
    assert 'title="Triage status: Classified">2 causes found</span>' in triage_line
    # Whole percent, as the list; "28" and "%" held together by a no-break space.
    assert "at a mean GPU utilization of 28\xa0% · checked by the rules on " in triage_line
    assert f"(rules revision {RULES_REVISION}, with the thresholds of rule set v{RuleSet.current().version})" in (
        triage_line
    )


def test_the_triage_line_tells_the_rules_revision_from_the_rule_set_of_thresholds(client, member_a, team_a):
    """A job's page said "(rule set v1)" while the rules' revision was 12, and nothing said the two were
    different things: the rule set is the version of the thresholds operators edit on the Rules page, the
    revision the version of the rules' code a release ships. The line names both, each for what it is, and
    the revision is the one that made this result (an older one until the sweep re-triages the job)."""
    job = JobFactory(team=team_a, name="one-cause", mean_gpu_util=30.0)
    JobTriage.objects.create(job=job, rule_set=RuleSet.current(), status="classified", is_current=True,
                             mean_util=30.0, rules_revision=RULES_REVISION - 1)  # fmt: skip
    client.force_login(member_a)
    html = client.get(reverse("dashboard:job-detail", args=[job.pk])).content.decode()
    triage_line = html.split("Why the GPUs idled</h2>")[1].split("</p>")[0]
    version = RuleSet.current().version
    assert f"(rules revision {RULES_REVISION - 1}, with the thresholds of rule set v{version})" in triage_line
    assert f"(rule set v{version})" not in triage_line
    assert (
        'title="Rules revision: the version of the rules&#x27; code that made this result, raised by a release '
        "that changes what the rules conclude. Rule set: the version of the thresholds operators edit on the "
        'Rules page."' in triage_line
    )


def test_the_timeline_caption_says_what_its_shaded_bands_are_unless_the_findings_are_hidden(client, member_a,
                                                                                             researcher, operator,
                                                                                             team_a):  # fmt: skip
    """The caption under the timeline spoke of zooming and gaps, not of the shaded bands each cause's
    windows draw (with a legend entry each since e750ae3): a reader still had to guess what they were.
    A blind rater's timeline has no bands (its findings are hidden), so neither has its caption."""
    from django.core.files.base import ContentFile

    from fleet.series import to_parquet_bytes
    from tests.conftest import tiny_series
    from triage.labeling.models import Assignment, Study, StudyJob, StudyRater

    job = JobFactory(team=team_a, name="ckpt-job", mean_gpu_util=30)
    # The chart's help, bands included, shows only with a chart: a job with a series (e042ca0).
    job.series_file.save("series.parquet", ContentFile(to_parquet_bytes(tiny_series())))
    triaged(job, "classified", Category.MODEL_CHECKPOINTING)
    window = {"start": "2026-11-02T10:00:00+00:00", "end": "2026-11-02T10:05:00+00:00", "minutes": 5.0}
    Finding.objects.filter(job=job).update(evidence={"windows": [window]}, time_located=True)
    said = ("Shaded bands are the time windows in which a cause the rules found left the GPUs idle, in that "
            "cause's colour; click its legend entry (<em>…: idle windows</em>) to hide or show them.")  # fmt: skip
    client.force_login(member_a)
    page = client.get(reverse("dashboard:job-detail", args=[job.pk])).content.decode()
    caption = page.split('id="timeline"')[1].split("</p>")[0]
    assert said in caption
    study = Study.objects.create(name="pilot", created_by=operator, seed=1, show_findings=False)
    StudyRater.objects.create(study=study, user=researcher)
    Assignment.objects.create(item=StudyJob.objects.create(study=study, job=job, position=1), rater=researcher)
    client.force_login(researcher)
    page = client.get(reverse("dashboard:job-detail", args=[job.pk])).content.decode()
    assert "Shaded bands" not in page


def test_the_team_filter_is_offered_only_to_who_can_see_more_than_one_team(
    client, jobs, member_a, operator, researcher
):
    """A member of one team sees only that team's jobs: an "All teams" select that can only ever say her
    team is noise, so it is not there; a filtered link (?team=...) still filters and keeps its team when
    she filters on. Operators and researchers, who see the whole fleet, keep it."""
    client.force_login(member_a)
    page = client.get(reverse("dashboard:job-list")).content.decode()
    assert 'name="team"' not in page and "All teams" not in page
    linked = client.get(reverse("dashboard:job-list"), {"team": "team-a"}).content.decode()
    assert '<input type="hidden" name="team" value="team-a">' in linked
    for user in (operator, researcher):
        client.force_login(user)
        page = client.get(reverse("dashboard:job-list")).content.decode()
        assert '<select name="team"' in page and "All teams" in page


@pytest.mark.parametrize(
    ("sent", "message"),
    [
        (str(10**40), f"No ingest run #{10**40}."),
        ("abc", "Ingest run must be a run number, such as run=42 (not &#x27;abc&#x27;)."),
    ],
)
def test_a_run_filter_that_is_no_run_number_says_so_in_plain_words(client, operator, team_a, sent, message):
    """`/jobs/?run=<40 digits>` (a run's "the jobs it stored" link, edited) said "run: Ensure this value
    is less than or equal to 9223372036854775807."; the list shows every job instead, and says so."""
    job = JobFactory(team=team_a)
    client.force_login(operator)
    response = client.get(reverse("dashboard:job-list"), {"run": sent})
    assert response.status_code == 200
    page = response.content.decode()
    assert (
        f'<p id="id_run_error">Ingest run: {message}</p><p>Showing all jobs instead.</p>' in page and job.name in page
    )
    assert 'id="run-filter"' not in page


def test_a_run_filter_naming_a_run_that_does_not_exist_says_there_is_no_such_run(client, operator, team_a):
    """`/jobs/?run=<a number no run has>` (a run deleted since, a typo in a bookmarked link) listed no job under
    "The jobs that ingest run #N created or updated": as if the run had stored none. It says there is no such
    run and lists every job, as the API's `ingest_run` does with a 400."""
    from fleet.models import IngestRun

    job = JobFactory(team=team_a)
    missing = (IngestRun.objects.order_by("-pk").values_list("pk", flat=True).first() or 0) + 1000
    client.force_login(operator)
    response = client.get(reverse("dashboard:job-list"), {"run": missing})
    page = response.content.decode()
    assert f'<p id="id_run_error">Ingest run: No ingest run #{missing}.</p><p>Showing all jobs instead.</p>' in page
    assert job.name in page and 'id="run-filter"' not in page


def test_a_job_opened_from_a_team_or_a_cause_leads_back_to_those_jobs_of_the_period(client, operator, jobs):
    """An operator goes from a team's page (or a cause's) to its worst job: '← Jobs' led to the whole
    list, every team of all time, losing the team, the cause, the period and the cluster they had
    chosen. It leads to the list the page's own "All … jobs" link opens: the same jobs, worst first."""
    from datetime import UTC, datetime

    job = jobs["ckpt"]
    job.start_time, job.end_time = datetime(2026, 11, 3, 9, tzinfo=UTC), datetime(2026, 11, 3, 11, tzinfo=UTC)
    job.save(update_fields=["start_time", "end_time"])
    client.force_login(operator)
    period = {"from": "2026-11-02", "to": "2026-11-08", "cluster": job.cluster.name}
    dates = f"start_from=2026-11-02&start_to=2026-11-08&cluster={job.cluster.name}"
    cause = reverse("dashboard:category-detail", args=["model_checkpointing"])
    pages = {
        reverse("dashboard:team-detail", args=[job.team.slug]): f"team=team-a&{dates}&sort=unused",
        cause: f"category=model_checkpointing&{dates}&sort=recoverable",  # as the cause page lists them
    }
    for page_url, listed in pages.items():
        page = client.get(page_url, period).content.decode()
        all_jobs = f'href="{reverse("dashboard:job-list")}?{listed.replace("&", "&amp;")}"'
        links = re.findall(rf'href="({reverse("dashboard:job-detail", args=[job.pk])}[^"#]*)', page)
        assert links, page_url
        for link in links:
            opened = client.get(link.replace("&amp;", "&")).content.decode()
            assert f"<a {all_jobs}>&larr; Jobs</a>" in opened, (page_url, link)


def test_the_search_box_finds_jobs_by_every_word_typed(client, operator, team_a):
    """Typing "gpt2 medium" for the gpt2-medium-owt runs found nothing: the box looked for the words
    with their space between them. Each word is looked for now, in the id, the name or the user, and
    a job must have all of them: "lena gpt2" is lena's gpt2 runs."""
    JobFactory(team=team_a, name="gpt2-medium-owt", user="lena.c")
    JobFactory(team=team_a, name="gpt2-medium-owt-v2", user="dara.i")
    JobFactory(team=team_a, name="llama2-7b-sft", user="lena.c")
    client.force_login(operator)
    assert sorted(names(client, q="gpt2 medium")) == ["gpt2-medium-owt", "gpt2-medium-owt-v2"]
    assert names(client, q="lena  GPT2") == ["gpt2-medium-owt"]
    assert names(client, q="gpt2 nosuchword") == []
    assert names(client, q=" ".join(f"w{i}" for i in range(120))) == []  # 489 characters (at most 500)


def test_a_job_opened_from_a_team_s_period_leads_to_the_team_in_that_period(client, operator, jobs):
    """The job card's team link opened the job's week whatever the operator had chosen: from a team's
    30 days on one cluster, the team's page came back as one week of every cluster. Opened from a list
    of a period that holds the job, it opens the team in that period and cluster; else the job's week."""
    from datetime import UTC, datetime
    from urllib.parse import urlencode

    job = jobs["ckpt"]
    job.start_time, job.end_time = datetime(2026, 11, 3, 9, tzinfo=UTC), datetime(2026, 11, 3, 11, tzinfo=UTC)
    job.save(update_fields=["start_time", "end_time"])
    client.force_login(operator)
    team = reverse("dashboard:team-detail", args=[job.team.slug])
    period = {"from": "2026-10-20", "to": "2026-11-18", "cluster": job.cluster.name}
    page = client.get(team, period).content.decode()
    link = re.search(rf'href="({reverse("dashboard:job-detail", args=[job.pk])}[^"#]*)', page).group(1)
    opened = client.get(link.replace("&amp;", "&")).content.decode()
    team_link = f"{team}?from=2026-10-20&amp;to=2026-11-18&amp;cluster={job.cluster.name}"
    # Each date on one line: at 390 px "2026-11-18" broke after "2026-11-".
    dates = '(<span class="when">2026-10-20</span> to <span class="when">2026-11-18</span>)'
    assert f'<a href="{team_link}">{job.team.name}</a> <span class="muted">{dates}</span>' in opened
    # A list whose dates do not hold the job: its team page would not count it; the job's week does.
    back = urlencode({"back": "start_from=2026-11-10&start_to=2026-11-16"})
    opened = client.get(f"{reverse('dashboard:job-detail', args=[job.pk])}?{back}").content.decode()
    week = f"{team}?from=2026-11-02&amp;to=2026-11-08"
    assert f'<a href="{week}">{job.team.name}</a> <span class="muted">(week of 2026-11-02)</span>' in opened


def _found(job, *causes):
    """A current triage of the job with a finding of each (category, recoverable GPU-hours)."""
    result = JobTriage.objects.create(job=job, rule_set=RuleSet.current(), status="classified", is_current=True)
    for category, hours in causes:
        Finding.objects.create(result=result, job=job, rule_set=result.rule_set, category=category, confidence=0.9,
                               summary="s", gpu_hours=hours, evidence={}, guidance={})  # fmt: skip


def test_a_cause_pages_all_jobs_link_lists_them_in_the_cause_pages_order(client, operator, team_a):
    """A cause's page lists its jobs by the GPU-hours the cause cost them (recoverable GPU-hours); its
    "All … jobs" link opened the jobs list by unused GPU-hours, another order, and the list had no order
    by recoverable GPU-hours at all. The list now has one (its column shown while it is chosen: a job's
    causes together, or the cause filtered by), and the cause page's link keeps its order."""
    from datetime import UTC, datetime, timedelta

    monday = datetime(2026, 11, 2, 9, tzinfo=UTC)

    def job(name, day, unused):
        return JobFactory(team=team_a, name=name, start_time=monday + timedelta(days=day), unused_gpu_hours=unused)

    ckpt, batch = Category.MODEL_CHECKPOINTING, Category.IMPROPER_BATCH_SIZE
    _found(job("five-of-ckpt", 0, 6), (ckpt, 5.0))
    _found(job("one-of-ckpt-ten-of-batch", 1, 20), (ckpt, 1.0), (batch, 10.0))
    _found(job("three-of-ckpt", 2, 3), (ckpt, 3.0))
    job("nothing-found", 3, 40)
    client.force_login(operator)
    week = {"from": "2026-11-02", "to": "2026-11-08"}
    cause = client.get(reverse("dashboard:category-detail", args=[ckpt.value]), week)
    shown = [finding.job.name for finding in cause.context["findings"]]
    assert shown == ["five-of-ckpt", "three-of-ckpt", "one-of-ckpt-ten-of-batch"]
    link = re.search(r'<p id="cause-jobs"><a href="([^"]*)"', cause.content.decode())[1].replace("&amp;", "&")
    assert "sort=recoverable" in link
    listed = client.get(link)
    assert [job.name for job in listed.context["page"].object_list] == shown
    page = listed.content.decode()
    assert '<option value="recoverable" selected>Most recoverable GPU-hours first</option>' in page
    recoverable = re.findall(r'<td role="cell" class="num recoverable">.*?<span>([^<]*)</span></td>', page)
    assert recoverable == ["5.0", "3.0", "1.0"]
    # Without a cause: each job's causes together, the jobs with none last.
    assert names(client, sort="recoverable") == [
        "one-of-ckpt-ten-of-batch", "five-of-ckpt", "three-of-ckpt", "nothing-found",
    ]  # fmt: skip
    assert "Recoverable GPU-hours</th>" not in client.get(reverse("dashboard:job-list")).content.decode()


def test_the_recoverable_order_says_nothing_of_a_job_its_viewer_rates_blind(client, operator, researcher, team_a):
    """Sorted by recoverable GPU-hours, a job the viewer rates in a blind study would stand where its
    causes put it: it stands with the jobs nothing was found on, and its cell says nothing."""
    from triage.labeling.models import Assignment, Study, StudyJob, StudyRater

    _found(JobFactory(team=team_a, name="seen"), (Category.MODEL_CHECKPOINTING, 2.0))
    blind = JobFactory(team=team_a, name="rated-blind")  # the newer: first in the list's own order
    _found(blind, (Category.MODEL_CHECKPOINTING, 50.0))
    study = Study.objects.create(name="pilot", created_by=operator, seed=1, show_findings=False)
    StudyRater.objects.create(study=study, user=researcher)
    Assignment.objects.create(item=StudyJob.objects.create(study=study, job=blind, position=1), rater=researcher)
    client.force_login(researcher)
    assert names(client, sort="recoverable") == ["seen", "rated-blind"]
    page = client.get(reverse("dashboard:job-list"), {"sort": "recoverable"}).content.decode()
    assert "50.0" not in page
    client.force_login(operator)
    assert names(client, sort="recoverable") == ["rated-blind", "seen"]


def test_a_preset_period_goes_from_a_page_through_a_job_to_the_team_as_that_preset(client, operator, team_a):
    """An operator picks "Last 30 days" on a team's page (or the overview), opens a job and goes on to its
    team: the team's page came back as custom dates, no period button marked, and "Last 30 days" on it was
    no longer the period they had chosen once newer jobs came in. The jobs list's links carry the preset,
    and the job's team link keeps it while it still means the dates the list was filtered by."""
    from datetime import UTC, datetime
    from urllib.parse import urlencode

    job = JobFactory(team=team_a, start_time=datetime(2026, 11, 3, 9, tzinfo=UTC), unused_gpu_hours=5)
    JobFactory(team=team_a, start_time=datetime(2026, 11, 18, 9, tzinfo=UTC), cluster=job.cluster)  # the newest
    client.force_login(operator)
    team = reverse("dashboard:team-detail", args=[job.team.slug])
    overview = client.get(reverse("dashboard:overview"), {"period": "30d"}).content.decode()
    assert re.search(r'href="/jobs/\?[^"]*&amp;period=30d[^"]*&amp;util_max=', overview)
    for chosen, team_link in (
        ({"period": "30d"}, f"{team}?period=30d"),
        ({"period": "30d", "cluster": job.cluster.name}, f"{team}?period=30d&amp;cluster={job.cluster.name}"),
    ):
        page = client.get(team, chosen).content.decode()
        link = re.search(rf'href="({reverse("dashboard:job-detail", args=[job.pk])}[^"#]*)', page).group(1)
        opened = client.get(link.replace("&amp;", "&")).content.decode()
        said = '(last 30 days: <span class="when">2026-10-20</span> to <span class="when">2026-11-18</span>)'
        assert f'<a href="{team_link}">{job.team.name}</a> <span class="muted">{said}</span>' in opened
        again = client.get(team_link.replace("&amp;", "&")).content.decode()
        assert 'class="active">Last 30 days</a>' in again
    # The list's dates edited since: they are no longer the preset's, and the link keeps the dates.
    back = urlencode({"back": "team=team-a&start_from=2026-10-25&start_to=2026-11-18&period=30d"})
    opened = client.get(f"{reverse('dashboard:job-detail', args=[job.pk])}?{back}").content.decode()
    assert f'<a href="{team}?from=2026-10-25&amp;to=2026-11-18">' in opened
    # Filtered on in the list, the preset stays with the list's other filters.
    listed = client.get(reverse("dashboard:job-list"), {"team": "team-a", "period": "30d"}).content.decode()
    assert '<input type="hidden" name="period" value="30d">' in listed


def test_a_team_pages_cause_lists_its_jobs_by_what_that_cause_cost_them(client, operator, team_a):
    """A team's page gives each cause its recoverable GPU-hours and links to the team's jobs with it: they
    opened by unused GPU-hours, the job that lost most to other causes first. They open as the cause's page
    lists them, by what this cause cost each job."""
    from datetime import UTC, datetime

    ckpt, batch = Category.MODEL_CHECKPOINTING, Category.IMPROPER_BATCH_SIZE
    day = datetime(2026, 11, 3, 9, tzinfo=UTC)
    _found(JobFactory(team=team_a, name="most-unused", start_time=day, unused_gpu_hours=30), (ckpt, 1.0), (batch, 20.0))
    _found(JobFactory(team=team_a, name="most-ckpt", start_time=day, unused_gpu_hours=8), (ckpt, 6.0))
    client.force_login(operator)
    page = client.get(reverse("dashboard:team-detail", args=[team_a.slug]), {"from": "2026-11-02", "to": "2026-11-08"})
    link = re.search(rf'<a href="(/jobs/\?[^"]*category={ckpt.value}[^"]*)"', page.content.decode())[1]
    assert "sort=recoverable" in link
    listed = client.get(link.replace("&amp;", "&")).context["page"].object_list
    assert [job.name for job in listed] == ["most-ckpt", "most-unused"]


def test_a_healthy_job_says_so_where_its_causes_would_be(client, operator, jobs):
    """The Why column of a job the rules judged healthy (above the low-utilization line, so searched for no
    cause) was blank, as if nothing had looked at it; a team's worst jobs list such jobs by their unused
    GPU-hours. It says healthy, as the job's page does."""
    client.force_login(operator)
    page = client.get(reverse("dashboard:job-list"), {"team": "team-b"}).content.decode()
    cell = re.search(r'<td class="why"[^>]*>(.*?)</td>', page, re.S)[1]
    assert ">healthy</span>" in cell and "searched for no cause" in cell


def test_the_timeline_caption_speaks_of_shaded_bands_only_when_a_finding_has_windows(client, member_a, team_a):
    """A healthy job's timeline, and one with too little data, have no shaded bands, yet their caption
    said what the bands are and how to hide them from the legend, of which there was no entry: a reader
    looked for bands that were not there. The caption speaks of them only when a finding has a window."""
    from django.core.files.base import ContentFile

    from fleet.series import to_parquet_bytes
    from tests.conftest import tiny_series

    for status, categories in (("healthy", ()), ("insufficient_data", ()), ("classified", (Category.API_MISUSE,))):
        job = JobFactory(team=team_a, name=f"{status}-job", mean_gpu_util=30)
        job.series_file.save("series.parquet", ContentFile(to_parquet_bytes(tiny_series())))
        triaged(job, status, *categories)  # the finding without a window: nothing is shaded
        client.force_login(member_a)
        page = client.get(reverse("dashboard:job-detail", args=[job.pk])).content.decode()
        caption = page.split('id="timeline-help"')[1].split("</p>")[0]
        assert "Drag across the chart to zoom" in caption, status
        assert "Shaded bands" not in caption and "idle windows" not in caption, status


def test_a_finding_spread_over_the_run_says_what_its_hours_are_and_what_its_window_is(client, member_a, team_a):
    """A finding the rules cannot place in idle stretches of its own (a small batch, pageable copies:
    every step a little slower) read "85.5 GPU-hours (213.71 USD) share of the run's unused GPU time.",
    broken English, over "1 time window" that was the whole training phase at 28.7 % utilization, as if
    the GPUs had idled through it. It says the hours are its share of the unused GPU time, spread over
    that stretch, and which stretch it is; a finding placed in idle windows still says so."""
    job = JobFactory(team=team_a, name="spread", mean_gpu_util=28, gpu_count=1)
    result = JobTriage.objects.create(job=job, rule_set=RuleSet.current(), status="classified", is_current=True)
    phase = {"start": "2026-11-16T00:33:00Z", "end": "2026-11-16T04:12:08Z", "minutes": 219.1,
             "label": "training and evaluation", "mean_util": 28.7}  # fmt: skip
    gap = {"start": "2026-11-16T01:00:00Z", "end": "2026-11-16T01:05:00Z", "minutes": 5.0, "label": "checkpoint_save"}
    causes = ((Category.HOST_GPU_TRANSFER, phase, False), (Category.MODEL_CHECKPOINTING, gap, True))
    for category, window, located in causes:
        Finding.objects.create(result=result, job=job, rule_set=result.rule_set, category=category, confidence=0.9,
                               summary="s", gpu_hours=1.5, evidence={"windows": [window]}, guidance={},
                               time_located=located)  # fmt: skip
    client.force_login(member_a)
    html = client.get(reverse("dashboard:job-detail", args=[job.pk])).content.decode()
    spread = html.split(f'id="finding-{Category.HOST_GPU_TRANSFER}"')[1].split("<details")[0]
    said = " ".join(re.sub(r"<[^>]+>", "", spread).split())
    assert "share of the run's unused GPU time." not in said
    assert (
        "1.5 GPU-hours: its share of the run's unused GPU time, spread over the stretch below (training "
        "and evaluation, at 29 % GPU utilization on average), not in idle stretches of its own."
    ) in said, said
    placed = html.split(f'id="finding-{Category.MODEL_CHECKPOINTING}"')[1].split("<details")[0]
    assert "1.5 GPU-hours</strong> in the windows below." in " ".join(placed.split())


def test_a_findings_evidence_lists_say_when_they_show_only_the_first(client, member_a, team_a):
    """The demo's checkpointing job said "31 time windows" and "31 log lines" and listed 30 and 20 of
    them, without a word: a reader counting the rows, or looking for the last save, thought them lost.
    Each list says it shows the first so many of all; a list shown whole says nothing more."""
    from datetime import UTC, datetime, timedelta

    job = JobFactory(team=team_a, name="many-saves", mean_gpu_util=30, gpu_count=1)
    result = JobTriage.objects.create(job=job, rule_set=RuleSet.current(), status="classified", is_current=True)
    start = datetime(2026, 11, 12, 14, 0, tzinfo=UTC)
    at = [start + timedelta(minutes=18 * n) for n in range(31)]
    windows = [
        {"start": t.isoformat(), "end": (t + timedelta(minutes=5)).isoformat(), "minutes": 5.0, "label": "save"}
        for t in at
    ]
    lines = [{"path": "stdout.log", "line": 20 + n, "text": f"Saving model checkpoint {n}"} for n in range(31)]
    many_and_few = (
        (Category.MODEL_CHECKPOINTING, {"windows": windows, "log_lines": lines}),
        (Category.REMOTE_DATA_READING, {"windows": windows[:3], "log_lines": lines[:2]}),
    )
    for category, evidence in many_and_few:
        Finding.objects.create(
            result=result, job=job, rule_set=result.rule_set, category=category, confidence=0.9, summary="s",
            gpu_hours=1.0, evidence=evidence, guidance={}, time_located=True,
        )  # fmt: skip
    client.force_login(member_a)
    html = client.get(reverse("dashboard:job-detail", args=[job.pk])).content.decode()
    many = html.split(f'id="finding-{Category.MODEL_CHECKPOINTING}"')[1].split('class="finding"')[0]
    said = " ".join(re.sub(r"<[^>]+>", " ", many).split())
    assert "31 time windows" in said and "The first 30 of the 31 windows." in said, said
    assert "31 log lines" in said and "The first 20 of the 31 log lines." in said, said
    few = html.split(f'id="finding-{Category.REMOTE_DATA_READING}"')[1].split('class="finding"')[0]
    assert "The first" not in few


def test_a_stretch_a_cause_slowed_is_named_so_on_the_timeline_and_under_it(client, member_a, team_a):
    """The band over a cause's stretch that it slowed throughout (its finding not placed in idle windows)
    was called an idle window, in the legend and in the caption. The legend names it for what it is, and
    the caption says such a band is not idle time; a job with idle windows only keeps the caption it had."""
    import json

    from django.core.files.base import ContentFile

    from fleet.series import to_parquet_bytes
    from tests.conftest import tiny_series

    job = JobFactory(team=team_a, name="small-batch", mean_gpu_util=30)
    job.series_file.save("series.parquet", ContentFile(to_parquet_bytes(tiny_series())))
    triaged(job, "classified", Category.IMPROPER_BATCH_SIZE)  # not placed in idle windows (time_located False)
    phase = {"start": job.start_time.isoformat(), "end": job.end_time.isoformat(), "minutes": 60.0,
             "label": "training and evaluation", "mean_util": 30.0}  # fmt: skip
    Finding.objects.filter(job=job).update(evidence={"windows": [phase]})
    client.force_login(member_a)
    page = client.get(reverse("dashboard:job-detail", args=[job.pk])).content.decode()
    caption = " ".join(page.split('id="timeline-help"')[1].split("</p>")[0].split())
    assert "Shaded bands are the time windows in which a cause the rules found left the GPUs idle" not in caption
    assert ("A band named <em>…: the stretch it slowed</em> is where a cause slowed the GPUs throughout (a little "
            "in every step), not idle time") in caption, caption  # fmt: skip
    figure = json.loads(client.get(reverse("dashboard:job-timeline", args=[job.pk])).content)
    names = [shape.get("name") for shape in figure["layout"]["shapes"] if shape.get("showlegend")]
    assert names == ["Improper batch size: the stretch it slowed"], names


def test_a_job_with_too_little_data_says_what_to_check_first(client, member_a, team_a):
    """A job whose samples cover too little of its run said so twice ("missing data is not idleness", then
    "... is not idle time") and nothing of what to do: its owner was left with a verdict and no next step.
    It says the rules looked for no cause, and what to check first, with the rule set's coverage line."""
    job = JobFactory(team=team_a, name="sparse", mean_gpu_util=19, gpu_count=2)
    triaged(job, "insufficient_data")
    client.force_login(member_a)
    html = client.get(reverse("dashboard:job-detail", args=[job.pk])).content.decode()
    said = " ".join(re.sub(r"<[^>]+>", "", html.split('id="findings"')[1].split("</section>")[0]).split())
    assert "so the rules looked for no cause" in said, said
    assert (
        "Check first that GPU metrics were collected for the whole job (the exporter ran on every node of it, "
        "the import carried all its samples): a run whose samples cover at least 80 % of it is judged."
    ) in said


def test_a_jobs_log_events_name_their_kinds_in_words(client, member_a, team_a):
    """The log events read "checkpoint_save 32 · training_finished 1 · remote_read 90" and each row's kind
    the same, identifiers where a person reads. They read in words; the filter's address keeps the kind."""
    from fleet.models import Artifact, LogEvent

    job = JobFactory(team=team_a)
    log = Artifact.objects.create(job=job, kind="log", path="stdout.log", file="artifacts/x", size=1, sha256="x")
    kinds = ("checkpoint_save", "training_finished", "remote_read", "dataloader_warning", "nccl_error")
    LogEvent.objects.bulk_create(
        [LogEvent(job=job, artifact=log, kind=kind, line_no=n, text=kind) for n, kind in enumerate(kinds, 1)]
    )
    client.force_login(member_a)
    text = client.get(reverse("dashboard:job-detail", args=[job.pk])).content.decode()
    events = text.split('id="log-events"')[1]
    for words in ("checkpoint save", "training finished", "remote read", "DataLoader warning", "NCCL error"):
        assert f"{words} 1</a>" in events and f"<td>{words}</td>" in events, words
    assert "<td>checkpoint_save</td>" not in events and "events=checkpoint_save#log-events" in events
    one = client.get(reverse("dashboard:job-detail", args=[job.pk]), {"events": "remote_read"}).content.decode()
    assert "<strong>remote read 1</strong>" in one
