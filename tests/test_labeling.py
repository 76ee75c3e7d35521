"""Labeling studies as researchers meet them: create, label blind, agree, adjudicate, freeze, measure
the rules, export and import. Permissions for every persona."""

from __future__ import annotations

import csv
import html
import io
import json
import re

import pytest
from django.urls import reverse

from fleet.access import RESEARCHERS_GROUP
from tests.conftest import user_in_group
from tests.factories import ClusterFactory, JobFactory
from tests.reading import as_read
from triage.labeling import exchange, services
from triage.labeling.models import Assignment, GoldItem, Study
from triage.models import Feedback, Finding, JobTriage, RuleSet, TriageStatus
from triage.rules import RULES_REVISION
from triage.taxonomy import Category

pytestmark = pytest.mark.django_db

BATCH = Category.IMPROPER_BATCH_SIZE.value
CKPT = Category.MODEL_CHECKPOINTING.value
PINNED = Category.HOST_GPU_TRANSFER.value


def make_researcher(username):
    return user_in_group(username, RESEARCHERS_GROUP)


@pytest.fixture
def raters(researcher):
    return [researcher, make_researcher("ravi-rater")]


@pytest.fixture
def jobs(team_a, team_b):
    cluster = ClusterFactory(name="c1")
    low = [JobFactory(cluster=cluster, team=team_a if i % 2 else team_b, mean_gpu_util=20.0 + i) for i in range(6)]
    JobFactory(cluster=cluster, team=team_a, mean_gpu_util=90.0, name="healthy-job")
    return low


@pytest.fixture
def study(raters, jobs):
    return services.create_study(name="Pilot", lead=raters[0], raters=raters, sample_size=4, seed=11)


@pytest.fixture
def wide_study(raters, jobs):
    """Six jobs: enough for a bootstrap interval (agreement.MIN_JOBS_FOR_INTERVAL is 5)."""
    return services.create_study(name="Wide", lead=raters[0], raters=raters, sample_size=6, seed=11)


def run_wide_study(study, raters):
    """As run_study, and both raters agree on jobs 5 (batch size) and 6 (none): 5 of 6 jobs agreed."""
    first, second = raters
    answer(study, first, {1: [BATCH], 2: [CKPT, PINNED], 3: [BATCH], 4: ["none"], 5: [BATCH], 6: ["none"]})
    answer(study, second, {1: [BATCH], 2: [PINNED, CKPT], 3: [CKPT], 4: ["none"], 5: [BATCH], 6: ["none"]})
    for rater in raters:
        services.submit(study, rater)


def answer(study, user, options_by_position):
    for assignment in services.assignments_of(study, user):
        chosen = options_by_position[assignment.item.position]
        services.save_answer(assignment, dict.fromkeys(chosen, "seen in the timeline"))


def test_creating_a_study_draws_a_seeded_sample_of_low_utilization_jobs(study, jobs, raters):
    assert study.items.count() == 4
    assert study.sampling_record["population"] == 6  # the healthy job is not a candidate
    assert study.sampling_record["seed"] == 11
    assert not study.show_findings
    assert set(study.items.values_list("job_id", flat=True)) <= {j.pk for j in jobs}
    # Two raters, two labels per job: both label every job.
    assert Assignment.objects.filter(item__study=study).count() == 8
    again = services.create_study(name="Again", lead=raters[0], raters=raters, sample_size=4, seed=11)
    assert list(again.items.values_list("job_id", flat=True)) == list(study.items.values_list("job_id", flat=True))


def test_a_study_of_disputed_jobs_samples_only_jobs_whose_causes_someone_called_wrong(client, raters, jobs, member_a):
    disputed, confirmed = jobs[0], jobs[1]
    Feedback.objects.create(job=disputed, category=CKPT, user=member_a, verdict=Feedback.Verdict.WRONG)
    Feedback.objects.create(job=confirmed, category=CKPT, user=member_a, verdict=Feedback.Verdict.RIGHT)
    Feedback.objects.create(job=confirmed, category=BATCH, user=member_a, verdict=Feedback.Verdict.EXPECTED)
    client.force_login(raters[0])
    response = client.post(
        reverse("labeling:study-create"),
        {
            "name": "Disputed",
            "strategy": "all",
            "seed": 5,
            "low_util_only": "on",
            "low_util_threshold": 50,
            "disputed_only": "on",
            "raters": [u.pk for u in raters],
            "labels_per_job": 2,
        },
    )
    study = Study.objects.get(name="Disputed")
    assert response.status_code == 302
    assert list(study.items.values_list("job_id", flat=True)) == [disputed.pk]
    assert study.disputed_only and study.sampling_record["disputed_only"] is True
    assert "disputed only" in client.get(reverse("labeling:study", args=[study.pk])).content.decode()
    Feedback.objects.all().delete()
    with pytest.raises(services.LabelingError, match="disputed jobs only"):
        services.create_study(name="None", lead=raters[0], raters=raters, strategy="all", seed=1, disputed_only=True)


def test_a_study_needs_enough_raters(raters, jobs):
    with pytest.raises(services.LabelingError, match="at least 3 raters"):
        services.create_study(name="x", lead=raters[0], raters=raters, sample_size=2, seed=1, labels_per_job=3)


def test_team_members_and_outsiders_see_nothing_of_studies(client, study, member_a, outsider):
    for user in (member_a, outsider):
        client.force_login(user)
        for url in (
            reverse("labeling:study-list"),
            reverse("labeling:study-create"),
            reverse("labeling:study", args=[study.pk]),
            reverse("labeling:agreement", args=[study.pk]),
            reverse("labeling:export", args=[study.pk, "labels", "csv"]),
        ):
            assert client.get(url).status_code == 404, url


def test_a_researcher_outside_the_study_does_not_see_it(client, study):
    client.force_login(make_researcher("nina-nosy"))
    assert client.get(reverse("labeling:study", args=[study.pk])).status_code == 404
    assert "Pilot" not in client.get(reverse("labeling:study-list")).content.decode()


def test_anonymous_visitors_are_sent_to_login(client, study):
    response = client.get(reverse("labeling:study", args=[study.pk]))
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_a_researcher_creates_a_study_in_the_browser_form(client, researcher, raters, jobs):
    client.force_login(researcher)
    page = client.get(reverse("labeling:study-create")).content.decode()
    assert "ravi-rater" in page
    response = client.post(
        reverse("labeling:study-create"),
        {
            "name": "By team",
            "strategy": "stratified_team",
            "sample_size": 4,
            "seed": 5,
            "low_util_only": "on",
            "low_util_threshold": 50,
            "raters": [u.pk for u in raters],
            "labels_per_job": 2,
        },
    )
    study = Study.objects.get(name="By team")
    assert response.status_code == 302 and response["Location"] == reverse("labeling:study", args=[study.pk])
    assert study.sampling_record["strata"] == {"team-a": 2, "team-b": 2}


def test_labeling_page_shows_the_evidence_and_hides_findings_in_a_blind_study(client, study, researcher):
    item = study.items.first()
    rule_set = RuleSet.current()
    result = JobTriage.objects.create(job=item.job, rule_set=rule_set, status=TriageStatus.CLASSIFIED)
    Finding.objects.create(
        result=result, job=item.job, rule_set=rule_set, category=CKPT, confidence=0.9,
        summary="SECRET rule finding", gpu_hours=1.0,
    )  # fmt: skip
    client.force_login(researcher)
    page = client.get(reverse("labeling:label", args=[study.pk, item.pk])).content.decode()
    assert item.job.name in page
    assert reverse("dashboard:job-timeline", args=[item.job.pk]) in page
    assert "Insufficient GPU memory" in page and 'data-key="1"' in page
    assert "SECRET rule finding" not in page
    Study.objects.filter(pk=study.pk).update(show_findings=True)
    assert "SECRET rule finding" in client.get(reverse("labeling:label", args=[study.pk, item.pk])).content.decode()


def test_a_job_with_a_whole_repository_of_scripts_keeps_the_labeling_page_light(client, study, researcher, settings,
                                                                                 tmp_path, monkeypatch):  # fmt: skip
    """Every script's first 256 KiB went into the page: a job bringing a repository of 2,000 files
    made a page of hundreds of megabytes. Now the first 40 files and 4 MiB of text in all."""
    from django.core.files.base import ContentFile
    from django.core.files.storage import default_storage

    from fleet.models import Artifact, LogEvent
    from triage.labeling import views

    settings.STORAGES = {**settings.STORAGES, "default": {"BACKEND": "django.core.files.storage.FileSystemStorage",
                                                          "OPTIONS": {"location": str(tmp_path)}}}  # fmt: skip
    job = study.items.first().job

    def add(kind: str, path: str, text: str) -> None:
        name = default_storage.save(f"artifacts/{kind}-{path}", ContentFile(text.encode()))
        Artifact.objects.create(job=job, kind=kind, path=path, file=name, size=len(text), sha256="x")

    add("log", "stdout.log", "LOG-TEXT " * 10)
    for number in range(45):
        add("script", f"src/m{number:02d}.py", f"SCRIPT-{number:02d} = 1\n")
    client.force_login(researcher)
    url = reverse("labeling:label", args=[study.pk, study.items.first().pk])
    page = client.get(url).content.decode()
    assert "LOG-TEXT" in page and "SCRIPT-38 = 1" in page and "SCRIPT-39 = 1" not in page  # the log and 39 scripts
    assert page.count("Not shown: this page carries the text of the first 40 files") == 6
    assert "src/m44.py" in page  # listed by name
    monkeypatch.setattr(views, "ARTIFACT_PAGE_BYTES", 100)  # the log's 90 bytes, then 10 of the first script
    page = client.get(url).content.decode()
    assert "LOG-TEXT" in page and "SCRIPT-00 " in page and "SCRIPT-00 = 1" not in page and "SCRIPT-01" not in page
    assert "Only the first 10\xa0bytes are shown: <a href=" in page  # the script is cut where the budget ends
    assert page.count("Not shown: this page carries the text of the first 40 files and 100\xa0bytes in all") == 44
    # Each file cut or not shown opens whole on its own page, in a new tab (the answers stay).
    last = Artifact.objects.get(job=job, path="src/m44.py")
    assert f'<a href="{reverse("dashboard:job-file", args=[job.pk, last.pk])}" target="_blank"' in page
    assert "SCRIPT-44 = 1" in client.get(reverse("dashboard:job-file", args=[job.pk, last.pk])).content.decode()
    log = Artifact.objects.get(job=job, path="stdout.log")
    LogEvent.objects.create(job=job, artifact=log, kind="epoch", line_no=1, text="LOG-TEXT")
    page = client.get(url).content.decode()
    line_url = reverse("dashboard:job-file", args=[job.pk, log.pk]) + "?line=1#L1"
    assert f'<a href="{line_url}" target="_blank" rel="noopener">stdout.log:1</a>' in page
    assert 'data-open-in="tab"' in page  # a click on a timeline marker opens a new tab too


def test_save_and_next_moves_on_and_counts_progress(client, study, researcher):
    client.force_login(researcher)
    first = services.next_assignment(study, researcher)
    response = client.post(
        reverse("labeling:label", args=[study.pk, first.item_id]),
        {
            "option": [BATCH, "other"],
            f"rationale-{BATCH}": "util 20 %, memory 10 %",
            "other_note": "odd sleep",
            "then": "next",
        },
    )
    assert response.status_code == 302
    follow = client.get(response["Location"])
    assert follow.status_code == 302 and follow["Location"].endswith(
        f"/label/{services.next_assignment(study, researcher).item_id}/"
    )
    assert services.progress(study, researcher) == (1, 4)
    first.refresh_from_db()
    assert {label.option: label.rationale for label in first.labels.all()} == {
        BATCH: "util 20 %, memory 10 %",
        "other": "",
    }
    assert first.other_note == "odd sleep"


def test_bad_answers_are_refused_with_a_reason(client, study, researcher):
    client.force_login(researcher)
    item = services.next_assignment(study, researcher).item_id
    url = reverse("labeling:label", args=[study.pk, item])
    assert "at least one category" in client.post(url, {}).content.decode()
    assert "cannot be combined" in client.post(url, {"option": ["none", BATCH]}).content.decode()
    assert "Say what" in client.post(url, {"option": ["other"]}).content.decode()
    assert services.progress(study, researcher) == (0, 4)


