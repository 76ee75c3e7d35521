"""A labeling study run end to end in headless Chromium with two rater personas: create, label with
the keyboard (save and next), submit, see agreement, adjudicate, freeze gold, read the rules' table."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group

from fleet.access import RESEARCHERS_GROUP
from tests.factories import ClusterFactory, JobFactory, UserFactory
from tests.test_accessibility import open_as
from tests.test_browser import SHOTS, STALE, body_text, browser, window_width  # noqa: F401  (the shared Chromium fixture)
from triage.labeling import services
from triage.models import Finding, JobTriage, RuleSet, TriageStatus
from triage.taxonomy import Category

PASSWORD = "correct horse battery staple"


def login(driver, base, username):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.wait import WebDriverWait

    driver.delete_all_cookies()
    driver.get(f"{base}/login/")
    driver.find_element(By.ID, "id_username").send_keys(username)
    driver.find_element(By.ID, "id_password").send_keys(PASSWORD)
    driver.find_element(By.CSS_SELECTOR, "button[type=submit].primary").click()
    WebDriverWait(driver, 10, ignored_exceptions=STALE).until(lambda b: "/login/" not in b.current_url)


def label_all(driver, keys_per_job):
    """On the labeling page: tick options by shortcut key, type a rationale, press s to save and go on."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.wait import WebDriverWait

    for number, keys in enumerate(keys_per_job, start=1):
        WebDriverWait(driver, 10, ignored_exceptions=STALE).until(lambda b: b.find_elements(By.ID, "label-form"))
        page = driver.current_url
        body = driver.find_element(By.TAG_NAME, "body")
        for key in keys:
            body.send_keys(key)
        first = driver.find_element(By.CSS_SELECTOR, "input[name=option]:checked")
        rationale = driver.find_element(By.ID, f"rationale-{first.get_attribute('value')}")
        assert rationale.is_displayed()
        rationale.send_keys("seen in the timeline")
        rationale.send_keys(Keys.ESCAPE)
        if number == 1:
            SHOTS.mkdir(exist_ok=True)
            driver.save_screenshot(str(SHOTS / "labeling.png"))
        driver.find_element(By.TAG_NAME, "body").send_keys("s")
        WebDriverWait(driver, 10, ignored_exceptions=STALE).until(lambda b, page=page: b.current_url != page)


@pytest.mark.django_db(transaction=True)
def test_two_raters_run_a_study_end_to_end_in_the_browser(browser, live_server, team_a):  # noqa: F811
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.wait import WebDriverWait

    group = Group.objects.get_or_create(name=RESEARCHERS_GROUP)[0]
    lead, second = UserFactory(username="rita-researcher"), UserFactory(username="ravi-rater")
    for user in (lead, second):
        user.groups.add(group)
    cluster = ClusterFactory(name="c1")
    jobs = [JobFactory(cluster=cluster, team=team_a, name=f"bert-{i}", mean_gpu_util=20.0 + i) for i in range(3)]
    rule_set = RuleSet.current()
    for job in jobs:
        result = JobTriage.objects.create(job=job, rule_set=rule_set, status=TriageStatus.CLASSIFIED)
        Finding.objects.create(
            result=result, job=job, rule_set=rule_set, category=Category.IMPROPER_BATCH_SIZE,
            confidence=0.9, summary="small batch", gpu_hours=1.0,
        )  # fmt: skip
    base = live_server.url

    # The lead creates the study.
    login(browser, base, "rita-researcher")
    browser.get(f"{base}/studies/new/")
    browser.find_element(By.ID, "id_name").send_keys("Browser pilot")
    browser.find_element(By.ID, "id_sample_size").send_keys("3")
    for box in browser.find_elements(By.CSS_SELECTOR, "input[name=raters]"):
        box.click()
    browser.find_element(By.CSS_SELECTOR, "form.study-form button.primary").click()
    WebDriverWait(browser, 10, ignored_exceptions=STALE).until(lambda b: b.find_elements(By.ID, "start-labeling"))
    assert "Study created with 3 jobs" in browser.find_element(By.TAG_NAME, "body").text

    # Key 5 is "improper batch size"; 6 "model checkpointing"; n "none of these".
    browser.find_element(By.ID, "start-labeling").click()
    assert "0 of 3 labelled" in browser.find_element(By.ID, "progress-text").text
    assert "small batch" not in browser.find_element(By.TAG_NAME, "body").text  # blind
    label_all(browser, [["5"], ["5"], ["n"]])
    WebDriverWait(browser, 10, ignored_exceptions=STALE).until(lambda b: b.find_elements(By.ID, "submit-labels"))
    assert "3 of 3 jobs labelled" in browser.find_element(By.TAG_NAME, "body").text
    browser.find_element(By.ID, "submit-labels").click()
    browser.switch_to.alert.accept()  # "They are final: ..."
    WebDriverWait(browser, 10, ignored_exceptions=STALE).until(lambda b: "Submitted" in body_text(b))

    # The second rater sees no one's labels until they submit; then labels differently on job 2.
    login(browser, base, "ravi-rater")
    browser.get(f"{base}/studies/")
    browser.find_element(By.LINK_TEXT, "Browser pilot").click()
    assert "Agreement and disagreements" not in browser.find_element(By.TAG_NAME, "body").text
    browser.find_element(By.ID, "start-labeling").click()
    label_all(browser, [["5"], ["6"], ["n"]])
    WebDriverWait(browser, 10, ignored_exceptions=STALE).until(lambda b: b.find_elements(By.ID, "submit-labels"))
    browser.find_element(By.ID, "submit-labels").click()
    browser.switch_to.alert.accept()
    WebDriverWait(browser, 10, ignored_exceptions=STALE).until(lambda b: "Agreement and disagreements" in body_text(b))

    # The lead reads the agreement, adjudicates the one disagreement and freezes gold v1.
    login(browser, base, "rita-researcher")
    browser.get(f"{base}/studies/")
    browser.find_element(By.LINK_TEXT, "Browser pilot").click()
    browser.find_element(By.LINK_TEXT, "Agreement and disagreements").click()
    assert "66.7 %" in browser.find_element(By.ID, "exact-agreement").text
    assert len(browser.find_elements(By.CSS_SELECTOR, "#disagreements tbody tr")) == 1
    SHOTS.mkdir(exist_ok=True)
    browser.save_screenshot(str(SHOTS / "labeling-agreement.png"))
    browser.find_element(By.LINK_TEXT, "adjudicate").click()
    browser.find_element(By.ID, "opt-model_checkpointing").click()
    browser.find_element(By.ID, "id_note").send_keys("Idle gaps line up with the checkpoint saves.")
    browser.find_element(By.CSS_SELECTOR, "#label-form button.primary").click()
    WebDriverWait(browser, 10, ignored_exceptions=STALE).until(lambda b: "Gold labels set" in body_text(b))
    browser.find_element(By.LINK_TEXT, "Gold sets →").click()
    browser.find_element(By.ID, "freeze").click()
    WebDriverWait(browser, 10, ignored_exceptions=STALE).until(
        lambda b: "Gold set v1 frozen with 3 jobs" in body_text(b)
    )

    # The rules measured against gold: batch size found on all 3 jobs, gold has it on 1.
    browser.find_element(By.PARTIAL_LINK_TEXT, "Rules against this gold set").click()
    row = browser.find_element(By.CSS_SELECTOR, "#quality tr[data-category=improper_batch_size]").text
    assert row.split()[-8:] == ["1", "3", "1", "2", "0", "0.33", "1.00", "0.50"]
    browser.save_screenshot(str(SHOTS / "labeling-rules.png"))


