"""A rationale is a few sentences of evidence, not a document: the labeling form caps it (as the job
feedback comment is capped) and refuses a longer one with the rater's whole answer kept on the page."""

from __future__ import annotations

import html
import re

import pytest
from django.contrib.auth.models import Group
from django.urls import reverse

from fleet.access import RESEARCHERS_GROUP
from tests.factories import ClusterFactory, JobFactory, UserFactory
from triage.labeling import services
from triage.labeling.models import RATIONALE_MAX_CHARS, Label
from triage.taxonomy import Category

pytestmark = pytest.mark.django_db

BATCH = Category.IMPROPER_BATCH_SIZE.value
CKPT = Category.MODEL_CHECKPOINTING.value


@pytest.fixture
def item_url(researcher, team_a):
    cluster = ClusterFactory(name="c1")
    for i in range(2):
        JobFactory(cluster=cluster, team=team_a, mean_gpu_util=20.0 + i)
    other = UserFactory(username="ravi-rater")
    other.groups.add(Group.objects.get_or_create(name=RESEARCHERS_GROUP)[0])
    study = services.create_study(name="Pilot", lead=researcher, raters=[researcher, other], sample_size=2, seed=3)
    return reverse("labeling:label", args=[study.pk, study.items.order_by("position").first().pk])


def test_the_rationale_input_says_its_limit(client, researcher, item_url):
    client.force_login(researcher)
    page = client.get(item_url).content.decode()
    assert f'name="rationale-{BATCH}" id="rationale-{BATCH}" maxlength="{RATIONALE_MAX_CHARS}"' in page
    assert f'id="other_note" maxlength="{RATIONALE_MAX_CHARS}"' in page


def test_a_too_long_rationale_is_refused_with_everything_entered_kept(client, researcher, item_url):
    client.force_login(researcher)
    too_long = "x" * 100_000
    response = client.post(
        item_url,
        {"option": [BATCH, CKPT], f"rationale-{BATCH}": too_long, f"rationale-{CKPT}": "every 2 minutes", "seen": ""},
    )
    assert response.status_code == 200
    page = html.unescape(response.content.decode())
    assert "A rationale is at most 2,000 characters (this one has 100,000)" in page
    assert 'aria-invalid="true"' in page and f'aria-describedby="rationale-{BATCH}-error"' in page
    assert too_long in page and "every 2 minutes" in page  # what they typed, to shorten
    for option in (BATCH, CKPT):
        assert re.search(f'id="opt-{option}" data-key="\\w" checked', page), option
    assert not Label.objects.exists()


def test_a_rationale_at_the_limit_is_saved(client, researcher, item_url):
    client.force_login(researcher)
    just_fits = "y" * RATIONALE_MAX_CHARS
    response = client.post(item_url, {"option": [BATCH], f"rationale-{BATCH}": just_fits, "seen": ""})
    assert response.status_code == 302
    assert Label.objects.get().rationale == just_fits


def test_a_too_long_other_note_is_refused_too(client, researcher, item_url):
    client.force_login(researcher)
    response = client.post(item_url, {"option": ["other"], "other_note": "z" * 5000, "seen": ""})
    assert "at most 2,000 characters" in html.unescape(response.content.decode())
    assert not Label.objects.exists()