def test_a_rater_cannot_open_another_raters_assignment_or_see_labels_before_submitting(client, study, raters):
    first, second = raters
    answer(study, first, {p: [BATCH] for p in range(1, 5)})
    client.force_login(second)  # refused, and told why (tests/test_labeling_hidden_pages.py)
    assert client.get(reverse("labeling:agreement", args=[study.pk])).status_code == 403
    assert client.get(reverse("labeling:export", args=[study.pk, "labels", "csv"])).status_code == 403
    # The lead is a rater too: until they submit, they see no one else's labels either.
    answer(study, second, {p: [CKPT] for p in range(1, 5)})
    client.force_login(first)
    assert client.get(reverse("labeling:agreement", args=[study.pk])).status_code == 403
    client.post(reverse("labeling:submit", args=[study.pk]))
    assert client.get(reverse("labeling:agreement", args=[study.pk])).status_code == 200
    # Submitted labels are final.
    assignment = services.assignments_of(study, first).first()
    with pytest.raises(services.LabelingError, match="submitted"):
        services.save_answer(assignment, {CKPT: ""})


def test_a_submitted_rater_sees_no_labels_another_rater_can_still_change(client, study, raters, operator):
    first, second = raters
    answer(study, first, {p: [BATCH] for p in range(1, 5)})
    services.submit(study, first)
    answer(study, second, {p: [CKPT] for p in range(1, 5)})  # saved, not submitted: they may still change
    agreement_url = reverse("labeling:agreement", args=[study.pk])
    for viewer in (first, operator):  # the submitted rater who leads the study, and an operator
        client.force_login(viewer)
        page = client.get(agreement_url).content.decode()
        assert "ravi-rater" not in page and 'id="disagreements"' not in page and 'id="pairs"' not in page
        assert "1 of 2 raters have submitted" in page
        # With no job double-labelled yet there is nothing to agree on, not agreement everywhere.
        assert "agree on every job" not in page and "No job has labels from two submitted raters yet" in page
        export = client.get(reverse("labeling:export", args=[study.pk, "labels", "csv"])).content.decode()
        assert "ravi-rater" not in export and BATCH in export
        item = study.items.get(position=1)
        adjudication = client.get(reverse("labeling:adjudicate", args=[study.pk, item.pk])).content.decode()
        assert "ravi-rater" not in adjudication
        gold_page = client.get(reverse("labeling:gold", args=[study.pk])).content.decode()
        assert "without two submitted labels yet" in gold_page
    # Once they submit, their labels are final and join the figures.
    services.submit(study, second)
    client.force_login(first)
    page = client.get(agreement_url).content.decode()
    assert "ravi-rater" in page and 'id="disagreements"' in page and "raters have submitted" not in page


def test_an_export_taken_before_every_rater_submitted_says_partial_in_its_file_name(client, study, raters):
    """A CSV has no room to say it holds only the submitted raters' labels; saved mid-study it passed
    for the study's figures. Its name says so until every rater has submitted."""
    first, second = raters
    answer(study, first, {p: [BATCH] for p in range(1, 5)})
    services.submit(study, first)
    client.force_login(first)

    def file_name(kind, fmt):
        response = client.get(reverse("labeling:export", args=[study.pk, kind, fmt]))
        return re.search(r'filename="([^"]+)"', response["Content-Disposition"]).group(1)

    partial = f"study-{study.pk}-labels-partial-1-of-2-raters"
    assert (file_name("labels", "csv"), file_name("labels", "json")) == (f"{partial}.csv", f"{partial}.json")
    assert file_name("agreement", "csv") == f"study-{study.pk}-agreement-partial-1-of-2-raters.csv"
    answer(study, second, {p: [BATCH] for p in range(1, 5)})
    services.submit(study, second)
    assert file_name("labels", "csv") == f"study-{study.pk}-labels.csv"
    assert file_name("agreement", "json") == f"study-{study.pk}-agreement.json"


def test_the_agreement_in_words_for_a_paper_once_every_rater_has_submitted(client, wide_study, raters):
    study = wide_study
    first, second = raters
    answer(study, first, {1: [BATCH], 2: [CKPT, PINNED], 3: [BATCH], 4: ["none"], 5: [BATCH], 6: ["none"]})
    services.submit(study, first)
    client.force_login(first)
    url = reverse("labeling:agreement", args=[study.pk])
    assert 'id="methods-sentence"' not in client.get(url).content.decode()  # partial: the figures may change
    answer(study, second, {1: [BATCH], 2: [PINNED, CKPT], 3: [CKPT], 4: ["none"], 5: [BATCH], 6: ["none"]})
    services.submit(study, second)
    report = services.agreement_report(study)
    kappa, alpha = report.pairs[0].pooled_kappa, report.group.pooled_alpha
    expected = (
        "Two raters each labelled the same 6 jobs independently (blind to the rules' findings), choosing any "
        "of the 15 categories, or 'none of these', or 'other'. Pooled over every (job, option) decision: "
        f"Cohen's kappa {kappa.value:.3f} (95 % CI [{kappa.low:.3f}, {kappa.high:.3f}]); "
        f"Krippendorff's alpha {alpha.value:.3f} (95 % CI [{alpha.low:.3f}, {alpha.high:.3f}]). "
        f"Intervals: percentile bootstrap over jobs, 1,000 resamples, seed {study.seed}. "
        "Their label sets were identical on 5 of 6 jobs (83.3 %)."
    )
    page = client.get(url).content.decode()
    assert f'<p id="methods-sentence">{html.escape(expected)}</p>' in page
    data = client.get(reverse("labeling:export", args=[study.pk, "agreement", "json"])).json()
    assert data["methods_sentence"] == expected


def test_the_sentence_for_a_paper_under_perfect_agreement_gives_the_exact_interval_not_a_bootstrap(study, raters):
    for rater in raters:
        answer(study, rater, {1: [BATCH], 2: [CKPT], 3: [BATCH], 4: ["none"]})
        services.submit(study, rater)
    said = exchange.methods_sentence(study, services.agreement_report(study))
    assert (
        "Cohen's kappa 1.000 and Krippendorff's alpha 1.000 (the raters agreed on all 4 jobs, so no bootstrap "
        "interval; exact 95 % interval of the share of jobs agreed 39.8–100 %)." in said
    )
    assert "Intervals: percentile bootstrap" not in said and "identical on 4 of 4 jobs (100.0 %)" in said


def test_a_rater_who_has_labelled_every_job_can_review_them_before_and_after_submitting(client, study, researcher):
    # "Review my labels" went to the next *unlabelled* job, and with none left back to the study page.
    answer(study, researcher, {1: [BATCH], 2: [CKPT], 3: [BATCH], 4: ["none"]})
    client.force_login(researcher)
    first = services.assignments_of(study, researcher).order_by("item__position").first()
    for label in ("Review my labels", "See my labels"):
        page = client.get(reverse("labeling:study", args=[study.pk])).content.decode()
        review = reverse("labeling:label", args=[study.pk, first.item_id])
        assert f'<a id="review-labels" href="{review}">{label}</a>' in page
        response = client.get(review)
        assert response.status_code == 200 and 'id="opt-improper_batch_size" data-key="5" checked' in (
            response.content.decode()
        )
        services.submit(study, researcher)


def test_the_question_before_submitting_names_a_study_whose_name_asks_a_question_once(client, raters, jobs):
    """The demo study is "Demo: why do low-utilization GPUs idle?": the confirmation read "Submit your
    labels for Demo: why do low-utilization GPUs idle?? They are final". The name is on a line of its own."""
    study = services.create_study(name="Why idle?", lead=raters[0], raters=raters, sample_size=2, seed=3)
    client.force_login(raters[0])
    page = client.get(reverse("labeling:study", args=[study.pk])).content.decode()
    asked = html.unescape(re.search(r'data-confirm="([^"]*)"', page).group(1))
    assert asked == "Submit your labels? They are final: afterwards you cannot change them.\n\nStudy: Why idle?"


def test_submitting_needs_every_job_labelled(client, study, researcher):
    client.force_login(researcher)
    response = client.post(reverse("labeling:submit", args=[study.pk]), follow=True)
    assert "Label (or skip) all your jobs first (0 of 4 done)" in response.content.decode()


def run_study(study, raters):
    """Both raters label: agree on jobs 1, 2, 4; disagree on job 3."""
    first, second = raters
    answer(study, first, {1: [BATCH], 2: [CKPT, PINNED], 3: [BATCH], 4: ["none"]})
    answer(study, second, {1: [BATCH], 2: [PINNED, CKPT], 3: [CKPT], 4: ["none"]})
    for rater in raters:
        services.submit(study, rater)


def test_agreement_page_shows_kappa_per_pair_and_category_and_the_disagreement(client, study, raters):
    run_study(study, raters)
    client.force_login(raters[0])
    page = client.get(reverse("labeling:agreement", args=[study.pk])).content.decode()
    assert "rita-researcher &amp; ravi-rater" in page or "ravi-rater &amp; rita-researcher" in page
    assert "75.0 %" in page  # 3 of 4 identical label sets
    assert "Improper batch size" in page and "API misuse" in page
    report = services.agreement_report(study)
    (pair,) = report.pairs
    assert [study.items.get(pk=d.unit).position for d in report.disagreements] == [3]
    by_option = {o.option: o for o in pair.per_option}
    assert by_option[Category.API_MISUSE.value].kappa.value is None
    assert by_option[PINNED].kappa.value == pytest.approx(1.0)


def test_each_disagreement_links_to_its_job_and_for_the_lead_to_its_adjudication(client, study, raters):
    run_study(study, raters)  # the raters disagree on job 3
    item = study.items.get(position=3)
    triage_with(RuleSet.current(), item.job, [BATCH])
    JobTriage.objects.filter(job=item.job).update(is_current=True)
    Finding.objects.filter(job=item.job).update(summary="RULES-SAID-THIS")
    # ravi has submitted here, but labels the same jobs, blind, in a second study.
    later = services.create_study(name="Later", lead=raters[0], raters=raters, strategy="all", seed=3)
    assert later.items.filter(job=item.job).exists() and not later.show_findings
    job_link = f'<a href="{reverse("dashboard:job-detail", args=[item.job_id])}">{item.job}</a>'
    adjudicate_link = f'href="{reverse("labeling:adjudicate", args=[study.pk, item.pk])}"'

    def disagreements():
        page = client.get(reverse("labeling:agreement", args=[study.pk])).content.decode()
        return page.split('id="disagreements"')[1].split("</table>")[0]

    client.force_login(raters[0])  # the lead
    listed = disagreements()
    assert job_link in listed and adjudicate_link in listed
    client.force_login(raters[1])  # a rater: the job, not the lead's adjudication
    listed = disagreements()
    assert job_link in listed and adjudicate_link not in listed
    job_page = client.get(reverse("dashboard:job-detail", args=[item.job_id])).content.decode()
    assert "RULES-SAID-THIS" not in job_page and "Hidden while you label this job" in job_page


def test_agreement_figures_export_as_csv_and_json_with_each_pairs_counts(client, study, raters, tmp_path):
    from django.core.management import call_command

    run_study(study, raters)
    report = services.agreement_report(study)
    (pair,) = report.pairs
    client.force_login(raters[1])
    page = client.get(reverse("labeling:agreement", args=[study.pk])).content.decode()
    csv_url = reverse("labeling:export", args=[study.pk, "agreement", "csv"])
    assert f'href="{csv_url}"' in page
    assert "Krippendorff&#x27;s alpha" in page or "Krippendorff's alpha" in page  # two raters: alpha shown too
    response = client.get(csv_url)
    assert response["Content-Disposition"] == f'attachment; filename="study-{study.pk}-agreement.csv"'
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert list(rows[0]) == exchange.AGREEMENT_COLUMNS
    kappa = {r["option"]: r for r in rows if r["statistic"] == "cohen_kappa"}
    assert len(kappa) == 18  # pooled and the 17 options
    pooled = kappa["pooled"]
    assert (pooled["rater_a"], pooled["rater_b"], pooled["jobs"]) == ("ravi-rater", "rita-researcher", "4")
    assert float(pooled["value"]) == pytest.approx(pair.pooled_kappa.value, abs=1e-4)
    # Four jobs, one disagreement: too few to resample (at least 5), so no interval, and the reason.
    assert (pooled["low"], pooled["high"]) == ("", "")
    assert pooled["no_interval_reason"] == "too few jobs for an interval" and pooled["jobs_skipped"] == "0"
    assert float(pooled["percent_agreement"]) == pytest.approx(pair.pooled_percent, abs=1e-4)
    # Batch size: both on job 1; only rita (who said batch size where ravi said checkpointing) on job 3.
    batch = kappa[BATCH]
    assert [batch[c] for c in ("both_yes", "only_a", "only_b", "both_no")] == ["1", "0", "1", "2"]
    assert kappa[Category.API_MISUSE.value]["value"] == ""  # undefined, as the page's dash
    assert kappa[Category.API_MISUSE.value]["percent_agreement"] == "1.0"
    (identical,) = [r for r in rows if r["statistic"] == "identical_label_sets"]
    assert identical["percent_agreement"] == "0.75"
    alpha = {r["option"]: r for r in rows if r["statistic"] == "krippendorff_alpha"}
    assert float(alpha["pooled"]["value"]) == pytest.approx(report.group.pooled_alpha.value, abs=1e-4)
    data = client.get(reverse("labeling:export", args=[study.pk, "agreement", "json"])).json()
    assert data["format"] == "fleet-triage-agreement" and data["jobs_double_rated"] == 4
    assert data["raters"] == ["ravi-rater", "rita-researcher"] and data["raters_submitted"] == [2, 2]
    assert data["bootstrap"] == {
        "resamples": 1000, "confidence": 0.95, "seed": study.seed, "method": "percentile", "max_undefined_share": 0.01,
        "min_jobs": 5,
    }  # fmt: skip
    assert len(data["rows"]) == len(rows)
    call_command("export_study", study.pk, "agreement", "--out", str(tmp_path / "agreement.csv"))
    assert (tmp_path / "agreement.csv").read_text() == response.content.decode()
    # The same access as the other exports: not to someone outside the study.
    client.force_login(make_researcher("outside"))
    assert client.get(csv_url).status_code == 404


