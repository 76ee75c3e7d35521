"""Layout faults a user saw in headless Chromium, at a phone's 320 and 390 px and a desktop's 1280 px:

- A study's page: its Skipped jobs table scrolled sideways on a phone (its Reason and In their words cut at the
  box's edge) and its Raters table scrolled inside its third-of-the-width card at 1280 px (the Submitted
  date cut). Each now reads whole, without scrolling sideways, with everything it said.
- The demo study's description broke "demo-rater-1" at its hyphen on a phone ("demo-" / "rater-1").
- Cards in a grid of cards were 32 px apart where the grid had more than one row (one column on a phone: the
  overview's charts, a job's facts and summary, a study's adjudication) and from a labeling page's evidence
  to its form, where every other card is 16 px from the next.
"""

from __future__ import annotations

import pytest

from fleet import ingest
from fleet.models import Job
from tests.conftest import rate_study
from tests.test_accessibility import open_as
from tests.test_browser import browser, window_width  # noqa: F401  (the browser fixture)
from triage.demo.study import DEMO_RATERS, DEMO_STUDY_DESCRIPTION

SKIP_NOTE = "The log stops before the first training step, nothing to go on"


def _study_rated_by_three(team, **options):
    """`rate_study` as the demo's: every rater labels every job, the first rater skipped job #1 with a note.
    (study, its lead)."""
    study = rate_study(team, labels_per_job=3, skip_note=SKIP_NOTE, **options)
    return study, study.created_by


# What scrolls sideways: the page, or a table's box (by its caption), with how far; and the words each of the
# Raters and Skipped jobs cards shows (what is on screen, a phone's card or a table's row).
SIDEWAYS = """
const boxes = [document.documentElement, ...document.querySelectorAll('main .table-scroll')];
const scrolls = boxes.filter(box => box.scrollWidth > box.clientWidth + 1)
  .map(box => [box.querySelector('caption')?.textContent || 'the page', box.scrollWidth - box.clientWidth]);
const shown = [...document.querySelectorAll('main .card')]
  .filter(card => /^(Raters|Skipped jobs)$/.test(card.querySelector('h2').textContent)).map(card => card.innerText);
return {scrolls, shown};
"""


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", [320, 390, 1280])
def test_a_studys_raters_and_skipped_jobs_read_without_scrolling_sideways(browser, live_server, team_a, width):  # noqa: F811
    """At 320 and 390 px the Skipped jobs table (five columns) scrolled sideways, the reason and the rater's
    words out of view; at 1280 px the Raters table, in a third of the width, scrolled by 28 px, the
    Submitted column cut at its edge. Both read whole now, and still say all they said."""
    study, lead = _study_rated_by_three(team_a)
    open_as(browser, live_server.url, lead)
    with window_width(browser, width, mobile=width < 700):
        browser.get(f"{live_server.url}/studies/{study.pk}/")
        seen = browser.execute_script(SIDEWAYS)
    assert seen["scrolls"] == [], seen["scrolls"]
    raters, skipped = seen["shown"]
    skip = study.items.get(position=1)
    submitted = [link.submitted_at.strftime("%Y-%m-%d %H:%M") for link in study.rater_links.all()]
    for words in (*DEMO_RATERS, "researcher", "4 / 4", "(1 skipped)", *submitted):
        assert words in raters, (words, raters)
    for words in (str(skip.job), DEMO_RATERS[0], "Not enough evidence to judge", SKIP_NOTE):
        assert words in skipped, (words, skipped)


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


# Each card of the page (not one inside another card, nor a headline figure of the .kpis row, 12 px apart by
# design) and how far below it the next card in line with it starts (its left edge where this one's is: not
# the next grid's card under an empty cell of a row): [its heading, the gap].
GAPS_UNDER_CARDS = """
const cards = [...document.querySelectorAll('main .card')]
  .filter(card => !card.parentElement.closest('.card, .kpis') && card.checkVisibility())
  .map(card => [(card.querySelector('h2, summary')?.textContent || card.id).trim().slice(0, 40),
                card.getBoundingClientRect()]);
return cards.flatMap(([name, a]) => {
  const below = cards.map(([, b]) => b).filter(b => b.top >= a.bottom - 1 && Math.abs(b.left - a.left) < 1);
  return below.length ? [[name, Math.round(Math.min(...below.map(b => b.top)) - a.bottom)]] : [];
});
"""


@pytest.mark.django_db(transaction=True)
def test_cards_are_16_px_apart_on_every_page_with_a_grid_of_them(browser, live_server, operator, demo_archive):  # noqa: F811
    """A grid's gap and its cards' margins added up: where a grid of cards took more than one row (one column
    on a phone, two of three cards at 900 px) its cards were 32 px apart, the cards after it 16. So were a
    labeling page's last card of evidence and its form, one under the other below 1,000 px."""
    ingest.execute_run(ingest.create_run(demo_archive).pk)  # triage runs in-process on the signal
    team = Job.objects.values_list("team__slug", flat=True).first()
    study, lead = _study_rated_by_three(None, jobs=0, sample_size=4)  # of the demo's jobs
    item = study.items.get(position=2)
    job = item.job
    pages = [
        (operator, "/overview/?from=2026-10-19&to=2026-11-23"),
        (operator, f"/teams/{team}/?from=2026-10-19&to=2026-11-23"),
        (operator, f"/jobs/{job.pk}/"),
        (lead, f"/studies/{study.pk}/"),
        (lead, f"/studies/{study.pk}/label/{item.pk}/"),
        (lead, f"/studies/{study.pk}/adjudicate/{item.pk}/"),
    ]
    uneven = []
    for user, path in pages:
        open_as(browser, live_server.url, user)
        for width in (390, 900, 1280):
            with window_width(browser, width, mobile=width < 700):
                browser.get(f"{live_server.url}{path}")
                gaps = browser.execute_script(GAPS_UNDER_CARDS)
            assert gaps or width > 700, (path, width)  # side by side, a wide page's cards may have none under them
            uneven += [(width, path, name, gap) for name, gap in gaps if gap != 16]
    assert uneven == [], "\n".join(map(str, uneven))
