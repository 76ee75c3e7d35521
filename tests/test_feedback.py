"""Job owners' verdicts on the causes the rules found: given on the job's page, one per person and
cause, scoped like the job, never from a blind rater, and added up on the causes pages."""

import csv
import io
from html import unescape

import pytest
from django.test import Client
from django.urls import reverse

from tests.factories import JobFactory, OwnerFactory, UserFactory
from tests.test_browser import body_text, browser  # noqa: F401  (the shared Chromium fixture)
from tests.test_jobs_page import triaged
from triage.labeling.models import Assignment, Study, StudyJob, StudyRater
from triage.models import Feedback, Finding, JobTriage, RuleSet
from triage.taxonomy import Category

pytestmark = pytest.mark.django_db

CKPT, DATA = Category.MODEL_CHECKPOINTING, Category.DATA_PREPROCESSING
SET_ASIDE = " The team's weekly digest no longer suggests this change for this job (unless someone answers right)."


@pytest.fixture
def job(team_a):
    job = JobFactory(team=team_a, name="ckpt-heavy", mean_gpu_util=25)
    triaged(job, "classified", CKPT, DATA)
    return job


def answer(client, job, **data):
    return client.post(reverse("triage:job-feedback", args=[job.pk]), data)


def job_page(client, job) -> str:
    response = client.get(reverse("dashboard:job-detail", args=[job.pk]))
    assert response.status_code == 200
    return response.content.decode()


def finding_block(html: str, category) -> str:
    return html.split(f'id="finding-{category}"')[1].split('class="finding"')[0]


def answer_block(html: str, category) -> str:
    """The answers and answer form of one finding."""
    return html.split(f'id="answer-{category}"')[1].split("</form>")[0]


IN_VIEW = "const r = arguments[0].getBoundingClientRect(); return r.top >= 0 && r.bottom <= window.innerHeight;"


def test_the_answer_is_confirmed_by_its_form_not_at_the_top_of_the_page(client, member_a, job):
    """After an answer the page scrolls to the finding, so "Saved your answer" at the top of the page
    went unseen: it is said by the finding's answer form, where the page lands, as a status."""
    client.force_login(member_a)
    response = answer(client, job, category=CKPT, verdict="wrong")
    assert response.url.endswith(f"#answer-{CKPT}")
    html = job_page(client, job)
    said = (
        'role="status" data-focus>Saved your answer on Model checkpointing: Wrong: not the cause. The team&#x27;s'
        " weekly digest no longer suggests this change for this job (unless someone answers right).</p>"
    )
    assert said in answer_block(html, CKPT)
    assert html.count("Saved your answer") == 1  # not at the top of the page as well
    assert "Saved your answer" not in answer_block(html, DATA)
    assert "Saved your answer" not in job_page(client, job)  # said once

    answer(client, job, category=CKPT, withdraw="on")
    assert "Your answer on Model checkpointing was withdrawn." in answer_block(job_page(client, job), CKPT)
    response = answer(client, job, category=CKPT)  # no verdict: where the page lands, the findings
    assert response.url.endswith("#findings")
    findings = job_page(client, job).split('id="findings"')[1]
    assert 'role="status" data-focus>Your answer was not saved (verdict: choose whether this is the cause).' in findings


def test_each_findings_question_names_its_cause_to_a_screen_reader(client, member_a, job):
    """The radio buttons' group was named "Is this why the GPUs idled?" alike for every finding: a
    screen reader reaching one out of the heading's sight could not tell which cause it answered."""
    import re

    client.force_login(member_a)
    html = job_page(client, job)
    for category, label in ((CKPT, "Model checkpointing"), (DATA, "Data preprocessing on CPU")):
        legend = re.search(r"<legend>(.*?)</legend>", answer_block(html, category), re.S).group(1)
        spoken = unescape(re.sub(r"<[^>]+>", "", legend)).strip()
        assert spoken.startswith(f"Is this why the GPUs idled? ({label})"), spoken