def test_every_row_of_the_agreement_json_has_the_csvs_columns_null_where_the_csv_is_empty(client, study, raters):
    run_study(study, raters)
    client.force_login(raters[0])
    url = reverse("labeling:export", args=[study.pk, "agreement", "json"])
    rows = client.get(url).json()["rows"]
    exported = client.get(url.replace(".json", ".csv")).content.decode()
    cells = [[row[c] for c in exchange.AGREEMENT_COLUMNS] for row in csv.DictReader(io.StringIO(exported))]
    # A script reads every row alike: each has every column, a figure or null, never a missing key
    # (identical_label_sets rows had no value, low, high nor no_interval_reason) nor an empty string.
    assert {tuple(row) for row in rows} == {tuple(exchange.AGREEMENT_COLUMNS)}
    assert "" not in {value for row in rows for value in row.values()}
    (identical,) = [row for row in rows if row["statistic"] == "identical_label_sets"]
    assert [identical[c] for c in ("value", "low", "high", "no_interval_reason")] == [None] * 4
    assert identical["percent_agreement"] == 0.75
    (undefined,) = [r for r in rows if r["statistic"] == "cohen_kappa" and r["option"] == Category.API_MISUSE.value]
    assert undefined["value"] is None and undefined["percent_agreement"] == 1.0  # the page's dash
    alpha = next(row for row in rows if row["statistic"] == "krippendorff_alpha")
    assert alpha["rater_a"] is None and alpha["both_yes"] is None  # all raters together: no pair, no 2 x 2 table
    # The CSV is unchanged: the same cells, empty where the JSON has null.
    assert [[exchange.spreadsheet_safe(row[c]) for c in exchange.AGREEMENT_COLUMNS] for row in rows] == cells


def test_a_rare_category_shows_no_interval_and_says_why_on_the_page_and_in_the_exports(client, wide_study, raters):
    """Pinned memory is on one job of six, both raters agreeing: most resamples without that job
    have no kappa, and the few left all say 1.000, a zero-width interval that claims certainty."""
    study = wide_study
    run_wide_study(study, raters)
    (pair,) = services.agreement_report(study).pairs
    pinned = next(cell.kappa for cell in pair.per_option if cell.option == PINNED)
    assert pinned.value == pytest.approx(1.0) and pinned.low is None
    client.force_login(raters[0])
    page = client.get(reverse("labeling:agreement", args=[study.pk])).content.decode()
    assert "[1.000, 1.000]" not in page
    assert '1.000 <small class="no-interval">(too few positive labels for an interval)</small>' in page
    exported = client.get(reverse("labeling:export", args=[study.pk, "agreement", "csv"])).content.decode()
    rows = list(csv.DictReader(io.StringIO(exported)))
    row = next(r for r in rows if r["statistic"] == "cohen_kappa" and r["option"] == PINNED)
    assert (row["value"], row["low"], row["high"]) == ("1.0", "", "")
    assert row["no_interval_reason"] == "too few positive labels for an interval"
    pooled = next(r for r in rows if r["statistic"] == "cohen_kappa" and r["option"] == "pooled")
    assert pooled["low"] != "" and pooled["no_interval_reason"] == ""
    data = client.get(reverse("labeling:export", args=[study.pk, "agreement", "json"])).json()
    (json_row,) = [r for r in data["rows"] if r["statistic"] == "cohen_kappa" and r["option"] == PINNED]
    assert json_row["no_interval_reason"] == "too few positive labels for an interval"
    assert data["bootstrap"]["max_undefined_share"] == 0.01


def test_perfect_agreement_says_it_has_nothing_to_resample_and_how_many_jobs_it_rests_on(client, study, raters):
    """Both raters give every job the same labels: the pooled kappa's bootstrap interval was
    [1.000, 1.000], certainty from four jobs. The page and exports say why there is none instead, and
    give the exact interval of the share of jobs agreed on."""
    labels = {1: [BATCH], 2: [CKPT, PINNED], 3: [BATCH], 4: ["none"]}
    for rater in raters:
        answer(study, rater, labels)
        services.submit(study, rater)
    client.force_login(raters[0])
    page = as_read(client.get(reverse("labeling:agreement", args=[study.pk])).content.decode())
    assert "[1.000, 1.000]" not in page
    # 0.025 ** (1 / 4) = 39.8 %: what four jobs, all agreed, can say of the share of jobs agreed on.
    pooled = '1.000 <small class="no-interval">(agreed on all 4 jobs: no disagreement to resample;'
    assert pooled + "<br>jobs agreed: 39.8–100 %, exact 95 % interval)</small>" in page
    assert 'id="alpha-interval">4 jobs, all agreed: no disagreement to resample</p>' in page  # the headline too
    rows = list(
        csv.DictReader(
            io.StringIO(
                as_read(client.get(reverse("labeling:export", args=[study.pk, "agreement", "csv"])).content.decode())
            )
        )
    )
    row = next(r for r in rows if r["statistic"] == "cohen_kappa" and r["option"] == "pooled")
    assert (row["value"], row["low"], row["high"], row["no_interval_reason"]) == (
        "1.0",
        "",
        "",
        "no disagreement to resample",
    )
    assert (row["jobs"], row["jobs_agreed"], row["jobs_agreed_low"], row["jobs_agreed_high"]) == (
        "4",
        "4",
        "0.3976",
        "1.0",
    )
    alpha = next(r for r in rows if r["statistic"] == "krippendorff_alpha" and r["option"] == "pooled")
    assert alpha["no_interval_reason"] == "no disagreement to resample" and alpha["jobs_agreed"] == "4"
    data = client.get(reverse("labeling:export", args=[study.pk, "agreement", "json"])).json()
    identical = next(r for r in data["rows"] if r["statistic"] == "identical_label_sets")
    assert (identical["jobs_agreed"], identical["jobs_agreed_low"], identical["jobs_agreed_high"]) == (4, 0.3976, 1.0)


def test_with_a_disagreement_the_exports_count_the_jobs_agreed_beside_the_bootstrap_interval(
    client, wide_study, raters
):
    study = wide_study
    run_wide_study(study, raters)  # job 3 differs
    client.force_login(raters[0])
    data = client.get(reverse("labeling:export", args=[study.pk, "agreement", "json"])).json()
    pooled = next(r for r in data["rows"] if r["statistic"] == "cohen_kappa" and r["option"] == "pooled")
    assert pooled["low"] is not None and pooled["no_interval_reason"] is None
    assert pooled["jobs_agreed"] == 5 and pooled["jobs"] == 6 and pooled["jobs_agreed_low"] == 0.3588


def test_adjudication_and_a_frozen_versioned_gold_set(client, study, raters):
    run_study(study, raters)
    lead = raters[0]
    client.force_login(lead)
    gold_url = reverse("labeling:gold", args=[study.pk])
    client.post(gold_url, {"note": "too early"})
    assert not study.gold_sets.exists()  # a disagreement is unresolved
    item = study.items.get(position=3)
    url = reverse("labeling:adjudicate", args=[study.pk, item.pk])
    page = client.get(url).content.decode()
    assert "seen in the timeline" in page
    assert (
        "Say why"
        not in client.post(url, {"option": [BATCH, CKPT], "note": "both: gaps at saves, small batch"}).content.decode()
    )
    client.post(gold_url, {"note": "first"})
    gold = study.gold_sets.get()
    assert gold.version == 1
    items = {i.job_id: i for i in gold.items.all()}
    assert items[item.job_id].options == sorted([BATCH, CKPT])
    assert items[item.job_id].resolution == GoldItem.Resolution.ADJUDICATED
    assert items[study.items.get(position=4).job_id].options == ["none"]
    # Changing the adjudication later makes a new version; v1 stays as it was.
    services.adjudicate(item, [CKPT], "only the saves", lead)
    services.freeze_gold(study, lead)
    assert list(study.gold_sets.values_list("version", flat=True)) == [2, 1]
    assert gold.items.get(job_id=item.job_id).options == sorted([BATCH, CKPT])
    # Only the lead adjudicates.
    client.force_login(raters[1])
    assert client.get(url).status_code == 404


def test_the_gold_set_links_each_job_to_its_page_where_blind_rules_still_hold(client, study, raters, jobs):
    run_study(study, raters)
    services.adjudicate(study.items.get(position=3), [CKPT], "saves", raters[0])
    gold = services.freeze_gold(study, raters[0])
    job = study.items.get(position=1).job
    triage_with(RuleSet.current(), job, [BATCH])
    JobTriage.objects.filter(job=job).update(is_current=True)
    Finding.objects.filter(job=job).update(summary="RULES-SAID-THIS")
    # ravi has submitted here, but still labels the same jobs, blind, in a second study.
    later = services.create_study(name="Later", lead=raters[0], raters=raters, strategy="all", seed=3)
    assert later.items.filter(job=job).exists() and not later.show_findings
    client.force_login(raters[1])
    page = client.get(reverse("labeling:gold", args=[study.pk])).content.decode()
    table = page.split('id="gold-items"')[1].split("</table>")[0]
    for item in gold.items.all():
        assert f'<a href="{reverse("dashboard:job-detail", args=[item.job_id])}">{item.job}</a>' in table
    job_page = client.get(reverse("dashboard:job-detail", args=[job.pk])).content.decode()
    assert "RULES-SAID-THIS" not in job_page and "Hidden while you label this job" in job_page
    client.force_login(raters[0])  # the lead has not submitted in the later study either: no gold page there
    assert client.get(reverse("labeling:gold", args=[later.pk])).status_code == 403


def test_adjudication_starts_with_what_every_rater_chose_ticked(client, study, raters):
    first, second = raters
    answer(study, first, {1: [BATCH], 2: [CKPT], 3: [BATCH, PINNED], 4: ["none"]})
    answer(study, second, {1: [BATCH], 2: [CKPT], 3: [BATCH], 4: [CKPT]})
    for rater in raters:
        services.submit(study, rater)
    client.force_login(first)
    three, four = study.items.get(position=3), study.items.get(position=4)

    def ticked(item):
        page = client.get(reverse("labeling:adjudicate", args=[study.pk, item.pk])).content.decode()
        boxes = re.findall(r'<input type="checkbox" name="option" value="([a-z_]+)"[^>]*?( checked)?>', page)
        return {value for value, checked in boxes if checked}, page

    options, page = ticked(three)
    assert options == {BATCH}  # both chose it; pinned memory is the lead's to decide
    assert "pre-ticked from the raters" in html.unescape(page)
    options, page = ticked(four)
    assert options == set() and "The raters agree on no option" in page
    # Once the lead has decided, the page shows their decision, not the raters' agreement.
    services.adjudicate(three, [PINNED], "only the copies", first)
    options, page = ticked(three)
    assert options == {PINNED} and "pre-ticked" not in page


