"""Layout faults a user saw in headless Chromium, at a phone's 320 and 390 px and a desktop's 1280 px:

- The demo study's description broke "demo-rater-1" at its hyphen on a phone ("demo-" / "rater-1").
"""

from __future__ import annotations

import pytest

from tests.test_accessibility import open_as
from tests.test_browser import browser, window_width  # noqa: F401  (the browser fixture)
from triage.demo.study import DEMO_RATERS, DEMO_STUDY_DESCRIPTION

SKIP_NOTE = "The log stops before the first training step, nothing to go on"


def _study_rated_by_three(team, jobs=None, description: str = ""):
    """A study of four jobs rated by the demo's two raters and `researcher` (its lead), all submitted, the
    first rater having skipped job #1 with a note: (study, lead). On `jobs` (a queryset), or four new ones."""
    from django.contrib.auth.models import Group

    from fleet.access import RESEARCHERS_GROUP
    from tests.factories import ClusterFactory, JobFactory, UserFactory
    from triage.labeling import services
    from triage.labeling.models import Assignment
    from triage.taxonomy import Category

    group = Group.objects.get_or_create(name=RESEARCHERS_GROUP)[0]
    raters = [UserFactory(username=name) for name in (*DEMO_RATERS, "researcher")]
    for user in raters:
        user.groups.add(group)
    if jobs is None:
        cluster = ClusterFactory(name="c1")
        for i in range(4):
            JobFactory(cluster=cluster, team=team, name=f"bert-{i}", mean_gpu_util=20.0 + i)
    study = services.create_study(
        name="Demo",
        description=description,
        lead=raters[2],
        raters=raters,
        sample_size=4,
        seed=5,
        labels_per_job=3,  # every rater labels every job, as in the demo
        low_util_only=False,
    )
    for rater in raters:
        for assignment in services.assignments_of(study, rater):
            if rater == raters[0] and assignment.item.position == 1:
                services.skip_job(assignment, Assignment.SkipReason.NOT_ENOUGH_EVIDENCE, note=SKIP_NOTE)
            else:
                services.save_answer(assignment, {Category.IMPROPER_BATCH_SIZE.value: ""})
        services.submit(study, rater)
    return study, raters[2]


# The words of the paragraph under a page's heading (a study's description) that the browser broke over two
# lines or more.
BROKEN_WORDS = """
const paragraph = document.querySelector('main h1 + p');
const walker = document.createTreeWalker(paragraph, NodeFilter.SHOW_TEXT);
const broken = [];
for (let node = walker.nextNode(); node; node = walker.nextNode()) {
  for (const word of node.textContent.matchAll(/\\S+/g)) {
    const range = document.createRange();
    range.setStart(node, word.index);
    range.setEnd(node, word.index + word[0].length);
    const lines = new Set([...range.getClientRects()].filter(r => r.width).map(r => Math.round(r.top)));
    if (lines.size > 1) broken.push(word[0]);
  }
}
return broken;
"""


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", [320, 390])
def test_on_a_phone_the_demo_studys_description_keeps_its_words_whole(browser, live_server, team_a, width):  # noqa: F811
    """At 320 px the demo study's description broke "demo-rater-1" at its hyphen, "demo-" at a line's end and
    "rater-1" on the next."""
    study, lead = _study_rated_by_three(team_a, description=DEMO_STUDY_DESCRIPTION)
    open_as(browser, live_server.url, lead)
    with window_width(browser, width, mobile=True):
        browser.get(f"{live_server.url}/studies/{study.pk}/")
        assert browser.execute_script(BROKEN_WORDS) == []