def test_an_owner_answers_changes_and_withdraws(client, member_a, job):
    client.force_login(member_a)
    response = answer(client, job, category=CKPT, verdict="wrong", comment="we save once an epoch, on purpose")
    assert response.status_code == 302
    assert response.url == reverse("dashboard:job-detail", args=[job.pk]) + f"#answer-{CKPT}"
    html = job_page(client, job)
    assert "Saved your answer on Model checkpointing: Wrong: not the cause." in html
    block = finding_block(html, CKPT)
    assert "You said: Wrong: not the cause" in block and 'value="wrong" checked' in block
    assert ">we save once an epoch, on purpose</textarea>" in block  # the reason given, in its box to change
    assert "You said" not in finding_block(html, DATA)  # the other cause is not answered

    answer(client, job, category=CKPT, verdict="expected")
    saved = Feedback.objects.get()
    assert (saved.verdict, saved.comment, saved.user, saved.rule_set) == ("expected", "", member_a, RuleSet.current())

    answer(client, job, category=CKPT, withdraw="on")
    assert not Feedback.objects.exists()
    assert "Your answer on Model checkpointing was withdrawn." in job_page(client, job)


def test_others_see_each_answer_with_its_comment_escaped(client, member_a, operator, job):
    client.force_login(member_a)
    answer(client, job, category=DATA, verdict="right", comment="<script>alert(1)</script> the tokenizer")
    client.force_login(operator)
    block = finding_block(job_page(client, job), DATA)
    assert "alice-member</strong>: Right: this is why" in block
    assert "&lt;script&gt;alert(1)&lt;/script&gt; the tokenizer" in block and "<script>alert" not in block
    assert "You said" not in block


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ({"category": CKPT}, "verdict: choose whether this is the cause"),
        ({"category": "api_misuse", "verdict": "right"}, "that cause is not among the job's current findings"),
        ({"category": "no-such-cause", "verdict": "right"}, "that cause is not among the job's current findings"),
        ({"category": CKPT, "verdict": "maybe"}, "verdict: not one of the answers"),
        ({"category": CKPT, "verdict": "wrong", "comment": "x" * 1001}, "at most 1000 characters"),
        ({"verdict": "wrong"}, "say which cause you judge"),
    ],
)
def test_a_bad_answer_is_refused_with_its_reason_and_nothing_is_stored(client, member_a, job, data, problem):
    client.force_login(member_a)
    response = answer(client, job, **data)
    assert response.status_code == 302
    html = unescape(job_page(client, job))
    assert "Your answer was not saved (" in html and problem in html
    assert not Feedback.objects.exists()


def test_only_people_who_may_see_the_job_can_answer(member_a, outsider, job, team_b):
    other = JobFactory(team=team_b)
    triaged(other, "classified", CKPT)
    for user, target in ((outsider, job), (member_a, other)):
        client = Client()
        client.force_login(user)
        assert answer(client, target, category=CKPT, verdict="wrong").status_code == 404
    assert answer(Client(), job, category=CKPT, verdict="wrong").status_code == 302  # to the login page
    assert not Feedback.objects.exists()


def test_the_form_needs_its_csrf_token(member_a, job):
    client = Client(enforce_csrf_checks=True)
    client.force_login(member_a)
    assert answer(client, job, category=CKPT, verdict="wrong").status_code == 403
    assert not Feedback.objects.exists()


def test_get_is_not_allowed(client, member_a, job):
    client.force_login(member_a)
    assert client.get(reverse("triage:job-feedback", args=[job.pk])).status_code == 405


def test_a_blind_rater_can_neither_answer_nor_see_the_answers(client, researcher, operator, member_a, job):
    client.force_login(member_a)
    answer(client, job, category=CKPT, verdict="wrong", comment="NOT-OURS")
    study = Study.objects.create(name="pilot", created_by=operator, seed=1, show_findings=False)
    StudyRater.objects.create(study=study, user=researcher)
    Assignment.objects.create(item=StudyJob.objects.create(study=study, job=job, position=1), rater=researcher)
    client.force_login(researcher)
    assert answer(client, job, category=CKPT, verdict="right").status_code == 403
    assert Feedback.objects.count() == 1
    assert "NOT-OURS" not in job_page(client, job)
    day = {"from": job.start_time.date().isoformat(), "to": job.start_time.date().isoformat()}
    cause = client.get(reverse("dashboard:category-detail", args=[CKPT]), day)
    assert cause.context["verdicts"] is None and "NOT-OURS" not in cause.content.decode()
    causes = client.get(reverse("dashboard:category-list"), day).context["categories"]
    assert next(row for row in causes if row["category"] == CKPT)["verdicts"] is None