def test_saving_an_adjudication_goes_on_to_the_next_open_disagreement(client, study, raters):
    first, second = raters
    answer(study, first, {1: [BATCH], 2: [CKPT], 3: [BATCH], 4: ["none"]})
    answer(study, second, {1: [CKPT], 2: [CKPT], 3: [PINNED], 4: ["none"]})
    for rater in raters:
        services.submit(study, rater)
    client.force_login(first)
    one, three = study.items.get(position=1), study.items.get(position=3)
    response = client.post(
        reverse("labeling:adjudicate", args=[study.pk, three.pk]), {"option": [BATCH], "note": "small batch"}
    )
    assert response["Location"] == reverse("labeling:adjudicate", args=[study.pk, one.pk])  # wraps round
    page = client.get(response["Location"]).content.decode()
    assert "1 disagreement left: this is job #1." in page
    response = client.post(reverse("labeling:adjudicate", args=[study.pk, one.pk]), {"option": [CKPT], "note": "saves"})
    assert response["Location"] == reverse("labeling:agreement", args=[study.pk])
    assert "Every disagreement is adjudicated" in client.get(response["Location"]).content.decode()


def test_gold_labels_someone_else_saved_while_the_page_was_open_are_not_replaced_unseen(
    client, study, raters, operator
):
    """The lead and an operator may both adjudicate. One opened job #3's adjudication, the other saved
    its gold labels meanwhile, and the first one's save replaced them without a word (and the page of
    the job then said "your gold labels" of the operator's). Now the save is refused, saying who saved
    what, with the lead's ticks kept; saving again, knowingly, replaces theirs."""
    run_study(study, raters)
    lead = raters[0]
    three = study.items.get(position=3)
    url = reverse("labeling:adjudicate", args=[study.pk, three.pk])
    client.force_login(lead)

    def seen(page: str) -> str:  # what the form says it was shown
        found = re.search(r'name="seen" value="([^"]*)"', page)
        return found.group(1) if found else ""

    opened = client.get(url).content.decode()
    services.adjudicate(three, [PINNED], "only the copies", operator)  # meanwhile, in another browser
    response = client.post(url, {"option": [BATCH], "note": "small batch", "seen": seen(opened)})
    assert response.status_code == 200
    three.adjudication.refresh_from_db()
    assert (three.adjudication.options, three.adjudication.decided_by) == ([PINNED], operator)
    page = html.unescape(response.content.decode())
    assert (
        "olivia-operator saved gold labels for this job while you had it open: Inefficient host-GPU data "
        "transfer (only the copies). Yours are not saved: they are ticked below; save again to replace theirs."
    ) in as_read(page)
    boxes = re.findall(r'<input type="checkbox" name="option" value="([a-z_]+)"[^>]*?( checked)?>', page)
    assert {value for value, checked in boxes if checked} == {BATCH}
    response = client.post(url, {"option": [BATCH], "note": "small batch", "seen": seen(page)})
    assert response.status_code == 302
    three.adjudication.refresh_from_db()
    assert (three.adjudication.options, three.adjudication.decided_by) == ([BATCH], lead)
    assert "Ticked: your gold labels, saved" in client.get(url).content.decode()
    # Whose gold labels a page shows is said: the operator's, to the lead, are not "yours".
    services.adjudicate(three, [PINNED], "only the copies", operator)
    assert "Ticked: the gold labels olivia-operator saved" in client.get(url).content.decode()


def _seen(page: str) -> str:
    """The version of the stored answer (or gold labels) a page's form says it was opened on."""
    found = re.search(r'name="seen" value="([^"]*)"', page)
    assert found, "the form says what it was opened on"
    return found.group(1)


def _job_one_in_two_tabs(client, study, rater):
    """The rater opens their job #1's labeling page twice: its study job id, address, and both pages."""
    client.force_login(rater)
    item = services.assignments_of(study, rater).get(item__position=1).item_id
    url = reverse("labeling:label", args=[study.pk, item])
    return item, url, client.get(url).content.decode(), client.get(url).content.decode()


def test_an_answer_saved_in_another_tab_is_not_overwritten_unseen(client, study, researcher):
    """The same rater had job #1 open in two tabs; the save from the older one replaced, without a word,
    the answer just saved from the other. Now it is refused, saying what is stored, with the rater's
    ticks, rationale and note kept in the form; saving again keeps theirs, or they take the saved one."""
    item, url, older, newer = _job_one_in_two_tabs(client, study, researcher)
    saved = {"option": [CKPT], f"rationale-{CKPT}": "idle every 20 minutes", "then": "stay"}
    assert client.post(url, saved | {"seen": _seen(newer)}).status_code == 302
    mine = {
        "option": [BATCH, "other"],
        f"rationale-{BATCH}": "memory at 10 %",
        "other_note": "a firmware bug",
        "then": "next",
        "seen": _seen(older),
    }
    response = client.post(url, mine)
    assert response.status_code == 200
    assignment = services.assignments_of(study, researcher).get(item_id=item)
    assert {label.option: label.rationale for label in assignment.labels.all()} == {CKPT: "idle every 20 minutes"}
    page = html.unescape(response.content.decode())
    text = as_read(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))
    assert "Not saved: your answer to this job changed after this page was opened." in text
    assert "You saved this in another tab or window" in text
    assert "Model checkpointing idle every 20 minutes" in text  # what is stored now, with its rationale
    assert "Yours is still in the form below." in text
    boxes = re.findall(r'<input type="checkbox" name="option" value="([a-z_]+)"[^>]*?( checked)?>', page)
    assert {value for value, checked in boxes if checked} == {BATCH, "other"}
    assert 'value="memory at 10 %"' in page
    assert ">a firmware bug</textarea>" in page
    # Take the saved one: the page again, showing the stored answer.
    take = re.search(r'<a id="take-saved" href="([^"]+)"', page)
    assert take and take.group(1) == url
    stored = client.get(url).content.decode()
    assert 'value="model_checkpointing" id="opt-model_checkpointing" data-key="6" checked' in stored
    # Keep mine: the refused page's form now carries the stored version; saving again replaces it.
    assert re.search(r'<button type="submit" [^>]*name="then" value="next"[^>]*id="keep-mine"', page)
    response = client.post(url, mine | {"seen": _seen(page)})
    assert response.status_code == 302
    assert {label.option for label in assignment.labels.all()} == {BATCH, "other"}


def test_a_second_tab_saving_the_same_answer_or_a_skip_since_are_told_apart(client, study, researcher):
    """The same answer sent from a stale tab is saved (nothing to choose between); a skip stored
    since is said as a skip."""
    item, url, older, newer = _job_one_in_two_tabs(client, study, researcher)
    same = {"option": [CKPT], f"rationale-{CKPT}": "idle", "then": "stay"}
    assert client.post(url, same | {"seen": _seen(newer)}).status_code == 302
    assert client.post(url, same | {"seen": _seen(older)}).status_code == 302
    newest = client.get(url).content.decode()
    skip = {"skip_reason": "outside_expertise", "skip_note": "NCCL internals", "seen": _seen(newest)}
    client.post(reverse("labeling:skip", args=[study.pk, item]), skip)
    response = client.post(url, same | {"seen": _seen(newest)})
    assert response.status_code == 200
    page = html.unescape(response.content.decode())
    assert "You skipped this job in another tab or window" in page
    assert "<p>Outside my expertise (<q>NCCL internals</q>)</p>" in page
    assert services.assignments_of(study, researcher).get(item_id=item).skipped_at is not None


def test_a_skip_from_a_page_opened_before_an_answer_was_saved_does_not_drop_it(client, study, researcher):
    """Skipping drops the answer saved for the job: from a stale tab, one the rater had not seen."""
    client.force_login(researcher)
    item = services.assignments_of(study, researcher).get(item__position=1).item_id
    url, skip_url = reverse("labeling:label", args=[study.pk, item]), reverse("labeling:skip", args=[study.pk, item])
    older = client.get(url).content.decode()
    assert client.post(url, {"option": [CKPT], "then": "stay", "seen": _seen(older)}).status_code == 302
    skip = {"option": [BATCH], "skip_reason": "other", "skip_note": "the log is cut", "seen": _seen(older)}
    response = client.post(skip_url, skip)
    assert response.status_code == 200
    assert services.assignments_of(study, researcher).get(item_id=item).skipped_at is None
    page = html.unescape(response.content.decode())
    assert "Not saved: your answer to this job changed after this page was opened." in page
    assert 'value="the log is cut"' in page and 'id="skip-other" checked' in page  # nothing typed is lost
    assert re.search(rf'id="keep-mine" formaction="{skip_url}">Skip it anyway</button>', page)
    assert client.post(skip_url, skip | {"seen": _seen(page)}).status_code == 302
    assert services.assignments_of(study, researcher).get(item_id=item).skip_reason == "other"


def test_an_import_over_an_answer_a_rater_has_open_is_shown_not_overwritten(client, study, raters):
    rater = raters[1]
    item = study.items.get(position=1)
    url = reverse("labeling:label", args=[study.pk, item.pk])
    client.force_login(rater)
    opened = client.get(url).content.decode()
    row = f"cluster,job_id,rater,option\n{item.job.cluster.name},{item.job.external_id},{rater.username},{BATCH}\n"
    assert not exchange.import_labels(study, row).errors
    response = client.post(url, {"option": [CKPT], "then": "stay", "seen": _seen(opened)})
    assert response.status_code == 200
    assert "An imported labels file stored, " in html.unescape(response.content.decode())
    assert list(Assignment.objects.get(item=item, rater=rater).labels.values_list("option", flat=True)) == [BATCH]


def test_the_adjudication_page_names_the_zone_of_each_raters_time(client, study, raters):
    """The raters' answers were timed "Labeling page, 2026-12-07 06:50" with no zone, where the same page
    names it beside the gold labels' time and the study page in its table's header."""
    run_study(study, raters)
    client.force_login(raters[0])
    three = study.items.get(position=3)
    page = client.get(reverse("labeling:adjudicate", args=[study.pk, three.pk])).content.decode()
    saved = Assignment.objects.get(item=three, rater=raters[1]).saved_at
    assert f"Labeling page, {saved:%Y-%m-%d %H:%M} UTC</span>" in page


def test_a_rater_who_is_not_the_lead_is_told_who_freezes_gold(client, study, raters):
    run_study(study, raters)
    client.force_login(raters[1])
    page = client.get(reverse("labeling:gold", args=[study.pk])).content.decode()
    assert 'id="freeze"' not in page
    assert "Only the study's lead, rita-researcher, or an operator can freeze a gold set." in page
    client.force_login(raters[0])
    page = client.get(reverse("labeling:gold", args=[study.pk])).content.decode()
    assert 'id="freeze"' in page and "Only the study" not in page


def triage_with(rule_set, job, categories):
    result = JobTriage.objects.create(job=job, rule_set=rule_set, status=TriageStatus.CLASSIFIED)
    for category in categories:
        Finding.objects.create(
            result=result, job=job, rule_set=rule_set, category=category, confidence=0.8, summary="", gpu_hours=0.5
        )


