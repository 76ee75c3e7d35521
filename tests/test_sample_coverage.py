"""A job's "Sample coverage" (its page and the labeling page, one include) says what its GPU samples cover, and
never a share of the run covered by no samples at all."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from tests.reading import as_read
from tests.test_labeling import jobs, raters, study  # noqa: F401  (fixtures)

pytestmark = pytest.mark.django_db


def _coverage(page: str) -> str:
    return re.search(r"<dt>Sample coverage</dt><dd>(.*?)</dd>", as_read(page), re.DOTALL).group(1)


@pytest.mark.parametrize(
    ("figures", "job_page", "label_page"),
    [
        # No GPU sample at all (a job imported without metrics): the import stores coverage 0, 0 samples, no figure.
        ({"coverage": 0.0, "sample_count": 0, "mean_gpu_util": None, "sampling_period_s": None},
         "none (0 samples)", "none (0 samples)"),
        # A coverage with no sample counted (stored by another way, an older import): the samples cover nothing.
        ({"coverage": 1.0, "sample_count": 0, "sampling_period_s": None}, "none (0 samples)", "none (0 samples)"),
        # One sample: its noun agrees.
        ({"coverage": 0.0, "sample_count": 1, "sampling_period_s": None},
         "0 % of GPU time (1 sample)", "0 % of GPU time (1 sample)"),
        ({"coverage": 0.97, "sample_count": 480, "sampling_period_s": 30.0},
         "97 % of GPU time (480 samples, every 30 s)", "97 % of GPU time (480 samples, every 30 s)"),
    ],
)  # fmt: skip
def test_sample_coverage_says_what_samples_cover(client, operator, study, researcher, figures, job_page, label_page):  # noqa: F811
    """The job page read "100 % of GPU time (0 samples)" and the labeling page "100 % (0 samples)" for a job whose
    coverage was 1 with no sample counted, "0 % of GPU time (0 samples)" for one with no samples, and "(1
    samples)"."""
    from fleet.models import Job

    item = study.items.first()
    Job.objects.filter(pk=item.job.pk).update(**figures)
    client.force_login(operator)
    assert _coverage(client.get(reverse("dashboard:job-detail", args=[item.job.pk])).content.decode()) == job_page
    client.force_login(researcher)
    assert _coverage(client.get(reverse("labeling:label", args=[study.pk, item.pk])).content.decode()) == label_page