def test_the_causes_pages_add_up_the_answers_in_the_viewer_s_scope(client, member_a, operator, job, team_a, team_b):
    other_owner = OwnerFactory(user=UserFactory(username="bob-member"), team=team_a).user
    foreign = JobFactory(team=team_b, start_time=job.start_time, end_time=job.end_time)
    triaged(foreign, "classified", CKPT)
    for user, target, verdict in ((member_a, job, "wrong"), (other_owner, job, "right"), (operator, foreign, "right")):
        client.force_login(user)
        answer(client, target, category=CKPT, verdict=verdict, comment=f"from {user.username}")
    client.force_login(operator)
    answer(client, job, category=CKPT, verdict="expected")
    day = {"from": job.start_time.date().isoformat(), "to": job.start_time.date().isoformat()}

    tally = client.get(reverse("dashboard:category-detail", args=[CKPT]), day).context["verdicts"]
    assert (tally.right, tally.wrong, tally.expected, tally.disputed_share) == (2, 1, 1, pytest.approx(1 / 3))
    causes = client.get(reverse("dashboard:category-list"), day).content.decode()
    assert '2 right · <span class="util low">1 wrong</span> · 1 intended' in causes and "(33 % disputed)" in causes

    client.force_login(member_a)  # team A only: the answer on team B's job is not theirs to count
    cause = client.get(reverse("dashboard:category-detail", args=[CKPT]), day)
    tally = cause.context["verdicts"]
    assert (tally.right, tally.wrong, tally.expected) == (1, 1, 1)
    html = cause.content.decode()
    assert "from bob-member" in html and "from olivia-operator" not in html


def test_an_answer_outlives_a_re_triage_that_finds_the_cause_again(client, member_a, job):
    client.force_login(member_a)
    answer(client, job, category=CKPT, verdict="wrong")
    JobTriage.objects.filter(job=job).update(is_current=False)
    newer = RuleSet.objects.create(version=RuleSet.current().version + 1, thresholds=RuleSet.current().thresholds)
    result = JobTriage.objects.create(job=job, rule_set=newer, status="classified", is_current=True)
    Finding.objects.create(result=result, job=job, rule_set=newer, category=CKPT, confidence=0.8, summary="s",
                           gpu_hours=1.0, evidence={}, guidance={})  # fmt: skip
    assert "You said: Wrong: not the cause" in finding_block(job_page(client, job), CKPT)


@pytest.mark.django_db(transaction=True)
def test_an_owner_answers_from_the_job_page_in_a_browser(browser, live_server, member_a, job):  # noqa: F811
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from tests.test_accessibility import open_as

    open_as(browser, live_server.url, member_a)
    browser.get(f"{live_server.url}/jobs/{job.pk}/")
    form = browser.find_element(By.CSS_SELECTOR, f"#finding-{CKPT} form.feedback-form")
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()  # no answer chosen: the browser asks
    assert not Feedback.objects.exists()
    form.find_element(By.XPATH, ".//label[contains(., 'Wrong: not the cause')]").click()
    form.find_element(By.NAME, "comment").send_keys("one save an epoch, by design")
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    message = browser.find_element(By.CSS_SELECTOR, f"#answer-{CKPT} p.message[role=status]")
    assert message.text == "Saved your answer on Model checkpointing: Wrong: not the cause." + SET_ASIDE
    assert browser.current_url.endswith(f"#answer-{CKPT}")
    # Where the reader is: the page lands on the answer form, and the confirmation is on screen with it.
    assert browser.execute_script(IN_VIEW, message) and not browser.find_elements(By.CSS_SELECTOR, "main > p.message")
    legend = browser.find_element(By.CSS_SELECTOR, f"#finding-{CKPT} legend").text
    assert "You said: Wrong: not the cause" in legend
    saved = Feedback.objects.get()
    assert (saved.user, saved.category, saved.verdict, saved.comment) == (
        member_a,
        CKPT,
        "wrong",
        "one save an epoch, by design",
    )
    browser.find_element(By.CSS_SELECTOR, f"#finding-{CKPT} button[name=withdraw]").click()
    # The page being left still shows the message of the save: wait for the next page's (read through
    # `body_text`, as Chrome answers a page being replaced with an error Selenium does not call stale).
    WebDriverWait(browser, 10).until(lambda driver: "was withdrawn" in body_text(driver))
    assert not Feedback.objects.exists()


