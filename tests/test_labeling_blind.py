"""Blind means blind everywhere: a rater does not see the rules' findings for a job they still label."""

import csv
import io

import pytest
from django.urls import reverse
from django.utils import timezone

from tests.factories import JobFactory, OwnerFactory, UserFactory
from triage.digests import services as digests
from triage.digests.models import Delivery, DigestKind
from triage.labeling.models import Assignment, Study, StudyJob, StudyRater
from triage.models import Finding, JobTriage, RuleSet
from triage.taxonomy import Category

pytestmark = pytest.mark.django_db


@pytest.fixture
def blind_study(researcher, operator, team_a):
    job = JobFactory(team=team_a, name="labelled-job")
    result = JobTriage.objects.create(job=job, rule_set=RuleSet.current(), status="classified", is_current=True)
    Finding.objects.create(
        result=result, job=job, rule_set=result.rule_set, category=Category.API_MISUSE, confidence=0.9,
        summary="SECRET-FINDING-TEXT", gpu_hours=1.0, evidence={}, guidance={},
    )  # fmt: skip
    study = Study.objects.create(name="pilot", created_by=operator, seed=1, show_findings=False)
    link = StudyRater.objects.create(study=study, user=researcher)
    item = StudyJob.objects.create(study=study, job=job, position=1)
    Assignment.objects.create(item=item, rater=researcher)
    return job, study, link


def test_rater_sees_no_findings_anywhere_until_they_submit(client, researcher, blind_study):
    job, study, link = blind_study
    client.force_login(researcher)
    page = client.get(reverse("dashboard:job-detail", args=[job.pk])).content.decode()
    assert "SECRET-FINDING-TEXT" not in page and "Hidden while you label this job" in page
    assert client.get(reverse("triage:job", args=[job.pk])).status_code == 403
    api = client.get(f"/api/v1/jobs/{job.pk}/").json()
    assert api["findings"] == [] and api["triage"] is None
    listing = client.get("/api/v1/jobs/", {"category": "api_misuse"}).json()
    assert listing["results"] == []  # being listed under a cause would say what the rules found
    assert client.get("/api/v1/jobs/", {"status": "classified"}).json()["results"] == []
    assert [row["categories"] for row in client.get("/api/v1/jobs/").json()["results"]] == [[]]
    # The jobs page, its CSV export, its cause and status filters, and the cause's page.
    jobs_page = client.get(reverse("dashboard:job-list")).content.decode()
    assert "labelled-job" in jobs_page and "hidden while you label it" in jobs_page
    assert "API misuse" not in jobs_page.split("<tbody")[1]
    for query in ({"category": "api_misuse"}, {"status": "classified"}):
        assert "labelled-job" not in client.get(reverse("dashboard:job-list"), query).content.decode()
    from triage.models import Feedback

    owner = UserFactory(username="owner-of-it")
    Feedback.objects.create(job=job, category="api_misuse", user=owner, verdict="right")
    export = b"".join(client.get(reverse("dashboard:job-list"), {"format": "csv"}).streaming_content).decode()
    row = next(csv.DictReader(io.StringIO(export)))
    # No causes, and no answers that would name them.
    assert (row["status"], row["categories"], row["answers"]) == ("hidden", "", "")
    # The job's own day: late in a full run the factory's start times lie past today, and a preset
    # period never ends after today.
    cause_url = reverse("dashboard:category-detail", args=["api_misuse"])
    day = {"from": job.start_time.date().isoformat(), "to": job.start_time.date().isoformat()}
    cause_page = client.get(cause_url, day).content.decode()
    assert "labelled-job" not in cause_page and "SECRET-FINDING-TEXT" not in cause_page
    # The team's page: the job among its worst, its causes hidden, and not counted in the team's causes.
    team_page = client.get(reverse("dashboard:team-detail", args=[job.team.slug]), day)
    assert [row["category"] for row in team_page.context["causes"]] == []
    assert "hidden while you label it" in team_page.content.decode()
    assert "API misuse" not in team_page.content.decode()
    # Nor do the fleet's cause counts for a period that holds the job (the overview's top causes and
    # chart, the causes table, a cause's weekly detections): for a day, a team or a cluster, a count
    # can be this one job.
    assert counted_causes(client, day) == (0, 0, 0)
    # The team's digest, previewed, names its top jobs with their causes: not this one.
    year, week, _ = job.start_time.isocalendar()
    digest = reverse("digests:preview-team", args=[job.team.slug, f"{year}-W{week:02d}"])
    assert "labelled-job" not in client.get(digest, {"part": "html"}).content.decode()
    # Nor the digest mailed to the rater (a member of the job's team too), while a teammate's names it.
    OwnerFactory(user=researcher, team=job.team)
    mate = UserFactory(username="team-mate")
    context = digests.build_context(DigestKind.TEAM, f"{year}-W{week:02d}", job.team)
    mails = {}
    for user in (researcher, mate):
        delivery = Delivery.objects.create(recipient=f"{user.username}@example.org", user=user, kind=DigestKind.TEAM,
                                           team=job.team, iso_week=f"{year}-W{week:02d}")  # fmt: skip
        mails[user] = digests.make_message(context, delivery).alternatives[0][0]
    assert "labelled-job" not in mails[researcher] and "labelled-job" in mails[mate]
    # Nor counted in the digest's causes for the rater (a team's week can be this one job).
    assert "API misuse" not in mails[researcher] and "API misuse" in mails[mate]
    assert [row["row"].category for row in digests.for_viewer(context, researcher)["categories"]] == []

    link.submitted_at = timezone.now()
    link.save()
    assert "SECRET-FINDING-TEXT" in client.get(reverse("dashboard:job-detail", args=[job.pk])).content.decode()
    assert client.get(f"/api/v1/jobs/{job.pk}/").json()["findings"]
    assert len(client.get("/api/v1/jobs/", {"category": "api_misuse"}).json()["results"]) == 1
    assert "labelled-job" in client.get(reverse("dashboard:job-list"), {"category": "api_misuse"}).content.decode()
    assert "labelled-job" in client.get(cause_url, day).content.decode()
    assert "labelled-job" in client.get(digest, {"part": "html"}).content.decode()
    assert counted_causes(client, day) == (1, 1, 1)
    assert [row["row"].category for row in digests.for_viewer(context, researcher)["categories"]] == ["api_misuse"]


def counted_causes(client, period: dict) -> tuple[int, int, int]:
    """API-misuse jobs counted by the overview's causes, the causes table and the cause's trend."""
    overview = client.get(reverse("dashboard:overview"), period).context["categories"]
    table = client.get(reverse("dashboard:category-list"), period).context["categories"]
    trend = client.get(reverse("dashboard:category-detail", args=["api_misuse"]), period).context["trend_figure"]
    return (
        sum(row["jobs"] for row in overview if row["category"] == "api_misuse"),
        next(row["jobs"] for row in table if row["category"] == Category.API_MISUSE),
        int(max(trend["data"][1]["y"], default=0)),  # no week at all where the viewer may count no job
    )


def test_people_outside_the_study_still_see_findings(client, operator, blind_study):
    job, _, _ = blind_study
    client.force_login(operator)
    assert "SECRET-FINDING-TEXT" in client.get(reverse("dashboard:job-detail", args=[job.pk])).content.decode()


def test_a_study_that_shows_findings_does_not_hide_them(client, researcher, blind_study):
    job, study, _ = blind_study
    study.show_findings = True
    study.save()
    client.force_login(researcher)
    assert "SECRET-FINDING-TEXT" in client.get(reverse("dashboard:job-detail", args=[job.pk])).content.decode()