@pytest.fixture
def submitted_study(team_a):
    """A study of three jobs whose two raters have both submitted: they agree on jobs 2 and 3 and
    disagree on job 1 (batch size against checkpointing)."""
    group = Group.objects.get_or_create(name=RESEARCHERS_GROUP)[0]
    lead, second = UserFactory(username="rita-researcher"), UserFactory(username="ravi-rater")
    for user in (lead, second):
        user.groups.add(group)
    cluster = ClusterFactory(name="c1")
    for i in range(3):
        JobFactory(cluster=cluster, team=team_a, name=f"bert-{i}", mean_gpu_util=20.0 + i)
    study = services.create_study(name="Keys pilot", lead=lead, raters=[lead, second], sample_size=3, seed=5)
    for rater in (lead, second):
        for assignment in services.assignments_of(study, rater):
            first_job = assignment.item.position == 1
            option = Category.MODEL_CHECKPOINTING if first_job and rater == second else Category.IMPROPER_BATCH_SIZE
            services.save_answer(assignment, {option.value: "seen in the timeline"})
        services.submit(study, rater)
    return study, lead, second


def colours(driver, element_id):
    """The element's computed text colour and background colour."""
    return driver.execute_script(
        "const s = getComputedStyle(document.getElementById(arguments[0])); return [s.color, s.backgroundColor];",
        element_id,
    )


@pytest.mark.django_db(transaction=True)
def test_the_freeze_button_is_readable(browser, live_server, submitted_study):  # noqa: F811
    from selenium.webdriver.common.by import By

    study, lead, second = submitted_study
    services.adjudicate(study.items.get(position=1), [Category.MODEL_CHECKPOINTING.value], "the saves", lead)
    open_as(browser, live_server.url, lead)
    browser.get(f"{live_server.url}/studies/{study.pk}/gold/")
    button = browser.find_element(By.ID, "freeze")
    assert button.is_enabled() and button.text == "Freeze gold v1"
    text, background = colours(browser, "freeze")
    SHOTS.mkdir(exist_ok=True)
    browser.save_screenshot(str(SHOTS / "labeling-gold.png"))
    assert text != background, f"the button's text is {text} on {background}"
    assert background == "rgb(47, 95, 208)"  # the accent of every primary button, not the picker's white
    # A rater who is not the lead has no button, and is told why.
    open_as(browser, live_server.url, second)
    browser.get(f"{live_server.url}/studies/{study.pk}/gold/")
    assert "Only the study's lead, rita-researcher" in browser.find_element(By.ID, "freeze-who").text
    browser.save_screenshot(str(SHOTS / "labeling-gold-rater.png"))


@pytest.mark.django_db(transaction=True)
def test_the_adjudication_page_ticks_options_by_their_keys(browser, live_server, submitted_study):  # noqa: F811
    from selenium.webdriver.common.by import By

    study, lead, _ = submitted_study
    item = study.items.get(position=1)
    open_as(browser, live_server.url, lead)
    browser.get(f"{live_server.url}/studies/{study.pk}/adjudicate/{item.pk}/")
    body = browser.find_element(By.TAG_NAME, "body")
    body.send_keys("5")
    body.send_keys("6")
    checked = [b.get_attribute("value") for b in browser.find_elements(By.CSS_SELECTOR, "input[name=option]:checked")]
    assert sorted(checked) == sorted([Category.IMPROPER_BATCH_SIZE.value, Category.MODEL_CHECKPOINTING.value])
    SHOTS.mkdir(exist_ok=True)
    browser.save_screenshot(str(SHOTS / "labeling-adjudicate.png"))
    body.send_keys("n")  # "none of these" excludes the rest, as on the labeling page
    checked = [b.get_attribute("value") for b in browser.find_elements(By.CSS_SELECTOR, "input[name=option]:checked")]
    assert checked == ["none"]


@pytest.mark.django_db(transaction=True)
def test_ctrl_enter_in_the_adjudication_note_saves_the_gold_labels(browser, live_server, submitted_study):  # noqa: F811
    """Ctrl+Enter saves on the labeling page; in the adjudication page's note, where a lead types last,
    it did nothing (the key looked for the labeling page's Save and next), and Enter there starts a new
    line: the lead had to Tab on to the button."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.wait import WebDriverWait

    study, lead, _ = submitted_study
    item = study.items.get(position=1)
    open_as(browser, live_server.url, lead)
    page = f"{live_server.url}/studies/{study.pk}/adjudicate/{item.pk}/"
    browser.get(page)
    browser.find_element(By.TAG_NAME, "body").send_keys("6")
    browser.execute_script("arguments[0].focus()", browser.find_element(By.ID, "id_note"))
    ActionChains(browser).send_keys("gaps line up with the saves").perform()
    ActionChains(browser).key_down(Keys.CONTROL).send_keys(Keys.ENTER).key_up(Keys.CONTROL).perform()
    WebDriverWait(browser, 5, ignored_exceptions=STALE).until(lambda b: b.current_url != page)
    item.adjudication.refresh_from_db()
    assert item.adjudication.options == [Category.MODEL_CHECKPOINTING.value]
    assert item.adjudication.note == "gaps line up with the saves"


# The study page's note beside Submit my labels: its text, where each of its lines starts and its top, with the
# button's left and bottom edges.
SUBMIT_NOTE_LINES = """
const button = document.getElementById('submit-labels'), note = button.nextElementSibling;
const b = button.getBoundingClientRect();
const lines = [...note.getClientRects()];
return {text: note.textContent, lefts: lines.map(r => Math.round(r.left)), top: Math.round(lines[0].top),
        buttonLeft: Math.round(b.left), buttonBottom: Math.round(b.bottom)};