def test_the_job_api_gives_the_answers_unless_its_user_rates_the_job_blind(client, member_a, researcher, operator, job):
    client.force_login(member_a)
    answer(client, job, category=CKPT, verdict="wrong", comment="by design")
    api = client.get(f"/api/v1/jobs/{job.pk}/").json()
    assert [(row["category"], row["user"], row["verdict"], row["comment"]) for row in api["feedback"]] == [
        (CKPT, "alice-member", "wrong", "by design")
    ]
    assert api["feedback"][0]["rule_set_version"] == RuleSet.current().version
    study = Study.objects.create(name="pilot", created_by=operator, seed=1, show_findings=False)
    StudyRater.objects.create(study=study, user=researcher)
    Assignment.objects.create(item=StudyJob.objects.create(study=study, job=job, position=1), rater=researcher)
    client.force_login(researcher)
    assert client.get(f"/api/v1/jobs/{job.pk}/").json()["feedback"] == []
    schema = client.get("/api/v1/schema/", HTTP_ACCEPT="application/json")
    assert "#/components/schemas/Feedback" in schema.content.decode() and "VerdictEnum" in schema.content.decode()


def test_the_findings_page_of_the_triage_app_takes_answers_too(client, member_a, job):
    client.force_login(member_a)
    answer(client, job, category=DATA, verdict="right")
    html = client.get(reverse("triage:job", args=[job.pk])).content.decode()
    assert "You said: Right: this is why" in finding_block(html, DATA)
    assert f'action="{reverse("triage:job-feedback", args=[job.pk])}"' in html


def remove(client, given):
    return client.post(reverse("triage:feedback-remove", args=[given.pk]))


def test_an_operator_removes_someone_s_answer_and_the_audit_log_keeps_what_it_said(client, member_a, operator, job):
    from fleet.models import AuditEvent

    client.force_login(member_a)
    answer(client, job, category=CKPT, verdict="wrong", comment="rude words here")
    answer(client, job, category=DATA, verdict="right")
    given = Feedback.objects.get(category=CKPT)
    assert "Remove" not in finding_block(job_page(client, job), CKPT)  # not for a member, not on their own

    client.force_login(operator)
    block = finding_block(job_page(client, job), CKPT)
    assert f'action="{reverse("triage:feedback-remove", args=[given.pk])}"' in block
    assert 'aria-label="Remove alice-member\'s answer"' in block
    response = remove(client, given)
    assert response.url == reverse("dashboard:job-detail", args=[job.pk]) + f"#answer-{CKPT}"
    html = job_page(client, job)
    assert "Removed alice-member&#x27;s answer on Model checkpointing." in answer_block(html, CKPT)
    assert "rude words here" not in html
    assert list(Feedback.objects.values_list("category", flat=True)) == [DATA]  # the other answer stays
    event = AuditEvent.objects.get(action="feedback.remove")
    assert event.actor == operator
    assert event.details == {
        "job": job.pk,
        "category": CKPT,
        "author": "alice-member",
        "verdict": "wrong",
        "comment": "rude words here",
    }
    assert remove(client, given).status_code == 404  # gone: a second click finds nothing


def test_only_an_operator_can_remove_an_answer_and_only_by_post_with_csrf(client, member_a, researcher, operator, job):
    client.force_login(member_a)
    answer(client, job, category=CKPT, verdict="wrong")
    given = Feedback.objects.get()
    for person in (member_a, researcher):  # its author withdraws it from the form instead
        client.force_login(person)
        assert remove(client, given).status_code == 404
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(operator)
    assert remove(strict, given).status_code == 403
    client.force_login(operator)
    assert client.get(reverse("triage:feedback-remove", args=[given.pk])).status_code == 405
    assert Feedback.objects.filter(pk=given.pk).exists()


def test_an_operator_rating_the_job_blind_cannot_remove_its_answers(client, member_a, operator, job):
    client.force_login(member_a)
    answer(client, job, category=CKPT, verdict="wrong")
    study = Study.objects.create(name="pilot", created_by=operator, seed=1, show_findings=False)
    StudyRater.objects.create(study=study, user=operator)
    Assignment.objects.create(item=StudyJob.objects.create(study=study, job=job, position=1), rater=operator)
    client.force_login(operator)
    assert remove(client, Feedback.objects.get()).status_code == 403
    assert Feedback.objects.exists()