def test_rules_against_gold_per_category_with_error_jobs_and_two_versions(client, study, raters):
    run_study(study, raters)
    services.adjudicate(study.items.get(position=3), [CKPT], "saves", raters[0])
    gold = services.freeze_gold(study, raters[0])
    v1 = RuleSet.current()
    v2 = RuleSet.objects.create(version=2, thresholds={}, note="looser")
    jobs = {item.position: item.job for item in study.items.all()}
    # gold: 1 batch, 2 ckpt+pinned, 3 ckpt, 4 none
    triage_with(v1, jobs[1], [BATCH])
    triage_with(v1, jobs[2], [CKPT])
    triage_with(v1, jobs[3], [BATCH])
    triage_with(v1, jobs[4], [])
    for position in (1, 2, 3, 4):
        triage_with(v2, jobs[position], {1: [BATCH], 2: [CKPT, PINNED], 3: [CKPT], 4: []}[position])
    evaluation = services.evaluate_rules(gold, v1)
    rows = {r.category: r for r in evaluation.report.categories}
    assert (rows[BATCH].true_positives, rows[BATCH].false_positives) == (1, 1)
    assert rows[BATCH].precision == 0.5 and rows[BATCH].recall == 1.0
    assert rows[CKPT].recall == 0.5 and rows[CKPT].false_negative_units == [jobs[3].pk]
    assert rows[PINNED].recall == 0.0
    client.force_login(raters[1])
    url = reverse("labeling:rules", args=[study.pk])
    page = client.get(url, {"gold": 1, "rule_set": 1, "compare": 2, "category": CKPT}).content.decode()
    assert "Model checkpointing" in page and "F1 v2" in page and "+0.333" in page
    assert f"scored against rule set v1, rules revision {RULES_REVISION}." in page
    assert f"Compared with rule set v2, rules revision {RULES_REVISION}." in page
    assert 'id="false-negatives"' in page and str(jobs[3]) in page
    # The confusion table holds the categories in gold or found (and "None"), by their whole names;
    # the other twelve, neither in gold nor found, would only push those out of sight.
    confusion = client.get(url, {"gold": 1, "rule_set": 1}).context
    assert set(confusion["confusion_columns"]) == {
        "Improper batch size", "Model checkpointing", "Inefficient host-GPU data transfer", "None"
    }  # fmt: skip
    assert confusion["confusion_left_out"] == 12
    cells = {
        row["label"]: dict(zip(confusion["confusion_columns"], row["cells"], strict=True))
        for row in confusion["confusion"]
    }
    assert cells["Model checkpointing"]["Improper batch size"] == 1  # job 3: a save, found as batch size
    quality = client.get(reverse("labeling:export", args=[study.pk, "quality", "csv"]), {"gold": 1, "rule_set": 1})
    table = {row["category"]: row for row in csv.DictReader(io.StringIO(quality.content.decode()))}
    assert table[BATCH]["precision"] == "0.5" and table[BATCH]["recall"] == "1.0" and table[PINNED]["recall"] == "0.0"
    assert list(table[BATCH]) == exchange.QUALITY_COLUMNS
    assert len([c for c in table if not c.startswith("summary: ")]) == 15  # and the summary rows below them
    rules = client.get(reverse("labeling:export", args=[study.pk, "rules", "json"]), {"rule_set": 1}).json()
    assert rules["format"] == "fleet-triage-rules" and rules["rule_set_version"] == 1
    expected = {1: BATCH, 2: CKPT, 3: BATCH, 4: None}  # job 4: triaged, found nothing (the CSV's empty cell)
    assert {(r["job_id"], r["category"]) for r in rules["rows"]} == {
        (jobs[p].external_id, c) for p, c in expected.items()
    }


def test_the_quality_export_carries_the_pages_summary(client, study, raters):
    gold, rule_set = gold_with_job_1_triaged(study, raters)  # gold: 1 batch, 2 ckpt+pinned, 3 ckpt, 4 none
    jobs = {item.position: item.job for item in study.items.all()}
    triage_with(rule_set, jobs[2], [CKPT])
    triage_with(rule_set, jobs[3], [BATCH])  # job 4 is left without a result: not triaged
    client.force_login(raters[1])
    url = reverse("labeling:export", args=[study.pk, "quality", "json"])
    data = client.get(url, {"gold": 1, "rule_set": rule_set.version}).json()
    # Found: 1 batch, 2 ckpt, 3 batch. TP 2 (1 batch, 2 ckpt), FP 1 (3 batch), FN 2 (2 pinned, 3 ckpt).
    assert data["summary"] == {
        "micro_precision": pytest.approx(2 / 3), "micro_recall": 0.5, "micro_f1": pytest.approx(4 / 7),
        "macro_precision": pytest.approx(0.75), "macro_recall": 0.5, "macro_f1": pytest.approx(4 / 9),
        "exact_match": pytest.approx(1 / 3), "jobs_scored": 3, "jobs_not_triaged": 1,
    }  # fmt: skip
    assert len(data["rows"]) == 15  # the rows stay one per category
    response = client.get(url.replace(".json", ".csv"), {"gold": 1, "rule_set": rule_set.version})
    rows = {row["category"]: row for row in csv.DictReader(io.StringIO(response.content.decode()))}
    assert list(rows)[:15] == [c.value for c in Category]
    summary = {name: row for name, row in rows.items() if name.startswith("summary: ")}
    assert list(summary) == [
        "summary: micro average", "summary: macro average (categories in gold)", "summary: exact label-set match",
        "summary: jobs scored", "summary: jobs not triaged (left out)",
    ]  # fmt: skip
    micro = summary["summary: micro average"]
    assert [micro[c] for c in ("true_positives", "false_positives", "false_negatives")] == ["2", "1", "2"]
    assert (micro["precision"], micro["recall"], micro["f1"]) == ("0.6667", "0.5", "0.5714")
    assert summary["summary: macro average (categories in gold)"]["f1"] == "0.4444"
    assert summary["summary: exact label-set match"]["value"] == "0.3333"
    assert summary["summary: jobs scored"]["value"] == "3"
    assert summary["summary: jobs not triaged (left out)"]["value"] == "1"


def gold_with_job_1_triaged(study, raters):
    """A frozen gold set of the study, and the current rule set with a result for job 1 only."""
    run_study(study, raters)
    services.adjudicate(study.items.get(position=3), [CKPT], "saves", raters[0])
    gold = services.freeze_gold(study, raters[0])
    rule_set = RuleSet.current()
    triage_with(rule_set, study.items.get(position=1).job, [BATCH])
    return gold, rule_set


def test_the_exports_and_the_page_name_the_rules_revision_beside_the_rule_set_version(client, study, raters, tmp_path):
    from django.core.management import call_command

    gold, rule_set = gold_with_job_1_triaged(study, raters)  # gold: 1 batch, 2 ckpt+pinned, 3 ckpt, 4 none
    jobs = {item.position: item.job for item in study.items.all()}
    triage_with(rule_set, jobs[2], [CKPT])
    JobTriage.objects.filter(job=jobs[1]).update(rules_revision=7)
    JobTriage.objects.filter(job=jobs[2]).update(rules_revision=6)  # not yet re-triaged after an upgrade
    client.force_login(raters[1])
    export = reverse("labeling:export", args=[study.pk, "rules", "json"])
    rules = client.get(export, {"rule_set": rule_set.version}).json()
    assert rules["rules_revisions"] == [6, 7]
    assert {(r["job_id"], r["rules_revision"]) for r in rules["rows"]} == {
        (jobs[1].external_id, 7), (jobs[2].external_id, 6)
    }  # fmt: skip
    response = client.get(export.replace(".json", ".csv"), {"rule_set": 1})
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert {(r["job_id"], r["rule_set_version"], r["rules_revision"]) for r in rows} == {
        (jobs[1].external_id, "1", "7"), (jobs[2].external_id, "1", "6")
    }  # fmt: skip
    quality = reverse("labeling:export", args=[study.pk, "quality", "csv"])
    table = list(csv.DictReader(io.StringIO(client.get(quality, {"gold": 1, "rule_set": 1}).content.decode())))
    assert {row["rules_revision"] for row in table} == {"6 7"}  # every row, the summary's too
    assert client.get(quality.replace(".csv", ".json"), {"gold": 1, "rule_set": 1}).json()["rules_revisions"] == [6, 7]
    out = tmp_path / "rules.json"
    call_command("export_study", study.pk, "rules", "--format", "json", "--out", str(out))  # as the page's
    assert json.loads(out.read_text())["rules_revisions"] == [6, 7]
    page = client.get(reverse("labeling:rules", args=[study.pk]), {"gold": 1, "rule_set": 1}).content.decode()
    assert "2 gold jobs scored against rule set v1, rules revisions 6 and 7" in page
    JobTriage.objects.filter(job=jobs[2]).update(rules_revision=7)
    page = client.get(reverse("labeling:rules", args=[study.pk]), {"gold": 1, "rule_set": 1}).content.decode()
    assert "2 gold jobs scored against rule set v1, rules revision 7." in page


# Text that may be all digits and is still text: a scheduler's job id.
TEXT_COLUMNS = {"job_id"}


def _as_json_has_it(column: str, cell: str):
    """A CSV cell as its JSON row has it: None where empty, a number where the CSV writes a number."""
    if cell == "":
        return None
    if column not in TEXT_COLUMNS:
        for number in (int, float):
            try:
                return number(cell)
            except ValueError:
                pass
    return cell


@pytest.mark.parametrize("kind", sorted(exchange.KINDS))
def test_every_json_row_has_the_csvs_columns_and_cells_null_where_the_csv_is_empty(client, study, raters, kind):
    gold, rule_set = gold_with_job_1_triaged(study, raters)
    triage_with(rule_set, study.items.get(position=4).job, [])  # a job the rules found nothing on: no category
    client.force_login(raters[0])
    url = reverse("labeling:export", args=[study.pk, kind, "json"])
    # The versions this export is made of (it refuses the others: exchange.EXPORT_VERSIONS).
    versions = {name: {"gold": gold, "rule_set": rule_set}[name].version for name in exchange.EXPORT_VERSIONS[kind]}
    rows = client.get(url, versions).json()["rows"]
    exported = exchange.read_rows(client.get(url.replace(".json", ".csv"), versions).content)  # formulas unguarded
    if kind == "quality":  # the CSV's summary rows are the JSON's "summary" object instead
        exported = [row for row in exported if not row["category"].startswith("summary: ")]
    columns = exchange.KINDS[kind]
    assert rows and all(list(row) == columns for row in rows)
    assert "" not in {value for row in rows for value in row.values()}
    assert any(None in row.values() for row in rows)  # each kind has empty cells here: the rule is put to work
    # Cell for cell what the CSV says, a number where it writes one.
    assert rows == [{column: _as_json_has_it(column, row[column]) for column in columns} for row in exported]


def test_a_job_whose_triage_failed_is_left_out_not_scored_as_a_miss(study, raters):
    gold, rule_set = gold_with_job_1_triaged(study, raters)
    failed = study.items.get(position=3).job
    JobTriage.objects.create(job=failed, rule_set=rule_set, status=TriageStatus.ERROR, reason="series unreadable")
    evaluation = services.evaluate_rules(gold, rule_set)
    assert evaluation.report.units == 1 and failed.pk in evaluation.not_triaged
    assert {r.category: r.recall for r in evaluation.report.categories}[BATCH] == 1.0


def test_jobs_not_triaged_with_a_version_are_left_out_and_counted(study, raters):
    gold, rule_set = gold_with_job_1_triaged(study, raters)
    evaluation = services.evaluate_rules(gold, rule_set)
    assert evaluation.report.units == 1 and len(evaluation.not_triaged) == 3


def test_an_export_of_a_version_that_does_not_exist_is_refused_not_replaced_by_another(client, study, raters):
    gold_with_job_1_triaged(study, raters)  # gold v1, rule set v1
    client.force_login(raters[0])

    def export(kind, **query):
        response = client.get(reverse("labeling:export", args=[study.pk, kind, "csv"]), query)
        return response.status_code, response.content.decode()

    assert export("gold", gold=99) == (404, f"Study {study.pk} has no gold set v99 (it has v1).\n")
    assert export("quality", gold=1, rule_set=999) == (404, "There is no rule set v999 (there are v1).\n")
    assert export("rules", rule_set=42) == (404, "There is no rule set v42 (there are v1).\n")
    assert export("quality", gold="abc", rule_set=999) == (
        400, "gold must be a version number, such as gold=1 (not 'abc').\n"
    )  # fmt: skip
    assert export("rules", rule_set="1.5")[0] == 400
    assert export("gold", gold="99999999999999999999")[0] == 404  # past any row id: none has it
    # A version that exists, or none asked for (the latest gold set, the current rule set), exports.
    assert export("gold", gold=1)[0] == export("gold")[0] == export("quality", rule_set=1)[0] == 200


def test_a_version_an_export_does_not_read_is_refused_not_ignored(client, study, raters):
    """`/export/agreement.csv?gold=1` gave the agreement of the raters as without it: agreement is
    measured between the raters' labels, never against a gold set (the agreement page takes no gold
    either), and a file saved as "agreement against gold v1" was not that. Now a 400 says why; so
    does a version the labels, gold or rules export has no use for, and the command's options."""
    from django.core.management import call_command
    from django.core.management.base import CommandError

    gold_with_job_1_triaged(study, raters)  # gold v1, rule set v1
    client.force_login(raters[0])

    def export(kind, **query):
        response = client.get(reverse("labeling:export", args=[study.pk, kind, "csv"]), query)
        return response.status_code, response.content.decode()

    assert export("agreement", gold=1) == (
        400,
        "The agreement export takes no gold: it is measured between the raters' labels, not against a gold set. "
        "gold chooses the version of the gold and quality exports.\n",
    )
    status, said = export("labels", rule_set=1)
    assert status == 400 and said.startswith("The labels export takes no rule_set: it is every submitted rater's")
    assert export("gold", rule_set=1)[0] == export("rules", gold=1)[0] == 400
    # Empty is no version asked for (as for the exports that take one), and these still export.
    assert export("agreement", gold="")[0] == export("agreement")[0] == export("quality", gold=1, rule_set=1)[0] == 200
    with pytest.raises(CommandError, match="The agreement export takes no --gold: it is measured between"):
        call_command("export_study", study.pk, "agreement", "--gold", "1")