"""


@pytest.mark.django_db(transaction=True)
def test_submitting_labels_asks_first_since_it_is_final(browser, live_server, team_a):  # noqa: F811
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.wait import WebDriverWait

    group = Group.objects.get_or_create(name=RESEARCHERS_GROUP)[0]
    lead, second = UserFactory(username="rita-researcher"), UserFactory(username="ravi-rater")
    for user in (lead, second):
        user.groups.add(group)
    JobFactory(team=team_a, name="bert-0", mean_gpu_util=20.0)
    study = services.create_study(name="Confirm pilot", lead=lead, raters=[lead, second], sample_size=1, seed=5)
    for assignment in services.assignments_of(study, lead):
        services.save_answer(assignment, {"none": ""})
    open_as(browser, live_server.url, lead)
    with window_width(browser, 1280):
        browser.get(f"{live_server.url}/studies/{study.pk}/")
        note = browser.execute_script(SUBMIT_NOTE_LINES)
        browser.save_screenshot(str(SHOTS / "study-submit-1280.png"))
    # The note that the labels are final began beside the button and wrapped under it, at the card's edge: it
    # stands under the button, each of its lines starting at the button's left.
    assert "cannot change them" in note["text"] and note["top"] >= note["buttonBottom"], note
    assert set(note["lefts"]) == {note["buttonLeft"]}, note
    browser.get(f"{live_server.url}/studies/{study.pk}/")
    browser.find_element(By.ID, "submit-labels").click()
    alert = WebDriverWait(browser, 5).until(expected_conditions.alert_is_present())
    assert "cannot change them" in alert.text
    alert.dismiss()  # changed their mind: nothing is submitted
    assert browser.find_element(By.ID, "submit-labels").is_displayed()
    assert services.rater_link(lead, study).submitted_at is None
    browser.find_element(By.ID, "submit-labels").click()
    WebDriverWait(browser, 5).until(expected_conditions.alert_is_present()).accept()
    WebDriverWait(browser, 10, ignored_exceptions=STALE).until(lambda b: "Your labels are submitted" in body_text(b))
    assert services.rater_link(lead, study).submitted_at is not None


@pytest.mark.django_db(transaction=True)
def test_pressing_o_ticks_other_and_puts_the_cursor_in_its_note(browser, live_server, team_a):  # noqa: F811
    from selenium.webdriver.common.by import By

    group = Group.objects.get_or_create(name=RESEARCHERS_GROUP)[0]
    lead, second = UserFactory(username="rita-researcher"), UserFactory(username="ravi-rater")
    for user in (lead, second):
        user.groups.add(group)
    JobFactory(team=team_a, name="bert-0", mean_gpu_util=20.0)
    study = services.create_study(name="Other pilot", lead=lead, raters=[lead, second], sample_size=1, seed=5)
    item = study.items.get()
    open_as(browser, live_server.url, lead)
    browser.get(f"{live_server.url}/studies/{study.pk}/label/{item.pk}/")
    browser.find_element(By.TAG_NAME, "body").send_keys("o")
    assert browser.find_element(By.ID, "opt-other").is_selected()
    note = browser.find_element(By.ID, "other_note")
    assert note.is_displayed()
    assert browser.switch_to.active_element == note  # the note "other" requires: type it at once
    browser.switch_to.active_element.send_keys("a firmware bug")
    assert note.get_attribute("value") == "a firmware bug"
    SHOTS.mkdir(exist_ok=True)
    browser.save_screenshot(str(SHOTS / "labeling-other.png"))


def _one_job_study(team_a, name: str, **job):
    """A study of one job (`job`: its fields besides the defaults) for two new raters; its lead, and the
    job's labeling page's path."""
    lead, second = UserFactory(username="kim-researcher"), UserFactory(username="kai-rater")
    for user in (lead, second):
        user.groups.add(Group.objects.get_or_create(name=RESEARCHERS_GROUP)[0])
    JobFactory(**{"team": team_a, "name": "bert-0", "mean_gpu_util": 20.0} | job)
    study = services.create_study(name=name, lead=lead, raters=[lead, second], sample_size=1, seed=5)
    return lead, f"/studies/{study.pk}/label/{study.items.get().pk}/"


@pytest.mark.django_db(transaction=True)
def test_a_key_that_ticks_an_option_puts_the_focus_on_it_so_tab_goes_to_its_why(browser, live_server, team_a):  # noqa: F811
    """A rater who ticked Model checkpointing with 6 and pressed Tab to type why was sent to "Skip to
    content" at the top of the page: the key left the focus on the page, and the option's "Why?" field
    was some 45 tabs away, past the menu, the timeline's buttons and every log event. The key now puts
    the focus, drawn, on the box it ticked; Tab goes to its Why."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    lead, path = _one_job_study(team_a, "Focus pilot")
    open_as(browser, live_server.url, lead)
    with window_width(browser, 1280, height=800):
        browser.get(live_server.url + path)
        browser.find_element(By.TAG_NAME, "body").send_keys("6")
        box = browser.find_element(By.ID, "opt-model_checkpointing")
        assert box.is_selected()
        assert browser.switch_to.active_element == box
        assert box.value_of_css_property("outline-style") != "none", "the focus is drawn"
        ActionChains(browser).send_keys(Keys.TAB).perform()
        why = browser.find_element(By.ID, "rationale-model_checkpointing")
        assert browser.switch_to.active_element == why
        ActionChains(browser).send_keys("the timeline drops to 0 every 20 minutes").perform()
        assert why.get_attribute("value") == "the timeline drops to 0 every 20 minutes"
        ActionChains(browser).send_keys(Keys.ESCAPE).perform()
        ActionChains(browser).send_keys("8").perform()  # the keys work again, and the next box takes the focus
        assert browser.switch_to.active_element == browser.find_element(By.ID, "opt-host_gpu_transfer")
        SHOTS.mkdir(exist_ok=True)
        browser.save_screenshot(str(SHOTS / "labeling-key-focus.png"))


