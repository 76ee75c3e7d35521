"""The demo fleet as `make demo` uses it: imported whole, priced, with logins for a tour."""

import json
import re
from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.urls import reverse

from fleet import ingest
from fleet.access import is_operator, is_researcher
from fleet.models import IngestRun, Job, Owner
from tests.conftest import REPO
from triage.labeling import services
from triage.labeling.models import Label, Study

pytestmark = pytest.mark.django_db


def test_demo_archive_imports_every_job_and_holes_lower_coverage(demo_archive):
    run = ingest.execute_run(ingest.create_run(demo_archive).pk)
    truth = json.loads(demo_archive.with_suffix(".truth.json").read_text())
    assert run.status == IngestRun.Status.SUCCEEDED, run.errors
    assert Job.objects.count() == len(truth["jobs"]) == run.jobs_created
    with_hole = [j["job_id"] for j in truth["jobs"] if any("hole" in d for d in j.get("defects", []))]
    for job in Job.objects.all():
        assert job.mean_gpu_util is not None and job.sample_count > 0
        if job.external_id in with_hole:
            assert job.coverage < 0.99, job.external_id  # the hole is missing data, not idle time
        else:
            assert job.coverage > 0.97, job.external_id


def test_setup_demo_gives_the_roles_on_a_flushed_database(team_a):
    """`manage.py flush` (and a test that empties the database) removes the role groups a migration made:
    the demo's logins still get their roles, rather than the command failing on a missing group."""
    from django.contrib.auth.models import Group

    Group.objects.all().delete()
    call_command("setup_demo", stdout=StringIO())
    assert is_operator(User.objects.get(username="operator"))
    assert is_researcher(User.objects.get(username="researcher"))


def test_setup_demo_prices_the_fleet_and_prints_working_logins(demo_archive, client):
    ingest.execute_run(ingest.create_run(demo_archive).pk)
    out = StringIO()
    call_command("setup_demo", stdout=out)
    logins = {line.split()[0]: line.split()[1] for line in out.getvalue().splitlines() if line.startswith("  ")}
    assert set(logins) == {"operator", "researcher", "alice"}
    users = {name: User.objects.get(username=name) for name in logins}
    assert all(users[name].check_password(password) for name, password in logins.items())
    assert is_operator(users["operator"]) and is_researcher(users["researcher"])
    alice = users["alice"]
    team = Owner.objects.get(user=alice).team
    assert not Job.objects.filter(cost__isnull=True).exists()
    client.force_login(alice)
    page = client.get(reverse("dashboard:job-list")).content.decode()
    assert f'Jobs <span class="muted">{team.jobs.count()}</span>' in page
    # Each login has an address, so the digests can be tried in the demo: alice gets her team's.
    digests = client.get(reverse("digests:index")).content.decode()
    assert f"You receive the {team.name} digest at alice@example.org." in digests


def _headline_value(page: str) -> float:
    return float(re.search(r'<span id="headline-value">([^<]+)</span>', page).group(1))


def test_setup_demo_gives_the_researcher_a_study_two_demo_raters_have_labelled(demo_archive, client):
    """The demo's researcher finds a study to label at once, next to two demo raters who have labelled
    and submitted every job from the demo's ground truth, agreeing often but not always."""
    ingest.execute_run(ingest.create_run(demo_archive).pk)
    call_command("setup_demo", stdout=StringIO())
    researcher = User.objects.get(username="researcher")
    study = Study.objects.get()
    raters = {link.user.username: link for link in study.rater_links.select_related("user")}
    assert set(raters) == {"demo-rater-1", "demo-rater-2", "researcher"}
    for name in ("demo-rater-1", "demo-rater-2"):
        assert not raters[name].user.has_usable_password()  # nobody logs in as a demo rater
        assert raters[name].submitted_at is not None
        assert services.progress(study, raters[name].user) == (study.items.count(),) * 2
    assert services.progress(study, researcher) == (0, study.items.count()) and study.items.count() >= 5

    client.force_login(researcher)
    studies = client.get(reverse("labeling:study-list")).content.decode()
    assert reverse("labeling:study", args=[study.pk]) in studies and study.name in studies
    assert client.get(reverse("labeling:study", args=[study.pk])).status_code == 200
    first = client.get(reverse("labeling:label-next", args=[study.pk]))
    label_page = client.get(first.url)
    item = study.items.order_by("position").first()
    assert first.url == reverse("labeling:label", args=[study.pk, item.pk])
    assert label_page.status_code == 200 and item.job.external_id in label_page.content.decode()
    # Blind until they submit: the researcher sees no one's labels yet, as in any study (a 403 that says so).
    assert client.get(reverse("labeling:agreement", args=[study.pk])).status_code == 403

    # The operator sees the two demo raters' kappa at once: high, but not perfect agreement.
    client.force_login(User.objects.get(username="operator"))
    agreement_page = client.get(reverse("labeling:agreement", args=[study.pk])).content.decode()
    assert "Cohen's kappa" in agreement_page and "demo-rater-1 and demo-rater-2" in agreement_page
    assert 0.6 <= _headline_value(agreement_page) < 1

    # Once the researcher has labelled every job and submitted, they see the agreement too.
    for assignment in services.assignments_of(study, researcher):
        services.save_answer(assignment, {"none": ""})
    client.force_login(researcher)
    client.post(reverse("labeling:submit", args=[study.pk]))
    agreement_page = client.get(reverse("labeling:agreement", args=[study.pk])).content.decode()
    assert "demo-rater-1 &amp; demo-rater-2: kappa" in agreement_page
    report = services.agreement_report(study)
    pair = next(p for p in report.pairs if set(p.raters) == {"demo-rater-1", "demo-rater-2"})
    assert 0.6 <= pair.pooled_kappa.value < 1