def test_the_pages_say_a_version_does_not_exist_instead_of_showing_another_in_its_place(client, study, raters):
    gold_with_job_1_triaged(study, raters)  # gold v1, rule set v1
    services.freeze_gold(study, raters[0])  # and gold v2
    client.force_login(raters[0])
    gold_url, rules_url = reverse("labeling:gold", args=[study.pk]), reverse("labeling:rules", args=[study.pk])

    def problem(url, **query):
        response = client.get(url, query)
        assert response.status_code == 200
        page = html.unescape(response.content.decode())
        return page, (
            page.split('id="version-problem">', 1)[1].split("</div>", 1)[0] if "version-problem" in page else ""
        )

    page, said = problem(gold_url, version=99)
    assert f"Study {study.pk} has no gold set v99 (it has v1, v2); showing v2, the latest." in said
    page, said = problem(gold_url, version="abc")
    assert "version must be a version number, such as version=1 (not 'abc'); showing v2, the latest." in said
    assert problem(gold_url, version="99999999999999999999")[1]  # past any row id: said, not a 500
    page, said = problem(gold_url, version=1)
    assert said == "" and "Gold v1 " in page
    page, said = problem(rules_url, gold=99, rule_set=999, compare=7)
    assert f"Study {study.pk} has no gold set v99 (it has v1, v2); showing v2, the latest." in said
    assert "There is no rule set v999 (there are v1); showing v1, the current one." in said
    assert "There is no rule set v7 (there are v1); comparing with none." in said
    page, said = problem(rules_url, gold="99999999999999999999", rule_set="x")
    assert "rule_set must be a version number, such as rule_set=1 (not 'x'); showing v1, the current one." in said
    assert problem(rules_url, gold=1, rule_set=1)[1] == problem(rules_url)[1] == ""


def test_the_rules_page_says_a_category_it_does_not_know_instead_of_ignoring_it(client, study, raters):
    gold_with_job_1_triaged(study, raters)  # gold v1, rule set v1
    client.force_login(raters[0])
    url = reverse("labeling:rules", args=[study.pk])

    def shown(**query):
        page = html.unescape(client.get(url, query).content.decode())
        said = page.split('id="version-problem">', 1)[1].split("</div>", 1)[0] if "version-problem" in page else ""
        return said, 'id="jobs"' in page  # the jobs behind a category's errors

    said, jobs_listed = shown(category="checkpointing")
    assert (
        "There is no category 'checkpointing' (the categories are the table's rows); showing no category's jobs."
        in said
    )
    assert not jobs_listed
    said, _ = shown(category="none", gold=99)  # "none of these" is an option, not a category the rules find
    assert "There is no category 'none' (the categories are the table's rows); showing no category's jobs." in said
    assert "has no gold set v99" in said  # each problem said, one under the other
    assert shown(category=CKPT) == ("", True)
    assert shown(category="") == shown() == ("", False)


def test_labels_export_and_import_round_trip_into_another_study(client, study, raters, jobs):
    run_study(study, raters)
    client.force_login(raters[0])
    exported = client.get(reverse("labeling:export", args=[study.pk, "labels", "csv"])).content.decode()
    rows = list(csv.DictReader(io.StringIO(exported)))
    assert list(rows[0]) == exchange.LABEL_COLUMNS
    assert len(rows) == 10  # 2 raters x 4 jobs, plus a second option on job 2 from each
    as_json = client.get(reverse("labeling:export", args=[study.pk, "labels", "json"])).json()
    assert as_json["format"] == "fleet-triage-labels" and as_json["version"] == 1 and len(as_json["rows"]) == 10

    other = services.create_study(name="Elsewhere", lead=raters[0], raters=raters, sample_size=1, seed=99)
    result = exchange.import_labels(other, exported.encode(), dry_run=True)
    assert not result.errors and result.answers == 8
    assert not Assignment.objects.filter(item__study=other, saved_at__isnull=False).exists()
    response = client.post(
        reverse("labeling:import", args=[other.pk]), {"file": io.BytesIO(json.dumps(as_json).encode())}, follow=True
    )
    assert "stored 8 answers" in response.content.decode()
    assert services.collect_ratings(other).keys() >= set(
        other.items.filter(job__in=[i.job for i in study.items.all()]).values_list("pk", flat=True)
    )
    original = {(r["job_id"], r["rater"], r["option"]) for r in rows}
    again = {(r["job_id"], r["rater"], r["option"]) for r in exchange.label_rows(other)}
    assert original <= again


def test_labels_of_a_rater_who_has_left_survive_the_round_trip(study, raters, jobs):
    run_study(study, raters)
    exported = exchange.to_csv(exchange.label_rows(study), exchange.LABEL_COLUMNS)
    other = services.create_study(name="Restored", lead=raters[0], raters=raters, sample_size=1, seed=99)
    raters[1].is_active = False  # left the lab after labelling
    raters[1].save()
    result = exchange.import_labels(other, exported)
    assert not result.errors and result.answers == 8
    assert {row["rater"] for row in exchange.label_rows(other)} == {raters[0].username, raters[1].username}
    assert raters[1] not in services.eligible_raters()  # still cannot be given new work


def test_import_refuses_unknown_raters_jobs_and_options_and_stores_nothing(study, raters):
    content = "cluster,job_id,rater,option\nc1,nope,rita-researcher,improper_batch_size\nc1,1,mallory,wat\n"
    result = exchange.import_labels(study, content)
    assert result.answers == 0
    assert any("unknown option 'wat'" in e for e in result.errors)
    content = "cluster,job_id,rater,option\nc1,nope,mallory,improper_batch_size\n"
    result = exchange.import_labels(study, content)
    assert any("mallory" in e for e in result.errors) and any("c1/nope" in e for e in result.errors)
    assert not Assignment.objects.filter(item__study=study, saved_at__isnull=False).exists()


@pytest.mark.parametrize(
    ("content", "error"),
    [
        ("[" * 100_000, "unreadable file: nested too deeply"),  # was a RecursionError: a server error
        ('{"rows": [{"job_id": NaN}]}', "unreadable file: NaN is not a JSON value (write null, or a number)"),
        ('{"format": "fleet-triage-labels"}', "unreadable file: JSON must be an export object with a list of row"),
        (  # PostgreSQL keeps no NUL in text: looking the job up failed the request
            "cluster,job_id,rater,option\nc1,1\x00,ravi-rater,other\n",
            "row 2: job_id contains a NUL character (\\u0000), which cannot be stored; remove it",
        ),
        (
            '{"rows": [{"cluster": "c1", "job_id": "1", "rater": "ravi-rater", "option": "other", '
            '"other_note": "a\\u0000b"}]}',
            "row 2: other_note contains a NUL character (\\u0000), which cannot be stored; remove it",
        ),
        ('{"rows": [{"cluster": "c1", "job_id": "1", "rater": "ravi-rater", "option": ["x"]}]}', "unknown option"),
        ('{"rows": [{"rater": "\\ud800"}]}', "unreadable file: a \\ud800–\\udfff escape not paired as UTF-16"),
        ("cluster,job_id,rater,option\n", "the file holds no labels (columns: cluster, job_id, rater, option)"),
        ("\ufeff  \n", "the file holds no labels"),
    ],
    ids=["deep", "nan", "no-rows", "nul-in-csv", "nul-in-json", "option-list", "lone-surrogate", "header", "blank"],
)
def test_a_broken_or_hostile_labels_file_is_refused_with_its_problem(client, study, raters, content, error):
    client.force_login(raters[0])
    response = client.post(
        reverse("labeling:import", args=[study.pk]), {"file": io.BytesIO(content.encode())}, follow=True
    )
    assert response.status_code == 200
    assert error in html.unescape(response.content.decode())
    assert not Assignment.objects.filter(item__study=study, saved_at__isnull=False).exists()


def test_a_blank_rationale_is_null_in_the_json_empty_in_the_csv_and_imports_back_blank(client, study, raters):
    """One way to say "nothing written" per format: null in the JSON (as every empty cell there), an
    empty cell in the CSV; the import reads null, "" and a missing key alike, never as the text 'None'."""
    for rater in raters:
        for assignment in services.assignments_of(study, rater):
            services.save_answer(assignment, {BATCH: ""})  # ticked, with no rationale
        services.submit(study, rater)
    client.force_login(raters[0])
    as_json = client.get(reverse("labeling:export", args=[study.pk, "labels", "json"])).json()
    assert {(row["rationale"], row["other_note"]) for row in as_json["rows"]} == {(None, None)}
    as_csv = client.get(reverse("labeling:export", args=[study.pk, "labels", "csv"])).content.decode()
    assert {(row["rationale"], row["other_note"]) for row in csv.DictReader(io.StringIO(as_csv))} == {("", "")}
    rows = as_json["rows"][:3]
    rows[1]["rationale"] = ""
    del rows[2]["rationale"], rows[2]["other_note"]
    other = services.create_study(name="Elsewhere", lead=raters[0], raters=raters, sample_size=1, seed=99)
    result = exchange.import_labels(other, json.dumps({"rows": rows}))
    assert not result.errors and result.answers == 3
    assert {(row["rationale"], row["other_note"]) for row in exchange.label_rows(other)} == {("", "")}


def test_save_says_what_it_kept_on_the_page_that_follows(client, study, raters):
    """Save reloaded the same page, and save and next moved on, with nothing saying the answer was kept."""
    client.force_login(raters[0])
    first = services.assignments_of(study, raters[0]).order_by("item__position").first()
    url = reverse("labeling:label", args=[study.pk, first.item_id])
    page = client.post(url, {"option": [CKPT, BATCH], "then": "stay"}, follow=True).content.decode()
    said = f"Saved job #1 ({first.item.job}): Improper batch size, Model checkpointing."
    assert said + "</p>" in html.unescape(page)  # staying: no link back to the page it is on
    page = client.post(url, {"option": ["none"], "then": "next"}, follow=True)
    assert page.redirect_chain[-1][0].endswith(f"/label/{study.items.get(position=2).pk}/")
    text = html.unescape(page.content.decode())
    assert f'Saved job #1 ({first.item.job}): None of these. <a href="{url}">Change it</a>' in text


def test_a_disagreement_shows_what_the_raters_share_and_what_each_chose_alone(client, study, raters):
    """The list gave each rater's whole set, leaving the lead to spot the difference, and 'Other'
    without what its rater said it is."""
    first, second = raters
    answer(study, first, {1: [BATCH, CKPT], 2: [CKPT], 3: [BATCH], 4: ["none"]})
    answer(study, second, {1: [BATCH], 2: [CKPT], 3: [BATCH], 4: ["none"]})
    job_4 = services.assignments_of(study, second).get(item__position=4)
    services.save_answer(job_4, {"other": ""}, "a firmware <b>bug</b>")
    for rater in raters:
        services.submit(study, rater)
    client.force_login(first)
    page = client.get(reverse("labeling:agreement", args=[study.pk])).content.decode()
    rows = page.split('id="disagreements"')[1].split("</table>")[0].split("<tr>")[2:]
    assert len(rows) == 2
    text = [re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", row)) for row in rows]
    assert "Both: Improper batch size" in text[0]
    assert (
        f"{first.username} only: Model checkpointing" in text[0] and f"{second.username} only: nothing more" in text[0]
    )
    assert "Both" not in text[1] and f"{first.username}: None of these" in text[1]
    assert f"{second.username}: Other <q>a firmware &lt;b&gt;bug&lt;/b&gt;</q>" in re.sub(
        r"<(?!/?q>)[^>]+>", "", rows[1]
    )


def test_the_headline_alpha_says_its_interval_and_the_jobs_it_rests_on(client, wide_study, raters):
    study = wide_study
    run_wide_study(study, raters)
    client.force_login(raters[0])
    page = as_read(client.get(reverse("labeling:agreement", args=[study.pk])).content.decode())
    alpha = services.agreement_report(study).group.pooled_alpha
    said = f'id="alpha-interval">95 % CI [{alpha.low:.3f}, {alpha.high:.3f}] · 6 jobs</p>'
    assert said in page
    # Whose count is whose in "Ticked 2 / 1 / 2": the header names the raters in the counts' order.
    assert 'Ticked <span class="muted">(ravi-rater / rita-researcher / either)</span>' in page
    # Each header starts with a capital, as the page's other tables' do ("agreement", "ticked" did not);
    # the pair's kappa starts with the first rater's name, which keeps its own case.
    head = page.split('id="per-category"')[1].split("</thead>")[0]
    headers = [re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r"<th[^>]*>(.*?)</th>", head)]
    assert headers == [
        "Option",
        "ravi-rater &amp; rita-researcher: kappa",
        "Agreement (all; positive / negative)",
        "Ticked (ravi-rater / rita-researcher / either)",
    ]
    row = page.split("Model checkpointing</span></td>")[1].split("</tr>")[0]
    # ravi ticked it on jobs 2 and 3, rita on job 2: 2 / 1, and 2 jobs either did
    assert "</span><span>2 / 1 / 2</span></td>" in row