@pytest.mark.django_db(transaction=True)
def test_at_1280_px_a_few_tabs_reach_the_label_form(browser, live_server, team_a, storage_dir):  # noqa: F811
    """Beside the evidence the form came after all of it in the Tab order: past the menu, the timeline's
    buttons, each log and every log event, some 45 stops on the demo's jobs, on every job. The link to it
    that a phone shows under the progress line is there at 1280 px too, drawn when Tab reaches it (as
    "Skip to content" is); Enter on it, then Tab, is the first option."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    lead, path = _one_job_study(team_a, "Tab pilot")
    open_as(browser, live_server.url, lead)
    with window_width(browser, 1280, height=800):
        browser.get(live_server.url + path)
        browser.find_element(By.ID, "label-form")
        link = browser.find_element(By.CSS_SELECTOR, "a.to-label-form")
        stops = 0
        while browser.switch_to.active_element != link and stops < 20:
            ActionChains(browser).send_keys(Keys.TAB).perform()
            stops += 1
        assert browser.switch_to.active_element == link and stops <= 15, stops
        box = browser.execute_script(BOX, link)
        assert box[2] - box[0] > 50 and 0 <= box[1] < 800, box  # drawn, on the screen
        assert link.value_of_css_property("outline-style") != "none"
        ActionChains(browser).send_keys(Keys.ENTER).perform()
        ActionChains(browser).send_keys(Keys.TAB).perform()
        assert browser.switch_to.active_element == browser.find_element(By.ID, "opt-interactive_job")


@pytest.mark.django_db(transaction=True)
def test_pressing_question_mark_shows_the_shortcuts_in_view(browser, live_server, team_a):  # noqa: F811
    """? opened the list of shortcuts at the foot of the label form's own scrolling box, below its
    bottom edge at 1280x800: nothing on the screen changed, and the rater took the key for broken. The
    form now scrolls the list into view."""
    from selenium.webdriver.common.by import By

    lead, path = _one_job_study(team_a, "Help pilot")
    open_as(browser, live_server.url, lead)
    with window_width(browser, 1280, height=800):
        browser.get(live_server.url + path)
        browser.find_element(By.TAG_NAME, "body").send_keys("?")
        help_text = browser.find_element(By.CSS_SELECTOR, ".shortcuts p")
        assert help_text.is_displayed()
        shown = browser.execute_script(BOX, browser.find_element(By.ID, "label-form"))
        box = browser.execute_script(BOX, help_text)
        assert shown[1] <= box[1] and box[3] <= min(shown[3], 800), (box, shown)


@pytest.mark.django_db(transaction=True)
def test_saving_other_without_its_note_puts_the_cursor_in_the_note_with_the_error(browser, live_server, team_a):  # noqa: F811
    """Other ticked, its note left empty, and saved: the page came back with the focus on an error at
    the form's top, the note some 17 options below it out of the form's view, and o (the way to the
    note) unticked Other instead. The cursor is now in the note, in view, the error beside it."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.wait import WebDriverWait

    lead, path = _one_job_study(team_a, "Note pilot")
    open_as(browser, live_server.url, lead)
    with window_width(browser, 1280, height=800):
        browser.get(live_server.url + path)
        browser.find_element(By.TAG_NAME, "body").send_keys("o")
        ActionChains(browser).send_keys(Keys.ESCAPE).perform()
        ActionChains(browser).send_keys("s").perform()
        WebDriverWait(browser, 10, ignored_exceptions=STALE).until(
            lambda b: b.find_elements(By.CSS_SELECTOR, "#label-form .error")
        )
        note = browser.find_element(By.ID, "other_note")
        assert browser.switch_to.active_element == note
        error = browser.find_element(By.ID, note.get_attribute("aria-describedby"))
        assert error.text == 'Say what "other" is in its note.'
        shown, box = (browser.execute_script(BOX, e) for e in (browser.find_element(By.ID, "label-form"), note))
        assert shown[1] <= box[1] and box[3] <= min(shown[3], 800), (box, shown)
        assert browser.find_element(By.ID, "opt-other").is_selected()
        ActionChains(browser).send_keys("a firmware bug").perform()
        assert note.get_attribute("value") == "a firmware bug"


@pytest.mark.django_db(transaction=True)
def test_leaving_a_job_with_unsaved_ticks_asks_first_and_save_and_next_says_what_was_saved(
    browser,  # noqa: F811
    live_server,
    team_a,
):
    """] goes on without saving: a rater who ticked and pressed ] instead of s lost the ticks without a
    word. Now it asks; and save and next, which moves on at once, says what it kept."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.wait import WebDriverWait

    group = Group.objects.get_or_create(name=RESEARCHERS_GROUP)[0]
    lead, second = UserFactory(username="rita-researcher"), UserFactory(username="ravi-rater")
    for user in (lead, second):
        user.groups.add(group)
    for i in range(2):
        JobFactory(team=team_a, name=f"bert-{i}", mean_gpu_util=20.0 + i)
    study = services.create_study(name="Unsaved pilot", lead=lead, raters=[lead, second], sample_size=2, seed=5)
    first, following = study.items.order_by("position")
    open_as(browser, live_server.url, lead)
    page = f"{live_server.url}/studies/{study.pk}/label/{first.pk}/"
    browser.get(page)
    body = browser.find_element(By.TAG_NAME, "body")
    body.send_keys("6")  # Model checkpointing
    body.send_keys("]")
    alert = WebDriverWait(browser, 5).until(expected_conditions.alert_is_present())
    assert "not saved" in alert.text
    alert.dismiss()  # stay: the tick is still there
    assert browser.current_url == page and browser.find_element(By.ID, "opt-model_checkpointing").is_selected()
    browser.find_element(By.LINK_TEXT, "Unsaved pilot").click()  # any link away asks too: the study page
    WebDriverWait(browser, 5).until(expected_conditions.alert_is_present()).dismiss()
    assert browser.current_url == page
    body.send_keys("6")  # ticked and unticked again: nothing changed, so ] goes on at once
    body.send_keys("]")
    WebDriverWait(browser, 5, ignored_exceptions=STALE).until(lambda b: f"/label/{following.pk}/" in b.current_url)
    assert not services.assignments_of(study, lead).filter(saved_at__isnull=False).exists()

    browser.get(page)
    body = browser.find_element(By.TAG_NAME, "body")
    body.send_keys("6")
    body.send_keys("s")
    WebDriverWait(browser, 10, ignored_exceptions=STALE).until(lambda b: f"/label/{following.pk}/" in b.current_url)
    said = f"Saved job #1 ({first.job}): Model checkpointing. Change it"
    assert said in body_text(browser)
    browser.find_element(By.LINK_TEXT, "Change it").click()  # the way back to the answer just saved
    WebDriverWait(browser, 5, ignored_exceptions=STALE).until(lambda b: b.current_url == page)
    assert browser.find_element(By.ID, "opt-model_checkpointing").is_selected()


@pytest.mark.django_db(transaction=True)
def test_a_rater_skips_a_job_they_cannot_judge_and_the_agreement_opens_on_its_headline(
    browser,  # noqa: F811
    live_server,
    team_a,
):
    """'I can't judge this one': the rater opens the skip under the form, picks a reason, and is on the
    next job. Once both have submitted, the agreement page opens on the figure to quote, with why it
    has no interval on so few jobs, and keeps the method folded away."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.wait import WebDriverWait

    group = Group.objects.get_or_create(name=RESEARCHERS_GROUP)[0]
    lead, second = UserFactory(username="rita-researcher"), UserFactory(username="ravi-rater")
    for user in (lead, second):
        user.groups.add(group)
    cluster = ClusterFactory(name="c1")
    for i in range(4):
        JobFactory(cluster=cluster, team=team_a, name=f"bert-{i}", mean_gpu_util=20.0 + i)
    study = services.create_study(name="Skip pilot", lead=lead, raters=[lead, second], sample_size=4, seed=5)
    for assignment in services.assignments_of(study, second):
        option = Category.MODEL_CHECKPOINTING if assignment.item.position == 2 else Category.IMPROPER_BATCH_SIZE
        services.save_answer(assignment, {option.value: "seen in the timeline"})
    services.submit(study, second)
    base = live_server.url

    login(browser, base, "rita-researcher")
    browser.get(f"{base}/studies/{study.pk}/label/")
    WebDriverWait(browser, 10, ignored_exceptions=STALE).until(lambda b: b.find_elements(By.ID, "label-form"))
    first_page = browser.current_url
    assert not browser.find_element(By.ID, "skip-job").is_displayed()  # folded until asked for
    browser.find_element(By.CSS_SELECTOR, "details.skip-job summary").click()
    browser.find_element(By.ID, "skip-not_enough_evidence").click()
    browser.find_element(By.ID, "skip_note").send_keys("no samples after the first minute")
    SHOTS.mkdir(exist_ok=True)
    browser.save_screenshot(str(SHOTS / "labeling-skip.png"))
    # Enter in the note skips: the form's first button, which Enter would press, is "Save and next".
    browser.find_element(By.ID, "skip_note").send_keys(Keys.ENTER)
    WebDriverWait(browser, 10, ignored_exceptions=STALE).until(lambda b: b.current_url != first_page)
    said = body_text(browser)
    assert "Skipped job #1" in said and "Not enough evidence to judge (no samples after the first minute)" in said
    assert "1 of 4 labelled or skipped (1 skipped)" in browser.find_element(By.ID, "progress-text").text
    label_all(browser, [["5"], ["5"], ["5"]])
    WebDriverWait(browser, 10, ignored_exceptions=STALE).until(lambda b: b.find_elements(By.ID, "submit-labels"))
    skips = browser.find_element(By.ID, "skipped-jobs")
    assert "no samples after the first minute" in skips.text
    browser.execute_script("arguments[0].scrollIntoView()", skips)
    browser.save_screenshot(str(SHOTS / "labeling-study-skips.png"))
    browser.find_element(By.ID, "submit-labels").click()
    browser.switch_to.alert.accept()
    WebDriverWait(browser, 10, ignored_exceptions=STALE).until(lambda b: "Agreement and disagreements" in body_text(b))

    browser.find_element(By.LINK_TEXT, "Agreement and disagreements").click()
    headline = browser.find_element(By.ID, "headline")
    assert headline.location["y"] + headline.size["height"] < browser.execute_script("return window.innerHeight")
    assert "Cohen's kappa" in headline.text
    assert "3 jobs: too few jobs for an interval (n=3; at least 5 needed)" in headline.text
    assert browser.find_element(By.ID, "skipped-count").text == "1"
    method = browser.find_element(By.ID, "how-computed")
    assert method.get_attribute("open") is None and "Brackets" not in method.text  # folded: secondary
    browser.save_screenshot(str(SHOTS / "labeling-agreement-headline.png"))
    method.find_element(By.TAG_NAME, "summary").click()
    assert "Brackets: 95 % bootstrap interval" in method.text


