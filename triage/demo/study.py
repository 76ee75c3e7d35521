"""The demo's labeling study: a sample of the demo fleet's low-utilization jobs, already labelled and
submitted by two demo raters from the generator's ground truth, and waiting for the `researcher` login.

The two demo raters answer with the planted causes, except on a few seeded jobs where one of them
misses a second cause or picks a neighbouring one, as two careful people would: their Cohen's kappa is
high but not 1, so the agreement, adjudication and gold pages have something to show. They are
accounts without a usable password: nobody logs in as them.
"""

from __future__ import annotations

import random
from pathlib import Path

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from fleet.access import RESEARCHERS_GROUP
from fleet.models import IngestRun
from triage.demo.generator import default_truth_path
from triage.labeling import sampling, services
from triage.labeling.models import NONE_OF_THESE, Study
from triage.models import low_util_threshold
from triage.taxonomy import Category

DEMO_STUDY_NAME = "Demo: why do low-utilization GPUs idle?"
DEMO_RATERS = ("demo-rater-1", "demo-rater-2")
DEMO_STUDY_SIZE = 20
DEMO_STUDY_SEED = 42
# Its raters are named in the Raters card beside it, not here: in a phone's paragraph "demo-rater-1" broke at
# its hyphen ("demo-" at a line's end, "rater-1" on the next), as a browser breaks a hyphenated word in text.
DEMO_STUDY_DESCRIPTION = (
    "Made by manage.py setup_demo. Two of the study's three raters (see Raters) are demo accounts that no one "
    "logs in as: they labelled every job from the demo fleet's planted causes and submitted. Label the jobs "
    "yourself, submit, and compare on the agreement page."
)
# The share of jobs on which one demo rater strays from the planted causes.
DISAGREEMENT_SHARE = 0.15


def latest_demo_truth() -> Path | None:
    """The ground truth beside the archive of the latest successful ingest (where `make_demo_fleet`
    writes it), or None when there is no such file."""
    run = IngestRun.objects.filter(status=IngestRun.Status.SUCCEEDED).order_by("-pk").first()
    if run is None or not run.archive_path:
        return None
    try:
        path = default_truth_path(run.archive_path)
    except ValueError:  # not a .zip or .tar.gz: no demo archive
        return None
    return path if path.is_file() else None


def demo_answers(planted: list[set[str]], seed: int) -> tuple[list[set[str]], list[set[str]]]:
    """The two demo raters' options for each job, given the categories planted in it (empty: healthy).

    Both answer with the planted causes ("none of these" for a healthy job) except on a seeded
    `DISAGREEMENT_SHARE` of the jobs (at least one), shared between them, where one of them misses the
    second of two causes, or takes a cause for another of the same dimension."""
    rng = random.Random(seed)
    answers = [[set(p) or {NONE_OF_THESE} for p in planted] for _ in DEMO_RATERS]
    if not planted:
        return answers[0], answers[1]
    strays = rng.sample(range(len(planted)), max(1, round(len(planted) * DISAGREEMENT_SHARE)))
    for turn, index in enumerate(strays):
        answer = answers[turn % 2][index]
        causes = sorted(answer - {NONE_OF_THESE})
        if len(causes) > 1:
            answer.discard(rng.choice(causes))
            continue
        taken = Category(causes[0]) if causes else rng.choice(list(Category))
        neighbours = [c for c in Category if c.dimension == taken.dimension and c != taken] or [
            c for c in Category if c != taken
        ]
        answer.clear()
        answer.add(rng.choice(neighbours).value)
    return answers[0], answers[1]


def ensure_demo_study(truth: dict[tuple[str, str], set[str]], researcher) -> tuple[Study, bool]:
    """The demo study, made once: (study, whether it was made now), given the demo's ground truth
    (`triage.accuracy.load_truth`). A study of that name is left as it is, with whatever the researcher
    has labelled in it since. Raises LabelingError when no job is low-utilization or the truth does not
    know a sampled job (then nothing is made: the caller's transaction rolls back)."""
    existing = Study.objects.filter(name=DEMO_STUDY_NAME).first()
    if existing is not None:
        return existing, False
    User = get_user_model()
    researchers = Group.objects.get_or_create(name=RESEARCHERS_GROUP)[0]
    demo_raters = []
    for username in DEMO_RATERS:
        user, created = User.objects.get_or_create(username=username)
        if created or user.has_usable_password():
            user.set_unusable_password()
            user.save()
        user.groups.add(researchers)
        demo_raters.append(user)
    study = services.create_study(
        name=DEMO_STUDY_NAME,
        description=DEMO_STUDY_DESCRIPTION,
        lead=researcher,
        raters=[*demo_raters, researcher],
        strategy=sampling.Strategy.BY_TEAM,
        sample_size=DEMO_STUDY_SIZE,
        seed=DEMO_STUDY_SEED,
        labels_per_job=len(demo_raters) + 1,  # every rater labels every job
        low_util_only=True,
        low_util_threshold=low_util_threshold(),
    )
    items = list(study.items.select_related("job__cluster").order_by("position"))
    keys = [(item.job.cluster.name, item.job.external_id) for item in items]
    unknown = [f"{cluster}/{job_id}" for cluster, job_id in keys if (cluster, job_id) not in truth]
    if unknown:
        raise services.LabelingError(
            f"the ground truth does not list job {unknown[0]} ({len(unknown)} of the {len(keys)} sampled jobs): "
            "is it the truth of the archive imported?"
        )
    planted = [truth[key] for key in keys]
    for rater, answers in zip(demo_raters, demo_answers(planted, DEMO_STUDY_SEED), strict=True):
        mine = {a.item_id: a for a in services.assignments_of(study, rater)}
        for item, options in zip(items, answers, strict=True):
            services.save_answer(mine[item.pk], dict.fromkeys(options, ""))
        services.submit(study, rater)
    return study, True