def test_export_and_import_commands(study, raters, tmp_path, capsys):
    from django.core.management import call_command

    run_study(study, raters)
    out = tmp_path / "labels.json"
    call_command("export_study", study.pk, "labels", "--format", "json", "--out", str(out))
    assert json.loads(out.read_text())["rows"]
    other = services.create_study(name="Copy", lead=raters[0], raters=raters, sample_size=1, seed=3)
    call_command("import_labels", other.pk, str(out), "--dry-run")
    assert "would store 8 answers" in capsys.readouterr().out
    # The quality JSON says what the page's says; paths that cannot be read or written are messages.
    from django.core.management.base import CommandError

    services.adjudicate(study.items.get(position=3), [CKPT], "saves", raters[0])
    services.freeze_gold(study, raters[0])
    call_command("export_study", study.pk, "quality", "--format", "json", "--out", str(tmp_path / "q.json"))
    quality = json.loads((tmp_path / "q.json").read_text())
    assert quality["jobs_scored"] + quality["jobs_not_triaged"] == 4
    with pytest.raises(CommandError, match="Cannot read .*missing.csv: No such file"):
        call_command("import_labels", other.pk, str(tmp_path / "missing.csv"))
    with pytest.raises(CommandError, match="Cannot write .*: No such file"):
        call_command("export_study", study.pk, "labels", "--out", str(tmp_path / "no" / "dir.csv"))
    with pytest.raises(CommandError, match="The study has no such gold set"):
        call_command("export_study", study.pk, "gold", "--gold", "0")  # 0 is a version asked for, not "the latest"


def test_an_item_number_past_any_id_is_not_found(client, study, raters):
    # SQLite cannot compare an integer past 2**63 with a column (OverflowError: a server error).
    client.force_login(raters[0])
    assert client.get(reverse("labeling:label", args=[study.pk, 99999999999999999999])).status_code == 404


@pytest.mark.django_db(transaction=True)
def test_freezing_gold_twice_at_once_makes_two_versions_not_an_error(study, raters):
    """A double-clicked "Freeze": on SQLite both transactions read, then neither could write
    ("database is locked" at once, a 500); each now waits its turn (PostgreSQL locks the study)."""
    import threading

    from django.db import connection

    run_study(study, raters)
    services.adjudicate(study.items.get(position=3), [CKPT], "saves", raters[0])
    failures, start = [], threading.Barrier(3)

    def freeze():
        start.wait()
        try:
            services.freeze_gold(study, raters[0])
        except Exception as exc:  # noqa: BLE001 - what the page would have answered 500 for
            failures.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=freeze) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert sorted(study.gold_sets.values_list("version", flat=True)) == [1, 2, 3]


def test_an_imported_answer_changed_on_the_page_is_the_pages(client, study, raters):
    """The labels export's `source` column said "import" for an answer last saved on the page."""
    from triage.labeling.models import Assignment

    rater = raters[0]
    item = study.items.get(position=1)
    row = f"cluster,job_id,rater,option\n{item.job.cluster.name},{item.job.external_id},{rater.username},{BATCH}\n"
    assert not exchange.import_labels(study, row).errors
    assignment = Assignment.objects.get(item=item, rater=rater)
    assert assignment.source == "import"
    client.force_login(rater)
    client.post(reverse("labeling:label", args=[study.pk, item.pk]), {"option": [CKPT], "then": "stay"})
    assignment.refresh_from_db()
    assert assignment.source == "web" and list(assignment.labels.values_list("option", flat=True)) == [CKPT]


def test_the_sentence_for_a_paper_with_three_raters_names_fleiss_kappa_and_no_pair():
    from types import SimpleNamespace

    from triage.labeling import agreement

    labels = [{"a"}, {"b"}, {"a", "b"}, {"none"}] * 3
    ratings = {u: {r: frozenset(s) for r in ("ann", "bob", "cy")} for u, s in enumerate(labels)}
    ratings[0] = {"ann": frozenset({"a"}), "bob": frozenset({"b"}), "cy": frozenset({"a"})}
    report = agreement.agreement_report(ratings, ["a", "b", "none", "other"], resamples=200, seed=3)
    study = SimpleNamespace(show_findings=True, labels_per_job=3, seed=3)
    said = exchange.methods_sentence(study, report)
    assert said.startswith("3 raters labelled 12 jobs independently, 3 raters per job (shown the rules' findings)")
    assert "Cohen's kappa" not in said and "Krippendorff's alpha" in said and "Fleiss' kappa" in said
    assert said.endswith("Their label sets were identical on 11 of 12 jobs (91.7 %).")


# --- Skipping a job ("I can't judge this one") ---------------------------------------------------


def test_a_rater_skips_a_job_with_a_reason_and_it_leaves_their_queue(client, study, researcher):
    client.force_login(researcher)
    first, second = services.assignments_of(study, researcher).order_by("item__position")[:2]
    skip_url = reverse("labeling:skip", args=[study.pk, first.item_id])
    label_url = reverse("labeling:label", args=[study.pk, first.item_id])
    page = client.get(label_url).content.decode()
    assert f'formaction="{skip_url}"' in page and 'value="outside_expertise"' in page
    # No reason, or "other" without words: refused, saying which field, and nothing stored.
    response = client.post(skip_url, {"skip_reason": ""}, follow=True)
    assert "Not skipped: Reason to skip: choose why you cannot judge this job." in response.content.decode()
    response = client.post(skip_url, {"skip_reason": "bored"}, follow=True)
    assert "Reason to skip: &#x27;bored&#x27; is not one of" in response.content.decode()
    response = client.post(skip_url, {"skip_reason": "other", "skip_note": "  "}, follow=True)
    assert "Why: say why you skip this job" in response.content.decode()
    first.refresh_from_db()
    assert first.skipped_at is None
    # A saved answer is dropped by the skip.
    services.save_answer(first, {BATCH: "small batch"})
    response = client.post(skip_url, {"skip_reason": "data_broken", "skip_note": "the series stop after 2 min"})
    assert response.status_code == 302
    first.refresh_from_db()
    assert first.skip_reason == "data_broken" and first.saved_at is None and not first.labels.exists()
    # On to the next job, with the skip said and the way back.
    response = client.get(response["Location"], follow=True)
    assert response.redirect_chain[-1][0] == reverse("labeling:label", args=[study.pk, second.item_id])
    page = response.content.decode()
    assert f"Skipped job #{first.item.position}" in page and "The job&#x27;s data is broken or missing" in page
    assert f'<a href="{label_url}">Change it</a>' in page
    assert "1 of 4 labelled or skipped (1 skipped)" in page
    assert services.progress(study, researcher) == (1, 4)
    assert services.next_assignment(study, researcher).item_id == second.item_id
    # Back on the skipped job: it says so; saving an answer replaces the skip.
    assert "You skipped this job: The job&#x27;s data is broken or missing" in client.get(label_url).content.decode()
    client.post(label_url, {"option": [CKPT], "then": "stay"})
    first.refresh_from_db()
    assert first.saved_at is not None and first.skipped_at is None and first.skip_reason == ""


def test_skipped_jobs_count_as_done_for_submitting_and_are_final_after(study, researcher):
    assignments = list(services.assignments_of(study, researcher).order_by("item__position"))
    services.skip_job(assignments[0], "outside_expertise")
    answer(study, researcher, {2: [BATCH], 3: [CKPT], 4: ["none"]} | {1: [BATCH]})  # saving job 1 unskips it
    services.skip_job(assignments[0], "other", "a trace format I do not know")
    services.submit(study, researcher)
    with pytest.raises(services.LabelingError, match="submitted"):
        services.skip_job(assignments[1], "not_enough_evidence")


def test_the_study_page_lists_skips_with_reasons_but_no_one_elses_before_submitting(client, study, raters):
    """Blind: a rater still labelling sees their own skips, never the other rater's (nor any label)."""
    lead, ravi = raters
    ravi_job = services.assignments_of(study, ravi).get(item__position=2)
    services.skip_job(ravi_job, "other", "RAVI-SAYS-WHY")
    lead_job = services.assignments_of(study, lead).get(item__position=3)
    services.skip_job(lead_job, "not_enough_evidence")
    url = reverse("labeling:study", args=[study.pk])
    client.force_login(lead)
    page = client.get(url).content.decode()
    skips = page.split('id="skips"')[1].split("</table>")[0]
    assert "Not enough evidence to judge" in skips and str(lead_job.item.job) in skips
    assert "RAVI-SAYS-WHY" not in page and "Yours only" in page
    client.force_login(ravi)
    page = client.get(url).content.decode()
    assert "RAVI-SAYS-WHY" in page and "Not enough evidence to judge" not in page
    assert page.count('muted">(1 skipped)</span>') == 1  # the raters table counts ravi's own skip, not rita's
    # Once both have submitted, each sees the other's skips too (the jobs and reasons, no labels).
    answer(study, lead, {1: [BATCH], 2: [CKPT], 4: ["none"]} | {3: [BATCH]})
    services.skip_job(lead_job, "not_enough_evidence")
    answer(study, ravi, {1: [BATCH], 3: [CKPT], 4: ["none"]} | {2: [BATCH]})
    services.skip_job(ravi_job, "other", "RAVI-SAYS-WHY")
    for rater in raters:
        services.submit(study, rater)
    page = client.get(url).content.decode()
    skips = page.split('id="skips"')[1].split("</table>")[0]
    assert "RAVI-SAYS-WHY" in skips and "Not enough evidence to judge" in skips and "Yours only" not in page
    assert page.count('muted">(1 skipped)</span>') == 2  # in the raters table


def test_agreement_leaves_skipped_jobs_out_of_the_pair_and_says_how_many(client, wide_study, raters):
    study = wide_study
    first, second = raters
    answer(study, first, {1: [BATCH], 2: [CKPT], 3: [BATCH], 4: ["none"], 5: [BATCH], 6: ["none"]})
    answer(study, second, {1: [BATCH], 2: [CKPT], 3: [CKPT], 4: ["none"], 5: [BATCH], 6: ["none"]})
    # ravi cannot judge job 3, where they disagreed: it leaves the pair, and with it the disagreement.
    services.skip_job(services.assignments_of(study, second).get(item__position=3), "outside_expertise")
    for rater in raters:
        services.submit(study, rater)
    report = services.agreement_report(study)
    (pair,) = report.pairs
    assert (pair.units, pair.skipped, report.units_skipped) == (5, 1, 1) and not report.disagreements
    client.force_login(first)
    page = client.get(reverse("labeling:agreement", args=[study.pk])).content.decode()
    assert 'id="skipped-count">1</p>' in page and '<td class="num pair-skipped">1</td>' in page
    assert "1 job a rater skipped as impossible to judge was left out" in page  # the sentence for a paper
    rows = list(
        csv.DictReader(
            io.StringIO(client.get(reverse("labeling:export", args=[study.pk, "agreement", "csv"])).content.decode())
        )
    )
    pooled = next(r for r in rows if r["statistic"] == "cohen_kappa" and r["option"] == "pooled")
    assert (pooled["jobs"], pooled["jobs_skipped"]) == ("5", "1")
    data = client.get(reverse("labeling:export", args=[study.pk, "agreement", "json"])).json()
    assert data["jobs_skipped"] == 1