@pytest.mark.django_db(transaction=True)
def test_on_a_phone_a_long_log_line_does_not_widen_the_labeling_page(browser, live_server, team_a, storage_dir):  # noqa: F811
    """390 px wide, a job whose log has a long line (NCCL's, a traceback's) laid the labeling page out
    1,980 px wide: the job's facts, the timeline and the label form ran off to the right, and the page
    scrolled sideways. The log scrolls inside its own box; the page and the form fit the phone."""
    from tests.conftest import store_artifact
    from tests.test_accessibility import narrow_window_problems
    from tests.test_browser import window_width

    lead, second = UserFactory(username="rita-researcher"), UserFactory(username="ravi-rater")
    for user in (lead, second):
        user.groups.add(Group.objects.get_or_create(name=RESEARCHERS_GROUP)[0])
    job = JobFactory(team=team_a, name="bert-0", mean_gpu_util=20.0)
    line = "[rank7]:beta-n076:46919:46919 [1] NCCL INFO NET/IB : Using " + "[0]mlx5_0:1/IB " * 40
    store_artifact(job, "log", "logs/stdout.log", (line + "\n").encode() * 5)
    study = services.create_study(name="Phone pilot", lead=lead, raters=[lead, second], sample_size=1, seed=5)
    open_as(browser, live_server.url, lead)
    with window_width(browser, 390, mobile=True):
        browser.get(f"{live_server.url}/studies/{study.pk}/label/")
        laid_out = browser.execute_script(
            """const right = selector => Math.round(document.querySelector(selector).getBoundingClientRect().right);
               return {page: document.documentElement.scrollWidth, window: innerWidth,
                       form: right('#label-form'), log: right('pre.viewer'),
                       logScrolls: document.querySelector('pre.viewer').scrollWidth > 390};"""
        )
        reflow = narrow_window_problems(browser)
    assert laid_out["page"] <= laid_out["window"], laid_out
    assert laid_out["form"] <= laid_out["window"] and laid_out["log"] <= laid_out["window"], laid_out
    assert laid_out["logScrolls"], laid_out  # the line is whole, in its own box
    assert reflow == [], reflow


BOX = "const r = arguments[0].getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom];"
TEXT_BOX = (
    "const r = document.createRange(); r.selectNodeContents(arguments[0]); const b = r.getBoundingClientRect();"
    " return [b.left, b.top, b.right, b.bottom];"
)


# Each line's top where the words of an element are drawn (a range over its text: one rect per line box).
LINE_TOPS = (
    "const r = document.createRange(); r.selectNodeContents(arguments[0]);"
    " return [...r.getClientRects()].filter(b => b.width > 0).map(b => Math.round(b.top));"
)


@pytest.mark.django_db(transaction=True)
def test_on_a_phone_the_job_number_keeps_to_its_progress_line(browser, live_server, team_a):  # noqa: F811
    """At 390 px the labeling page's progress line wrapped before "job #1", which stood alone on a line
    of its own: it stays beside the words before it ("0 of 1 labelled · job #1")."""
    from selenium.webdriver.common.by import By

    from tests.test_browser import window_width

    lead, second = UserFactory(username="rita-researcher"), UserFactory(username="ravi-rater")
    for user in (lead, second):
        user.groups.add(Group.objects.get_or_create(name=RESEARCHERS_GROUP)[0])
    JobFactory(team=team_a, name="bert-0", mean_gpu_util=20.0)
    study = services.create_study(name="Phone pilot", lead=lead, raters=[lead, second], sample_size=1, seed=5)
    open_as(browser, live_server.url, lead)
    for width in (1280, 390):
        with window_width(browser, width, mobile=width == 390):
            browser.get(f"{live_server.url}/studies/{study.pk}/label/")
            line = browser.find_element(By.CSS_SELECTOR, ".label-progress")
            assert "job #1" in line.text.replace("\xa0", " "), line.text
            words = browser.execute_script(LINE_TOPS, browser.find_element(By.ID, "progress-text"))
            number = browser.execute_script(LINE_TOPS, browser.find_element(By.ID, "progress-job"))
            assert len(number) == 1 and number[0] == words[-1], (width, words, number)
            # The words on one line, beside the bar or (on a phone) whole under it, and clear of the Job card
            # under them: at 390 px "0 of 1" sat beside the bar, "labelled · job #1" under it against the card.
            assert len(set(words)) == 1, (width, words)
            bar = browser.execute_script(BOX, browser.find_element(By.ID, "label-progress"))
            text = browser.execute_script(TEXT_BOX, browser.find_element(By.ID, "progress-text"))
            card = browser.execute_script(BOX, browser.find_element(By.CSS_SELECTOR, ".label-layout .card"))
            if width == 390:
                assert text[1] >= bar[3] and text[0] <= bar[0] + 1, (bar, text)  # under the bar, at its left
            assert card[1] - max(text[3], bar[3]) >= 12, (width, text, bar, card)


# Where the words of each cell of the first row start (a range over the cell's last child: its value).
VALUE_LEFTS = """
return [...document.querySelectorAll('table.data tbody tr:first-child td')].map(td => {
  const r = document.createRange(); r.selectNodeContents(td.lastElementChild);
  return Math.round(r.getClientRects()[0].left); });
"""


