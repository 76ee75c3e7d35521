"""The API's reference page: Swagger UI over the OpenAPI schema, from our own static files."""

from __future__ import annotations

import pytest
from django.urls import reverse
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from tests.test_browser import body_text, browser  # noqa: F401  (the browser fixture)
from tests.test_dashboard_browser import console_errors


def test_the_reference_page_loads_nothing_from_outside(client):
    """A script writer had the schema as raw YAML only. The page loads Swagger UI from /static/
    (no CDN: the machines here, and many fleets, reach no internet) and its start-up script from
    our own address, so the strict script-src 'self' needs no exception."""
    page = client.get(reverse("api-docs"))
    assert page.status_code == 200
    html = page.content.decode()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in html
    assert "cdn." not in html and "https://" not in html
    # Directives by name: their order in the header is not fixed (another test's settings change it).
    directives = {d.split()[0]: d.split()[1:] for d in page["Content-Security-Policy"].split(";") if d.strip()}
    assert directives["script-src"] == ["'self'"]
    assert client.get(reverse("api-docs"), {"script": ""})["Content-Type"].startswith("application/javascript")


@pytest.mark.django_db(transaction=True)
def test_the_reference_page_lists_every_endpoint_in_a_browser(browser, live_server):  # noqa: F811
    browser.get(live_server.url + reverse("api-docs"))
    WebDriverWait(browser, 20).until(lambda d: "/api/v1/archives/" in body_text(d))
    paths = {element.text for element in browser.find_elements(By.CSS_SELECTOR, ".opblock-summary-path")}
    assert {"/api/v1/archives/", "/api/v1/ingest-runs/{id}/", "/api/v1/jobs/", "/api/v1/teams/"} <= paths
    assert "Authorize" in body_text(browser)  # the machine-token scheme, to try calls with
    assert not console_errors(browser)  # a CSP refusal of its script would show here