def test_the_labels_export_has_the_skips_and_imports_them_back(client, study, raters):
    run_study(study, raters)
    ravi = raters[1]
    link = services.rater_link(ravi, study)
    link.submitted_at = None
    link.save()
    skipped = services.assignments_of(study, ravi).get(item__position=4)
    services.skip_job(skipped, "other", "=cmd|' /C calc'!A0")  # free text, spreadsheet-safe in the CSV
    services.submit(study, ravi)
    client.force_login(raters[0])
    exported = client.get(reverse("labeling:export", args=[study.pk, "labels", "csv"])).content.decode()
    rows = list(csv.DictReader(io.StringIO(exported)))
    assert list(rows[0]) == exchange.LABEL_COLUMNS
    (skip_row,) = [r for r in rows if r["skip_reason"]]
    assert (skip_row["rater"], skip_row["option"], skip_row["skip_reason"]) == ("ravi-rater", "", "other")
    assert skip_row["job_id"] == skipped.item.job.external_id
    assert not [r for r in rows if r["rater"] == "ravi-rater" and r["job_id"] == skip_row["job_id"] and r["option"]]
    data = client.get(reverse("labeling:export", args=[study.pk, "labels", "json"])).json()
    (json_skip,) = [r for r in data["rows"] if r["skip_reason"]]
    assert json_skip["option"] is None and json_skip["skip_note"] == "=cmd|' /C calc'!A0"
    # Imported into another study, the skip is a skip again (and a row both skipped and labelled is refused).
    other = services.create_study(name="Copy", lead=raters[0], raters=raters, sample_size=1, seed=3)
    result = exchange.import_labels(other, exported)
    assert not result.errors
    imported = Assignment.objects.get(item__study=other, item__job=skipped.item.job, rater=ravi)
    assert (imported.skip_reason, imported.skip_note, imported.saved_at) == ("other", "=cmd|' /C calc'!A0", None)
    both = exported + f"{study.pk},Pilot,{skip_row['cluster']},{skip_row['job_id']},ravi-rater,none,,,,web,,\n"
    result = exchange.import_labels(other, both)
    assert any("skipped (skip_reason) and labelled both" in e for e in result.errors)


def test_an_agreement_on_four_jobs_says_too_few_jobs_for_an_interval_first_on_the_page(client, study, raters):
    """The headline comes first, with its interval or why there is none; the method is folded away."""
    run_study(study, raters)
    client.force_login(raters[0])
    page = as_read(client.get(reverse("labeling:agreement", args=[study.pk])).content.decode())
    pooled = services.agreement_report(study).pairs[0].pooled_kappa
    assert '<span class="name">Cohen&#x27;s kappa</span>' in page
    assert f'<span id="headline-value">{pooled.value:.3f}</span>' in page
    assert 'id="headline-interval">4 jobs: too few jobs for an interval (n=4; at least 5 needed)</p>' in page
    assert page.index('id="headline"') < page.index('id="how-computed"') < page.index('id="pairs"')
    assert '<details class="card method" id="how-computed">' in page  # closed: secondary
    assert "Brackets: 95 % bootstrap interval" in page.split('id="how-computed"')[1].split("</details>")[0]
    said = exchange.methods_sentence(study, services.agreement_report(study))
    assert f"Cohen's kappa {pooled.value:.3f} (no interval: too few jobs, 4; at least 5 needed)" in said
    assert "Intervals: percentile bootstrap" not in said


def test_the_headline_says_what_its_figure_means(client, study, raters):
    """The headline named its statistic, its interval and its jobs, but not what the figure means: a
    reader who does not compute kappas could not tell 0.6 good from bad, nor why it is not the share
    of decisions agreed on. One line under it says so, for kappa and alpha alike."""
    run_study(study, raters)
    client.force_login(raters[0])
    page = as_read(html.unescape(client.get(reverse("labeling:agreement", args=[study.pk])).content.decode()))
    headline = page.split('id="headline"')[1].split("</section>")[0]
    assert (
        "Agreement beyond chance: 1 when the raters agree on every decision, 0 when they agree no more often "
        "than chance would, below 0 less often."
    ) in headline


def test_with_three_raters_the_headline_is_fleiss_kappa_or_alpha_when_skips_make_the_label_counts_unequal(
    client, raters, jobs
):
    third = make_researcher("tara-rater")
    everyone = [*raters, third]
    url = "labeling:agreement"
    for name, skip in (("Fleiss", False), ("Alpha", True)):
        study = services.create_study(
            name=name, lead=raters[0], raters=everyone, strategy="all", seed=4, labels_per_job=3
        )
        for rater in everyone:
            answer(study, rater, {p: [BATCH] if p % 2 else ["none"] for p in range(1, 7)})
        if skip:  # tara cannot judge job 1: it has two labels, the others three, so no Fleiss' kappa
            services.skip_job(services.assignments_of(study, third).get(item__position=1), "outside_expertise")
        for rater in everyone:
            services.submit(study, rater)
        client.force_login(raters[0])
        page = client.get(reverse(url, args=[study.pk])).content.decode()
        headline = page.split('id="headline"')[1].split("</section>")[0]
        expected = "Krippendorff&#x27;s alpha" if skip else "Fleiss&#x27; kappa"
        assert f'<span class="name">{expected}</span>' in headline and "All 3 raters together" in headline
        assert ('id="alpha-interval"' in page) is not skip  # alpha beside a kappa, not twice
    # The skip left job 1 with two labels: still in the all-raters figures, and out of tara's pairs.
    report = services.agreement_report(study)
    assert report.units_skipped == 1 and report.group.skipped == 0 and report.group.units == 6
    assert {pair.raters: pair.skipped for pair in report.pairs} == {
        ("ravi-rater", "rita-researcher"): 0,
        ("ravi-rater", "tara-rater"): 1,
        ("rita-researcher", "tara-rater"): 1,
    }


def test_once_every_job_is_labelled_or_skipped_the_queue_says_so(client, study, researcher):
    answer(study, researcher, {1: [BATCH], 2: [CKPT], 3: [BATCH], 4: ["none"]})
    services.skip_job(services.assignments_of(study, researcher).get(item__position=4), "data_broken")
    client.force_login(researcher)
    response = client.get(reverse("labeling:label-next", args=[study.pk]), follow=True)
    assert "Every job you were given is labelled or skipped." in response.content.decode()


def test_a_skip_note_past_300_characters_is_refused_naming_the_field(client, study, researcher):
    client.force_login(researcher)
    first = services.assignments_of(study, researcher).order_by("item__position").first()
    skip_url = reverse("labeling:skip", args=[study.pk, first.item_id])
    response = client.post(skip_url, {"skip_reason": "other", "skip_note": "x" * 301}, follow=True)
    assert response.status_code == 200 and "Why: at most 300 characters (301 given)." in response.content.decode()
    first.refresh_from_db()
    assert first.skipped_at is None
    # Someone outside the study, or a job id no row can have: there is nothing to skip.
    client.force_login(make_researcher("outside-rater"))
    assert client.post(skip_url, {"skip_reason": "data_broken"}).status_code == 404
    client.force_login(researcher)
    huge = reverse("labeling:skip", args=[study.pk, 2**63])
    assert client.post(huge, {"skip_reason": "data_broken"}).status_code == 404


def test_a_refused_skip_keeps_what_the_rater_typed_and_the_form_still_saves_answers(client, study, researcher):
    """A skip refused (no reason chosen) sent the rater back to the job's stored page: the words they had
    typed for it, and any ticks, were gone. Now the page comes back with them, the error in the skip's
    box; its form still saves an answer (it was sent from the skip's address, where it would skip)."""
    client.force_login(researcher)
    item = services.assignments_of(study, researcher).get(item__position=1).item_id
    url, skip_url = reverse("labeling:label", args=[study.pk, item]), reverse("labeling:skip", args=[study.pk, item])
    response = client.post(skip_url, {"option": [BATCH], "skip_reason": "", "skip_note": "the log stops at 2 min"})
    assert response.status_code == 200
    page = html.unescape(response.content.decode())
    assert re.search(r'<p class="error" role="alert" data-focus id="skip-error">Not skipped: Reason to skip', page)
    assert '<details class="skip-job" open>' in page and 'value="the log stops at 2 min"' in page
    assert f'<form method="post" action="{url}" class="card label-form" id="label-form" data-unsaved>' in page
    assert 'value="improper_batch_size" id="opt-improper_batch_size" data-key="5" checked' in page


def test_the_gold_page_says_which_jobs_a_skip_keeps_out(client, study, raters):
    """A job one of two raters skipped has one label: it stays out of gold. The page said "without two
    submitted labels yet", as if it were still waiting for one, and never that a skip kept it out."""
    first, second = raters
    answer(study, first, {1: [BATCH], 2: [CKPT], 3: [BATCH], 4: ["none"]})
    answer(study, second, {1: [BATCH], 2: [CKPT], 3: [BATCH], 4: ["none"]})
    services.skip_job(services.assignments_of(study, second).get(item__position=4), "outside_expertise")
    for rater in raters:
        services.submit(study, rater)
    plan = services.gold_plan(study)
    assert [item.position for item in plan.skipped] == [4] and plan.incomplete == []
    client.force_login(first)
    page = client.get(reverse("labeling:gold", args=[study.pk])).content.decode()
    assert "Ready now: <strong>3</strong> jobs" in page
    assert "1 job a rater skipped, left with fewer than two labels, which stays out" in page
    assert "without two submitted labels yet" not in page


def test_an_agreement_short_of_perfect_never_reads_as_perfect():
    """The agreement page writes percent agreement to one decimal, unlike the product's whole-percent
    shares, on purpose: a category's agreement counts every job both raters left it off, so it sits near
    100 %, and whole percent (`share_text`) would write one disagreement in 250 jobs as "100 %" beside
    a kappa below 1."""
    from fleet.numbers import share_text
    from triage.labeling.agreement import percent_agreement
    from triage.labeling.templatetags.labeling_format import percent

    one_disagreement = percent_agreement([True] + [False] * 249, [False] * 250)
    assert share_text(one_disagreement) == "100 %"  # what whole percent would say
    assert percent(one_disagreement) == "99.6\u00a0%"  # its "%" on the figure's line
    assert percent(percent_agreement([True, False], [True, False])) == "100.0\u00a0%"


def test_before_gold_the_rules_page_leads_to_the_gold_page_and_one_job_is_one_job(client, study, raters):
    """Before any gold set the rules page said "Freeze a gold set first" and gave no way to where that is
    done; it now links the Gold sets page. There, one job ready read "Ready now: 1 jobs"."""
    first, second = raters
    answer(study, first, {1: [BATCH], 2: [CKPT], 3: [BATCH], 4: ["none"]})
    answer(study, second, {1: [BATCH], 2: [BATCH], 3: [CKPT], 4: [CKPT]})
    for rater in raters:
        services.submit(study, rater)
    client.force_login(first)
    page = client.get(reverse("labeling:rules", args=[study.pk])).content.decode()
    empty = page.split('<p class="empty"')[1].split("</p>")[0]
    assert f'<a href="{reverse("labeling:gold", args=[study.pk])}">' in empty
    page = client.get(reverse("labeling:gold", args=[study.pk])).content.decode()
    assert "Ready now: <strong>1</strong> job (" in page


def test_the_study_pages_raters_table_names_the_zone_of_its_submitted_times(client, study, raters):
    """The raters table gave "Submitted 2026-12-07 00:58" under a bare "Submitted": a time without its
    zone, where every other table of times names it in its header (Start (UTC), Started (UTC))."""
    from fleet.models import UserProfile

    lead, ravi = raters
    answer(study, ravi, {1: [BATCH], 2: [CKPT], 3: [BATCH], 4: ["none"]})
    services.submit(study, ravi)
    client.force_login(lead)
    page = client.get(reverse("labeling:study", args=[study.pk])).content.decode()
    head = page.split('<caption class="visually-hidden">Raters</caption>')[1].split("</thead>")[0]
    assert '<th scope="col" role="columnheader">Submitted (UTC)</th>' in head
    UserProfile.objects.update_or_create(user=lead, defaults={"time_zone": "Europe/Berlin"})
    page = client.get(reverse("labeling:study", args=[study.pk])).content.decode()
    head = page.split('<caption class="visually-hidden">Raters</caption>')[1].split("</thead>")[0]
    assert '<th scope="col" role="columnheader">Submitted (Europe/<wbr>Berlin)</th>' in head


def test_an_undefined_kappa_says_why_beside_its_dash(client, study, raters):
    """A category neither rater ticked has no kappa (0/0): its cell showed a bare dash, with the reason
    only in a hover title (no phone shows one) and folded in "How these figures are computed", while every
    other figure without an interval says why beside it. It read "same answer on every job: undefined",
    which looked like an error message; the reason now reads as a sentence, the term first."""
    from tests.reading import table_rows

    run_study(study, raters)
    client.force_login(raters[0])
    page = client.get(reverse("labeling:agreement", args=[study.pk])).content.decode()
    (api_misuse,) = [row for row in table_rows(page, "Per category") if row[0] == "API misuse"]
    assert api_misuse[1] == "– (undefined: every job got the same answer)"
    # The percent agreement beside it still counts; under it, positive agreement is undefined too (no tick
    # to match) and negative agreement is whole.
    assert api_misuse[2] == "100.0 % – / 100.0 %"