@pytest.mark.django_db(transaction=True)
def test_the_study_list_reads_whole_at_1280_px_and_on_a_phone(browser, live_server, team_a):  # noqa: F811
    """At 390 px the studies table scrolled sideways in its box: the study's name wrapped over five
    lines and "My progress" was off to the right. On a phone each study is a card of its fields, each
    beside its column's name (the deliveries' and prices' table.stacks), all in view; at 1280 px it is
    a table with its headers, as before."""
    from selenium.webdriver.common.by import By

    from tests.test_accessibility import table_layouts

    lead, second = UserFactory(username="rita-researcher"), UserFactory(username="ravi-rater")
    for user in (lead, second):
        user.groups.add(Group.objects.get_or_create(name=RESEARCHERS_GROUP)[0])
    for number in range(3):
        JobFactory(team=team_a, name=f"bert-{number}", mean_gpu_util=20.0)
    name = "Demo: why do low-utilization GPUs idle?"
    services.create_study(name=name, lead=lead, raters=[lead, second], sample_size=3, seed=5)
    open_as(browser, live_server.url, lead)

    def measure(driver) -> dict:
        return {
            "nameLines": len(driver.execute_script(LINE_TOPS, driver.find_element(By.LINK_TEXT, name))),
            "progress": driver.find_element(By.CSS_SELECTOR, "td.num").text,
            "valueLefts": driver.execute_script(VALUE_LEFTS),
        }

    wide, phone = table_layouts(browser, f"{live_server.url}/studies/", "study-list", measure)
    for layout in (wide, phone):
        assert not layout["scrolls"] and layout["cellsOut"] == [], layout
        assert "0 / 3" in layout["progress"], layout
    assert wide["headersShown"] and wide["headersOut"] == [] and wide["nameLines"] == 1, wide
    assert {label for label, _column in wide["labels"]} == {None}, wide
    assert not phone["headersShown"], phone
    assert [label for label, _column in phone["labels"]] == [column for _label, column in phone["labels"]], phone
    assert phone["nameLines"] <= 2, phone
    assert len(set(phone["valueLefts"])) == 1, f"a card's values do not line up: {phone['valueLefts']}"
    assert phone["violations"] == [] and phone["reflow"] == [], phone


# Each figure of the agreement page's per-category kappa column (its first words, before the note on why it
# has no interval) and whether it lies inside the table's box, as the page opens (unscrolled).
KAPPAS_IN_VIEW = """
const box = document.querySelector('#per-category').closest('.table-scroll'), inside = box.getBoundingClientRect();
return [...document.querySelectorAll('#per-category tbody tr')].map(row => {
  const figure = row.cells[1].lastElementChild.firstChild, range = document.createRange();  // after its card's label
  range.selectNodeContents(figure);
  const shown = range.getBoundingClientRect().right <= inside.right + 1;
  return [row.cells[0].lastElementChild.textContent.trim(), figure.textContent.trim(), shown];
});
"""


@pytest.mark.django_db(transaction=True)
def test_on_a_phone_the_agreement_pages_kappas_are_in_view(browser, live_server, submitted_study):  # noqa: F811
    """390 px wide, the per-category table's kappa column was as wide as its longest note, "(too few positive
    labels for an interval)" on one line: every kappa, right-aligned, was off to the right of the box, and the
    column showed the start of a note. On a phone the note wraps under its figure, and the figures are in view."""
    from tests.test_browser import window_width

    study, lead, _ = submitted_study
    open_as(browser, live_server.url, lead)
    with window_width(browser, 390, mobile=True):
        browser.get(f"{live_server.url}/studies/{study.pk}/agreement/")
        kappas = browser.execute_script(KAPPAS_IN_VIEW)
        browser.save_screenshot(str(SHOTS / "labeling-agreement-phone.png"))
    assert len(kappas) == 17 and any(figure[:1].isdigit() for _option, figure, _shown in kappas), kappas
    assert [option for option, _figure, shown in kappas if not shown] == [], kappas


# The per-category table's figures: for each pair of raters, whether its kappas lie inside the table's box
# as the page opens (unscrolled), and whether the table scrolls sideways in its box.
PAIRS_IN_VIEW = """
const table = document.querySelector('#per-category'), box = table.closest('.table-scroll');
const inside = box.getBoundingClientRect();
const heads = [...table.tHead.rows[0].cells];
const pairs = heads.map((th, column) => [th.textContent.trim(), column]).filter(([text]) => text.endsWith('kappa'));
return {
  scrolls: box.scrollWidth > box.clientWidth,
  hidden: pairs.filter(([, column]) => [...table.tBodies[0].rows].some(row => {
    const range = document.createRange();
    range.selectNodeContents(row.cells[column].lastElementChild.firstChild);  // the figure, after its card's label
    return range.getBoundingClientRect().right > inside.right + 1;
  })).map(([text]) => text),
};
"""


@pytest.mark.django_db(transaction=True)
def test_at_1280_px_the_agreement_page_shows_every_pair_of_three_raters(browser, live_server, team_a):  # noqa: F811
    """With three raters (the demo's study: two demo raters and the researcher) the per-category table has
    three pairs, and at 1280 px it scrolled sideways with the third pair's kappas cut at the box's edge: each
    kappa column was as wide as "(too few positive labels for an interval)" on one line. The note wraps under
    its figure at every width, as it did on a phone, and the three pairs are in view."""
    from tests.conftest import rate_study
    from tests.test_accessibility import violations
    from tests.test_browser import window_width

    options = [Category.IMPROPER_BATCH_SIZE, Category.MODEL_CHECKPOINTING, Category.HOST_GPU_TRANSFER]
    study = rate_study(team_a, jobs=6, name="Three", skip_note=None, answer=lambda n, at: options[(at + n) % 3])
    open_as(browser, live_server.url, study.created_by)  # its lead, researcher
    with window_width(browser, 1280):
        browser.get(f"{live_server.url}/studies/{study.pk}/agreement/")
        seen = browser.execute_script(PAIRS_IN_VIEW)
        browser.save_screenshot(str(SHOTS / "labeling-agreement-three-raters.png"))
        assert violations(browser) == []
    assert seen == {"scrolls": False, "hidden": []}, seen