def test_setup_demo_twice_leaves_one_demo_study_and_the_researchers_labels(demo_archive):
    ingest.execute_run(ingest.create_run(demo_archive).pk)
    call_command("setup_demo", stdout=StringIO())
    study = Study.objects.get()
    researcher = User.objects.get(username="researcher")
    mine = services.assignments_of(study, researcher).order_by("item__position").first()
    services.save_answer(mine, {"none": ""})
    labels = Label.objects.count()

    call_command("setup_demo", stdout=StringIO())
    assert Study.objects.get() == study
    assert Label.objects.count() == labels and services.progress(study, researcher)[0] == 1
    assert User.objects.filter(username__startswith="demo-rater-").count() == 2


def test_setup_demo_again_after_an_upload_says_the_study_is_kept(demo_archive):
    """The README's walk has the operator upload docs/examples/example-archive.zip, which has no ground
    truth beside it; `setup_demo` run again then (new passwords for a lost login) keeps the study and
    says so, where it said "No labeling study: no demo ground truth beside the imported archive"
    of a study that was there, untouched, for the researcher to go on labelling."""
    ingest.execute_run(ingest.create_run(demo_archive).pk)
    call_command("setup_demo", stdout=StringIO())
    study = Study.objects.get()
    example = ingest.execute_run(ingest.create_run(REPO / "docs" / "examples" / "example-archive.zip").pk)
    assert example.status == IngestRun.Status.SUCCEEDED, example.errors

    out = StringIO()
    call_command("setup_demo", stdout=out)
    kept = f"Labeling study '{study.name}' (already there, left as it is): {study.items.count()} jobs"
    assert kept in out.getvalue()
    assert "No labeling study" not in out.getvalue()
    assert Study.objects.get() == study


def test_setup_demo_again_says_how_far_the_researcher_has_labelled(demo_archive):
    """Run again (new passwords for a lost login), `setup_demo` said "researcher has them to label" of a study
    the researcher had labelled and submitted whole; it says what is so: none labelled yet, some of them, all
    of them not yet submitted, or labelled and submitted."""
    ingest.execute_run(ingest.create_run(demo_archive).pk)

    def said() -> str:
        out = StringIO()
        call_command("setup_demo", stdout=out)
        return next(line for line in out.getvalue().splitlines() if line.startswith("Labeling study"))

    assert said().endswith("; researcher has them to label.")
    study = Study.objects.get()
    researcher = User.objects.get(username="researcher")
    count = study.items.count()
    mine = list(services.assignments_of(study, researcher).order_by("item__position"))
    services.save_answer(mine[0], {"none": ""})
    assert said().endswith(f"; researcher has labelled 1 of them, {count - 1} to go.")
    for assignment in mine[1:]:
        services.save_answer(assignment, {"none": ""})
    assert said().endswith(f"; researcher has labelled all {count}, not submitted yet.")
    services.submit(study, researcher)
    line = said()
    assert line.endswith("; researcher has labelled and submitted them.") and "to label" not in line


def test_setup_demo_counts_the_jobs_the_researcher_skipped_apart_from_those_labelled(demo_archive):
    """A job the researcher skipped ("not enough evidence") has no label, yet `setup_demo` counted it labelled:
    one labelled and two skipped read "researcher has labelled 3 of them". It says each: labelled, skipped, and
    how many are left, also once all are done and once they are submitted."""
    ingest.execute_run(ingest.create_run(demo_archive).pk)

    def said() -> str:
        out = StringIO()
        call_command("setup_demo", stdout=out)
        return next(line for line in out.getvalue().splitlines() if line.startswith("Labeling study"))

    said()  # makes the study
    study = Study.objects.get()
    researcher = User.objects.get(username="researcher")
    count = study.items.count()
    mine = list(services.assignments_of(study, researcher).order_by("item__position"))
    services.save_answer(mine[0], {"none": ""})
    for assignment in mine[1:3]:
        services.skip_job(assignment, "not_enough_evidence")
    assert said().endswith(f"; researcher has labelled 1 and skipped 2 of them, {count - 3} to go.")
    for assignment in mine[3:]:
        services.save_answer(assignment, {"none": ""})
    assert said().endswith(f"; researcher has labelled {count - 2} and skipped 2, not submitted yet.")
    services.submit(study, researcher)
    assert said().endswith(f"; researcher has labelled {count - 2}, skipped 2 and submitted them.")


def test_setup_demo_names_a_truth_file_it_cannot_read(demo_archive, tmp_path):
    ingest.execute_run(ingest.create_run(demo_archive).pk)
    broken = tmp_path / "broken.truth.json"
    broken.write_text("{not json")
    with pytest.raises(CommandError, match=r"broken\.truth\.json: not a demo ground truth"):
        call_command("setup_demo", "--truth", str(broken), stdout=StringIO())
    assert not Study.objects.exists()
