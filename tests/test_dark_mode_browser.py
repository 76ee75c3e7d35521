"""The pages in a browser set to dark mode (prefers-color-scheme: dark), as Grafana and GitHub follow it:
a dark page, charts drawn on the card's colour rather than white boxes, and text that keeps its contrast.

Screenshots at 1280x800 and 390x844 land in screenshots/dark-*.png for a person to look at.
"""

from __future__ import annotations

import pytest
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.support.wait import WebDriverWait

from fleet import ingest
from tests.test_accessibility import open_as, settled, violations
from tests.test_browser import SHOTS, browser, color_scheme  # noqa: F401  (the shared Chromium fixture)
from triage.models import Finding

# Each chart's paper and the card around it, and the contrast of its tick labels on that card.
CHARTS = """
const rgb = (text) => (text.match(/[\\d.]+/g) || []).map(Number);
const lum = ([r, g, b]) => [r, g, b]
  .map(v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; })
  .reduce((sum, v, i) => sum + v * [0.2126, 0.7152, 0.0722][i], 0);
const ratio = (a, b) => {
  const [x, y] = [lum(rgb(a)), lum(rgb(b))].sort((p, q) => q - p);
  return (x + 0.05) / (y + 0.05);
};
const charts = [...document.querySelectorAll('[data-figure], #timeline')].filter(c => c.querySelector('.main-svg'));
return charts.map(chart => {
  const card = getComputedStyle(chart.closest('.card') || document.body).backgroundColor;
  const paper = chart.querySelector('.main-svg').style.background;
  const ticks = [...chart.querySelectorAll('.xtick text, .ytick text, .legendtext')];
  const worst = Math.min(...ticks.map(t => ratio(getComputedStyle(t).fill, card)));
  return {id: chart.id || chart.dataset.figure, card, paper, worst, ticks: ticks.length};
});
"""

BODY = """
const [r, g, b] = getComputedStyle(document.body).backgroundColor.match(/\\d+/g).map(Number);
return (r + g + b) / 3;
"""


@pytest.mark.django_db(transaction=True)
def test_pages_follow_the_systems_dark_setting(browser, live_server, world, demo_archive, django_user_model):  # noqa: F811
    ingest.execute_run(ingest.create_run(demo_archive).pk)  # triage runs in-process on the signal
    job = Finding.objects.filter(result__is_current=True).select_related("job").first().job
    nina = django_user_model.objects.get(username="nina-rater")
    operator = django_user_model.objects.get(username=world["users"]["operator"].username)
    params = world["params"]
    pages = [
        ("login", "/login/", None),
        # The demo fleet's weeks: the overview's default week ends at the newest job, which in CI is one of the
        # world's (JobFactory's start times follow its sequence, months on after thousands of tests).
        ("dashboard", "/overview/?from=2026-10-19&to=2026-11-23", operator),
        ("job", f"/jobs/{job.pk}/", operator),
        ("labeling", f"/studies/{params['study_other']}/label/{params['item_other']}/", nina),
        # The site's 404 (templates/404.html), not Django's bare one: white, and laid out 980 px wide on a phone.
        ("not found", "/no-such-page/", operator),
    ]
    color_scheme(browser, "dark")
    SHOTS.mkdir(exist_ok=True)
    base, failures = live_server.url, []
    for name, path, user in pages:
        open_as(browser, base, user)
        browser.get(base + path)
        settled(browser)
        for width, height in ((1280, 800), (390, 844)):
            browser.execute_cdp_cmd(
                "Emulation.setDeviceMetricsOverride",
                {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 500},
            )
            settled(browser)
            browser.execute_async_script("const done = arguments[0]; setTimeout(done, 600);")  # charts redraw
            browser.save_screenshot(str(SHOTS / f"dark-{name}-{width}.png"))
            if (wide := browser.execute_script("return document.documentElement.scrollWidth")) > width:
                failures.append(f"{name}: {wide} px wide in a {width} px window (it scrolls sideways)")
            for chart in browser.execute_script("return [...document.querySelectorAll('#timeline .main-svg')]")[:1]:
                browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", chart)
                browser.save_screenshot(str(SHOTS / f"dark-{name}-{width}-timeline.png"))
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
        if (brightness := browser.execute_script(BODY)) > 60:
            failures.append(f"{name}: the page's background is light ({brightness:.0f} of 255)")
        charts = browser.execute_script(CHARTS)
        if name in ("dashboard", "job"):
            assert charts, f"{name} should show a chart"
        for chart in charts:
            if chart["paper"].replace(" ", "") != chart["card"].replace(" ", ""):
                failures.append(f"{name}: chart {chart['id']} is on {chart['paper']!r}, its card {chart['card']}")
            if chart["ticks"] and chart["worst"] < 4.5:
                failures.append(f"{name}: chart {chart['id']}'s labels are {chart['worst']:.1f}:1 on its card")
        if charts:  # the setting changed while the page is open: the charts follow it
            color_scheme(browser, "light")
            try:
                WebDriverWait(browser, 10).until(
                    lambda page: (
                        {chart["paper"].replace(" ", "") for chart in page.execute_script(CHARTS)}
                        == {"rgb(255,255,255)"}
                    )
                )
            except TimeoutException:
                failures.append(f"{name}: the charts stayed dark once the system's setting was light")
            color_scheme(browser, "dark")
            settled(browser)
        browser.execute_script("document.querySelectorAll('details').forEach(d => { d.open = true; })")
        failures += [f"{name}: {line}" for line in violations(browser, ["color-contrast", "link-in-text-block"])]
    assert not failures, "in dark mode:\n" + "\n".join(failures)