@pytest.mark.django_db(transaction=True)
def test_on_a_phone_the_labeling_form_is_a_tap_away(browser, live_server, team_a, storage_dir):  # noqa: F811
    """Below 1,000 px the labeling page is one column, the form under the whole of the evidence: on a phone a
    rater scrolled past the job's facts, the timeline, its logs and every log event (4,000 px and more in
    the demo) to reach the boxes to tick, on every job. A link under the progress line, on the first screen,
    goes to the form; at 1280 px, where the form is beside the evidence, it is drawn only when Tab reaches it.
    On a touch screen (no mouse to hover, a finger to point) the keys' hints (an option's 1, Save and next's s,
    the pager's [ and ], the list of shortcuts) meant nothing and took room: they are hidden there, shown at
    1280 px with a mouse."""
    from selenium.webdriver.common.by import By

    from tests.conftest import store_artifact
    from tests.test_accessibility import violations
    from tests.test_browser import window_width

    lead, second = UserFactory(username="rita-researcher"), UserFactory(username="ravi-rater")
    for user in (lead, second):
        user.groups.add(Group.objects.get_or_create(name=RESEARCHERS_GROUP)[0])
    job = JobFactory(team=team_a, name="bert-0", mean_gpu_util=20.0)
    store_artifact(job, "log", "logs/stdout.log", b"".join(b"epoch %d loss 0.5\n" % n for n in range(200)))
    study = services.create_study(name="Phone pilot", lead=lead, raters=[lead, second], sample_size=1, seed=5)
    open_as(browser, live_server.url, lead)
    shown = "return [...document.querySelectorAll('a[href=\"#label-form\"]')].filter(a => a.checkVisibility())"
    top = "return Math.round(arguments[0].getBoundingClientRect().top)"
    key_hints = "return [...document.querySelectorAll('kbd, .shortcuts')].filter(e => e.checkVisibility()).length"
    with window_width(browser, 390, mobile=True):
        browser.execute_cdp_cmd("Emulation.setTouchEmulationEnabled", {"enabled": True, "maxTouchPoints": 5})
        try:
            browser.get(f"{live_server.url}/studies/{study.pk}/label/")
            assert browser.execute_script("return matchMedia('(pointer: coarse)').matches")
            assert browser.execute_script(key_hints) == 0, "no keys to press on a touch screen"
        finally:
            browser.execute_cdp_cmd("Emulation.setTouchEmulationEnabled", {"enabled": False})
        browser.get(f"{live_server.url}/studies/{study.pk}/label/")
        heading = browser.find_element(By.CSS_SELECTOR, "#label-form h2")
        assert browser.execute_script(top, heading) > 900, "the form starts below the first screen"
        links = browser.execute_script(shown)
        assert len(links) == 1, "one link to the form"
        assert 0 <= browser.execute_script(top, links[0]) < 900 - 40, "the link is on the first screen"
        assert violations(browser) == []
        links[0].click()
        assert 0 <= browser.execute_script(top, heading) < 200, "the form's heading is at the top of the screen"
        browser.save_screenshot(str(SHOTS / "labeling-phone-form.png"))
    with window_width(browser, 1280):
        browser.get(f"{live_server.url}/studies/{study.pk}/label/")
        undrawn = "return [...document.querySelectorAll('a[href=\"#label-form\"]')].every(a => a.offsetWidth <= 1)"
        assert browser.execute_script(undrawn), "beside the evidence the link is drawn only when Tab reaches it"
        assert browser.execute_script(key_hints) > 10, "a keyboard's hints beside the options and the buttons"


@pytest.mark.django_db(transaction=True)
def test_on_a_laptop_the_save_buttons_show_without_scrolling_the_label_form(browser, live_server, team_a):  # noqa: F811
    """At 1280x800 the label form (its own scrolling box, beside the evidence) held its 16 options, their
    notes and then the buttons: Save and next sat below the box's bottom edge until the rater scrolled the
    form itself. The buttons stay at the foot of the form's box, in view, and the options scroll behind them."""
    from selenium.webdriver.common.by import By

    lead, second = UserFactory(username="lara-researcher"), UserFactory(username="leo-rater")
    for user in (lead, second):
        user.groups.add(Group.objects.get_or_create(name=RESEARCHERS_GROUP)[0])
    JobFactory(team=team_a, name="bert-0", mean_gpu_util=20.0)
    study = services.create_study(name="Laptop pilot", lead=lead, raters=[lead, second], sample_size=1, seed=5)
    open_as(browser, live_server.url, lead)
    metrics = {"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": False}
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
    try:
        browser.get(f"{live_server.url}/studies/{study.pk}/label/")
        form = browser.find_element(By.ID, "label-form")
        for scrolled in (0, 10_000):  # at the top of the form's options, and at their end
            browser.execute_script("arguments[0].scrollTop = arguments[1]", form, scrolled)
            for button in form.find_elements(By.CSS_SELECTOR, ".actions button"):
                box, shown = browser.execute_script(BOX, button), browser.execute_script(BOX, form)
                assert shown[1] <= box[1] and box[3] <= min(shown[3], 800), (button.text, box, shown, scrolled)
                hit = browser.execute_script(
                    "const r = arguments[0].getBoundingClientRect();"
                    " const [x, y] = [r.left + r.width / 2, r.top + r.height / 2];"
                    " return arguments[0].contains(document.elementFromPoint(x, y));",
                    button,
                )
                assert hit, f"{button.text!r} is covered at scroll {scrolled}"
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


@pytest.mark.django_db(transaction=True)
def test_each_options_checkbox_key_and_name_sit_on_one_line_centre(browser, live_server, team_a):  # noqa: F811
    """An option's checkbox sat some 3 px above its name and its key's box some 2 px below: three
    heights in one row, down the whole list of 17. They share one centre line now."""
    from selenium.webdriver.common.by import By

    lead, second = UserFactory(username="lena-researcher"), UserFactory(username="lou-rater")
    for user in (lead, second):
        user.groups.add(Group.objects.get_or_create(name=RESEARCHERS_GROUP)[0])
    JobFactory(team=team_a, name="bert-0", mean_gpu_util=20.0)
    study = services.create_study(name="Row pilot", lead=lead, raters=[lead, second], sample_size=1, seed=5)
    open_as(browser, live_server.url, lead)
    browser.get(f"{live_server.url}/studies/{study.pk}/label/")
    browser.find_element(By.ID, "label-form")
    rows = browser.execute_script(
        """const mid = r => (r.top + r.bottom) / 2;
           return [...document.querySelectorAll('.option label')].map(label => {
             const words = document.createRange();
             words.selectNodeContents(label.lastChild);
             return {name: label.textContent.trim(), box: mid(label.querySelector('input').getBoundingClientRect()),
                     key: mid(label.querySelector('kbd').getBoundingClientRect()),
                     text: mid(words.getBoundingClientRect())};
           });"""
    )
    assert len(rows) == 17
    off = [row for row in rows if max(abs(row["box"] - row["text"]), abs(row["key"] - row["text"])) > 1.5]
    assert not off, off


@pytest.mark.django_db(transaction=True)
def test_a_long_job_id_wraps_on_the_labeling_page_of_a_phone(browser, live_server, team_a):  # noqa: F811
    """An MLflow run's id (32 hex digits, one word) heads its labeling page: at 320 px it made the page
    scroll sideways, the options' column wider than the window. It wraps, as on the job's own page."""
    from tests.test_accessibility import narrow_window_problems

    lead, path = _one_job_study(team_a, "MLflow pilot", external_id="0f3c9a7e2b5d4c1e8f6a9b2c3d4e5f60")
    open_as(browser, live_server.url, lead)
    browser.get(live_server.url + path)
    assert "0f3c9a7e2b5d4c1e8f6a9b2c3d4e5f60" in body_text(browser)
    assert narrow_window_problems(browser) == []