def test_the_jobs_list_and_the_api_filter_by_what_owners_answered(client, member_a, researcher, operator, job, team_a):
    """Tuning a disputed rule starts from its disputed jobs: the jobs list (and its CSV and the
    API) narrows to the jobs answered wrong, right or intended, on the chosen cause if one is."""
    other = JobFactory(team=team_a, name="data-slow", start_time=job.start_time, end_time=job.end_time)
    triaged(other, "classified", CKPT, DATA)
    quiet = JobFactory(team=team_a, name="no-answers", start_time=job.start_time, end_time=job.end_time)
    triaged(quiet, "classified", CKPT)
    client.force_login(member_a)
    answer(client, job, category=CKPT, verdict="wrong")
    answer(client, other, category=DATA, verdict="wrong")
    answer(client, other, category=CKPT, verdict="right")

    def listed(**params):
        response = client.get(reverse("dashboard:job-list"), params)
        assert response.status_code == 200
        return sorted(row.name for row in response.context["page"].object_list)

    assert listed(answer="wrong") == ["ckpt-heavy", "data-slow"]
    assert listed(answer="wrong", category=CKPT) == ["ckpt-heavy"]  # on that cause
    assert listed(answer="right", category=CKPT) == ["data-slow"]
    assert listed(answer="expected") == []
    assert (
        '<option value="wrong" selected>Answered wrong</option>'
        in client.get(reverse("dashboard:job-list"), {"answer": "wrong"}).content.decode()
    )
    refused = client.get(reverse("dashboard:job-list"), {"answer": "maybe"}).content.decode()
    assert "Owners&#x27; answer: Select a valid choice." in refused and "Showing all jobs instead." in refused
    export = client.get(reverse("dashboard:job-list"), {"answer": "wrong", "category": CKPT, "format": "csv"})
    assert [line.split(",")[2] for line in b"".join(export.streaming_content).decode().splitlines()[1:]] == [
        "ckpt-heavy"
    ]
    api = client.get("/api/v1/jobs/", {"answer": "wrong", "category": DATA}).json()
    assert [row["name"] for row in api["results"]] == ["data-slow"]
    assert client.get("/api/v1/jobs/", {"answer": "maybe"}).status_code == 400

    # A blind rater of a job does not find it by its answers (they would tell what the rules found).
    study = Study.objects.create(name="pilot", created_by=operator, seed=1, show_findings=False)
    StudyRater.objects.create(study=study, user=researcher)
    Assignment.objects.create(item=StudyJob.objects.create(study=study, job=job, position=1), rater=researcher)
    client.force_login(researcher)
    assert listed(answer="wrong") == ["data-slow"]
    assert [row["name"] for row in client.get("/api/v1/jobs/", {"answer": "wrong"}).json()["results"]] == ["data-slow"]


def test_a_cause_s_page_links_to_its_jobs_answered_each_way(client, member_a, job):
    client.force_login(member_a)
    answer(client, job, category=CKPT, verdict="wrong")
    day = job.start_time.date().isoformat()
    html = client.get(reverse("dashboard:category-detail", args=[CKPT]), {"from": day, "to": day}).content.decode()
    section = html.split('id="answered-jobs"')[1].split("</p>")[0]
    link = f"{reverse('dashboard:job-list')}?category={CKPT}&amp;start_from={day}&amp;start_to={day}&amp;answer=wrong"
    assert f'<a href="{link}">the jobs answered wrong</a>' in section
    assert "answer=right" not in section and "answer=expected" not in section  # nobody answered so
    assert "ckpt-heavy" in client.get(link.replace("&amp;", "&")).content.decode()


def test_the_jobs_csv_says_what_was_answered_on_each_cause(client, member_a, operator, job):
    client.force_login(member_a)
    answer(client, job, category=CKPT, verdict="wrong")
    answer(client, job, category=DATA, verdict="expected")
    client.force_login(operator)
    answer(client, job, category=CKPT, verdict="right")
    quiet = JobFactory(team=job.team, name="quiet", start_time=job.start_time, end_time=job.end_time)
    export = client.get(reverse("dashboard:job-list"), {"format": "csv"})
    rows = {row["name"]: row for row in csv.DictReader(io.StringIO(b"".join(export.streaming_content).decode()))}
    assert rows["ckpt-heavy"]["answers"] == "data_preprocessing: 1 intended; model_checkpointing: 1 right, 1 wrong"
    assert rows[quiet.name]["answers"] == ""