# Each trace's bar colour as the page draws it in the dark scheme (FleetTheme), laid over the card at its
# alpha as a screen shows it, and its contrast with the card.
BARS_SEEN = """
const figure = arguments[0];
window.FleetTheme.apply(figure);
const paint = document.createElement('canvas').getContext('2d');  // any CSS colour as #rrggbb or rgba(...)
const rgba = text => {
  paint.fillStyle = text;
  const out = paint.fillStyle;
  if (out[0] === '#') { return [1, 3, 5].map(i => parseInt(out.slice(i, i + 2), 16)).concat([1]); }
  return out.match(/[\\d.]+/g).map(Number);
};
const card = rgba(getComputedStyle(document.documentElement).getPropertyValue('--card').trim());
const lum = ([r, g, b]) => [r, g, b]
  .map(v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; })
  .reduce((sum, v, i) => sum + v * [0.2126, 0.7152, 0.0722][i], 0);
return figure.data.map(trace => {
  const c = rgba(trace.marker.color);
  const seen = [0, 1, 2].map(i => c[i] * c[3] + card[i] * (1 - c[3]));
  const [x, y] = [lum(seen), lum(card)].sort((p, q) => q - p);
  return [trace.name, trace.marker.color, (x + 0.05) / (y + 0.05)];
});
"""


@pytest.mark.django_db(transaction=True)
def test_in_the_dark_scheme_the_papers_bars_stand_out_from_the_card(browser, live_server, operator):  # noqa: F811
    """The causes chart's grey bars (the ICSE '24 study's share, beside the fleet's) are a see-through
    dark grey drawn for a white page. The dark scheme lightened the grey but kept its 25 % alpha, so on the
    dark card it showed at 1.4:1, barely there. Bars stand 3:1 from the card, as the scheme's other colours."""
    from triage.dashboard import figures

    figure = figures.categories_vs_paper([{"category": "api_misuse", "hours": 3.0}])
    open_as(browser, live_server.url, operator)
    color_scheme(browser, "dark")
    browser.get(f"{live_server.url}/overview/")
    seen = browser.execute_script(BARS_SEEN, figure)
    assert len(seen) == 2 and all(ratio >= 3 for _, _, ratio in seen), seen