@pytest.mark.django_db(transaction=True)
def test_a_save_from_a_tab_opened_before_another_saved_is_refused_with_the_choice_a_tab_away(
    browser,  # noqa: F811
    live_server,
    team_a,
):
    """The rater had the job open in two tabs and saved in each: the second save replaced the first
    without a word. Now it is refused: the focus is on what is stored now, the rater's ticks and note
    are still in the form, and Tab, then Enter, saves theirs over it knowingly."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.wait import WebDriverWait

    lead, path = _one_job_study(team_a, "Tabs pilot")
    open_as(browser, live_server.url, lead)
    with window_width(browser, 1280, height=800):
        browser.get(live_server.url + path)
        first_tab = browser.current_window_handle
        browser.switch_to.new_window("tab")
        browser.get(live_server.url + path)
        browser.find_element(By.TAG_NAME, "body").send_keys("6")  # Model checkpointing
        ActionChains(browser).send_keys("s").perform()
        WebDriverWait(browser, 10, ignored_exceptions=STALE).until(lambda b: path not in b.current_url)
        browser.close()
        browser.switch_to.window(first_tab)
        browser.find_element(By.TAG_NAME, "body").send_keys("o")  # other: the cursor goes to its note
        ActionChains(browser).send_keys("a firmware bug", Keys.ESCAPE, "5", "s").perform()
        WebDriverWait(browser, 10, ignored_exceptions=STALE).until(lambda b: b.find_elements(By.ID, "answer-changed"))
        box = browser.find_element(By.ID, "answer-changed")
        assert browser.switch_to.active_element == box  # read out, and Tab goes on from it
        assert "Not saved: your answer to this job changed after this page was opened." in box.text
        assert "Model checkpointing" in box.text
        assert browser.find_element(By.ID, "other_note").get_attribute("value") == "a firmware bug"
        assert browser.find_element(By.ID, "opt-improper_batch_size").is_selected()
        form, shown = (browser.execute_script(BOX, e) for e in (browser.find_element(By.ID, "label-form"), box))
        assert form[1] <= shown[1] and shown[3] <= min(form[3], 800), (shown, form)
        SHOTS.mkdir(exist_ok=True)
        browser.save_screenshot(str(SHOTS / "labeling-answer-changed.png"))
        ActionChains(browser).send_keys(Keys.TAB).perform()
        assert browser.switch_to.active_element == browser.find_element(By.ID, "keep-mine")
        ActionChains(browser).send_keys(Keys.ENTER).perform()
        WebDriverWait(browser, 10, ignored_exceptions=STALE).until(lambda b: path not in b.current_url)
    assignment = services.assignments_of(lead.labeling_studies.get(), lead).get()
    assert sorted(assignment.labels.values_list("option", flat=True)) == ["improper_batch_size", "other"]
    assert assignment.other_note == "a firmware bug"


@pytest.mark.django_db(transaction=True)
def test_leaving_a_refused_answer_asks_first_but_taking_the_saved_one_does_not(browser, live_server, team_a):  # noqa: F811
    """A refused save comes back with the rater's answer in the form, unsaved: a link away (or ]) left it
    without asking, as the page had only just opened with it. Now it asks; Take the saved one, the
    rater's own choice to drop theirs, does not."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.wait import WebDriverWait

    lead, path = _one_job_study(team_a, "Leave pilot")
    item = services.assignments_of(lead.labeling_studies.get(), lead).get()
    open_as(browser, live_server.url, lead)
    browser.get(live_server.url + path)
    services.save_answer(item, {"model_checkpointing": "idle every 20 minutes"})  # from another tab
    browser.find_element(By.TAG_NAME, "body").send_keys("5")
    browser.find_element(By.TAG_NAME, "body").send_keys("s")
    WebDriverWait(browser, 10, ignored_exceptions=STALE).until(lambda b: b.find_elements(By.ID, "answer-changed"))
    browser.find_element(By.LINK_TEXT, "Leave pilot").click()
    alert = WebDriverWait(browser, 5).until(expected_conditions.alert_is_present())
    assert "not saved" in alert.text
    alert.dismiss()
    assert browser.find_element(By.ID, "opt-improper_batch_size").is_selected()
    browser.find_element(By.ID, "take-saved").click()
    WebDriverWait(browser, 5, ignored_exceptions=STALE).until(lambda b: not b.find_elements(By.ID, "answer-changed"))
    assert browser.find_element(By.ID, "opt-model_checkpointing").is_selected()
    assert not browser.find_element(By.ID, "opt-improper_batch_size").is_selected()


def _eight_gpu_series():
    """Eight GPUs on two hosts, a sample a minute for an hour: on a phone the timeline's legend takes rows."""
    import pandas as pd

    stamps = pd.date_range("2026-11-02T00:00:00Z", periods=60, freq="1min").as_unit("ms")
    rows = [(t, f"n{gpu // 4}", gpu, 20.0 + gpu) for t in stamps for gpu in range(8)]
    frame = pd.DataFrame(rows, columns=["timestamp", "host", "gpu", "gpu_util"])
    return frame.astype({"gpu": "Int16", "gpu_util": "float32"})


@pytest.mark.django_db(transaction=True)
def test_on_a_phone_a_refused_skip_stays_in_view_when_the_timeline_above_is_drawn(
    browser,  # noqa: F811
    live_server,
    team_a,
    storage_dir,
):
    """On a phone the form is under the evidence. A skip refused (no reason) came back with the focus,
    and the page, on its error; then the timeline above drew, some 400 px taller than the box it had,
    and pushed the error below the screen: the rater saw the form's top and no error."""
    from datetime import UTC, datetime, timedelta

    from django.core.files.base import ContentFile
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.wait import WebDriverWait

    from fleet.models import Job
    from fleet.series import to_parquet_bytes

    start = datetime(2026, 11, 2, tzinfo=UTC)  # the series' hour (JobFactory's start_time is a sequence)
    lead, path = _one_job_study(team_a, "Phone skip pilot", start_time=start, end_time=start + timedelta(hours=1))
    job = Job.objects.get(name="bert-0")
    job.series_file.save("series.parquet", ContentFile(to_parquet_bytes(_eight_gpu_series())))
    open_as(browser, live_server.url, lead)
    with window_width(browser, 390, mobile=True, height=844):
        browser.get(live_server.url + path)
        browser.execute_script("document.querySelector('details.skip-job').open = true")
        browser.execute_script("document.getElementById('skip_note').focus()")
        ActionChains(browser).send_keys("the series stop after an hour", Keys.ENTER).perform()
        WebDriverWait(browser, 10, ignored_exceptions=STALE).until(lambda b: b.find_elements(By.ID, "skip-error"))
        WebDriverWait(browser, 10).until(lambda b: b.find_elements(By.CSS_SELECTOR, "#timeline .legend"))
        error = browser.find_element(By.ID, "skip-error")
        assert browser.switch_to.active_element == error
        in_view = "const r = arguments[0].getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight;"
        WebDriverWait(browser, 5).until(lambda b: b.execute_script(in_view, error))
        assert browser.switch_to.active_element == error
        SHOTS.mkdir(exist_ok=True)
        browser.save_screenshot(str(SHOTS / "labeling-skip-refused-phone.png"))