def test_an_answer_says_what_it_changes_in_the_teams_digest(client, member_a, team_a, job):
    """ "Saved your answer" said nothing of what came of it: a cause answered wrong or intended, and
    right by nobody, is no longer the job's fix in the team's digest, and the answer says so; while
    someone says right it still is, and the answer says that."""
    client.force_login(member_a)
    answer(client, job, category=CKPT, verdict="expected")
    said = unescape(answer_block(job_page(client, job), CKPT))
    assert "Saved your answer on Model checkpointing: Intended: it is meant to run this way." + SET_ASIDE in said

    colleague = OwnerFactory(team=team_a).user
    other = Client()
    other.force_login(colleague)
    answer(other, job, category=CKPT, verdict="right")
    said = unescape(answer_block(job_page(other, job), CKPT))
    assert "Saved your answer on Model checkpointing: Right: this is why.</p>" in said  # nothing more to say

    answer(client, job, category=CKPT, verdict="wrong")
    said = unescape(answer_block(job_page(client, job), CKPT))
    assert (
        "Saved your answer on Model checkpointing: Wrong: not the cause. Someone answered right, so the team's"
        " weekly digest still suggests this change for this job." in said
    )


# The answer form of a finding as laid out: whether its reason box shows all of the reason in it, whether the
# form stays inside its card, and the gaps between its buttons side by side (none when they are on separate
# lines).
FORM_LAYOUT = """
const form = arguments[0], box = form.querySelector('[name=comment]');
const card = form.closest('.card').getBoundingClientRect();
const buttons = [...form.querySelectorAll('button')].map(b => b.getBoundingClientRect());
const gaps = buttons.slice(1).map((b, i) => [b, buttons[i]])
  .filter(([b, a]) => Math.abs(b.top - a.top) < 4).map(([b, a]) => Math.round(b.left - a.right));
return {
  reasonWhole: box.scrollWidth <= box.clientWidth && box.scrollHeight <= box.clientHeight + 1,
  boxWidth: Math.round(box.getBoundingClientRect().width),
  inCard: [...form.querySelectorAll('input, textarea, button, label')]
    .every(el => el.getBoundingClientRect().right <= card.right),
  gaps,
};
"""


@pytest.mark.django_db(transaction=True)
def test_an_owners_reason_reads_whole_in_the_answer_form(browser, live_server, member_a, job):  # noqa: F811
    """The answer form's reason box was the browser's default 20 characters wide: a reason given ("we pin
    one GPU on purpose for eval") read "we pin one GPU on purpose", cut, on a laptop as on a phone, and
    its two buttons, unstyled, stood against each other ("Change my answer" "Withdraw"). The box takes
    the width the form has, the reason reads whole, and the buttons stand apart, at 1280 and 390 px."""
    from selenium.webdriver.common.by import By

    from tests.test_accessibility import open_as, violations
    from tests.test_browser import SHOTS, window_width

    reason = "we pin one GPU on purpose for eval, see the runbook"
    Feedback.objects.create(job=job, category=CKPT, user=member_a, verdict="wrong", comment=reason)
    open_as(browser, live_server.url, member_a)
    for width in (1280, 390):
        with window_width(browser, width, mobile=width == 390):
            browser.get(f"{live_server.url}/jobs/{job.pk}/#answer-{CKPT}")
            form = browser.find_element(By.CSS_SELECTOR, f"#finding-{CKPT} form.feedback-form")
            assert form.find_element(By.NAME, "comment").get_attribute("value") == reason
            laid_out = browser.execute_script(FORM_LAYOUT, form)
            browser.save_screenshot(str(SHOTS / f"job-answer-form-{width}.png"))
            assert laid_out["reasonWhole"] and laid_out["inCard"], (width, laid_out)
            assert all(gap >= 8 for gap in laid_out["gaps"]), (width, laid_out)
            assert violations(browser) == [], width
