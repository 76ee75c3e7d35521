"""The demo fleet as `make demo` uses it: imported whole, priced, with logins for a tour."""

import json
from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.urls import reverse

from fleet import ingest
from fleet.access import is_operator, is_researcher
from fleet.models import IngestRun, Job, Owner

pytestmark = pytest.mark.django_db


def test_demo_archive_imports_every_job_and_holes_lower_coverage(demo_archive):
    run = ingest.execute_run(ingest.create_run(demo_archive).pk)
    truth = json.loads(demo_archive.with_suffix(".truth.json").read_text())
    assert run.status == IngestRun.Status.SUCCEEDED, run.errors
    assert Job.objects.count() == len(truth["jobs"]) == run.jobs_created
    with_hole = [j["job_id"] for j in truth["jobs"] if any("hole" in d for d in j.get("defects", []))]
    for job in Job.objects.all():
        assert job.mean_gpu_util is not None and job.sample_count > 0
        if job.external_id in with_hole:
            assert job.coverage < 0.99, job.external_id  # the hole is missing data, not idle time
        else:
            assert job.coverage > 0.97, job.external_id


def test_setup_demo_gives_the_roles_on_a_flushed_database(team_a):
    """`manage.py flush` (and a test that empties the database) removes the role groups a migration made:
    the demo's logins still get their roles, rather than the command failing on a missing group."""
    from django.contrib.auth.models import Group

    Group.objects.all().delete()
    call_command("setup_demo", stdout=StringIO())
    assert is_operator(User.objects.get(username="operator"))
    assert is_researcher(User.objects.get(username="researcher"))


def test_setup_demo_prices_the_fleet_and_prints_working_logins(demo_archive, client):
    ingest.execute_run(ingest.create_run(demo_archive).pk)
    out = StringIO()
    call_command("setup_demo", stdout=out)
    logins = {line.split()[0]: line.split()[1] for line in out.getvalue().splitlines()[1:]}
    assert set(logins) == {"operator", "researcher", "alice"}
    users = {name: User.objects.get(username=name) for name in logins}
    assert all(users[name].check_password(password) for name, password in logins.items())
    assert is_operator(users["operator"]) and is_researcher(users["researcher"])
    alice = users["alice"]
    team = Owner.objects.get(user=alice).team
    assert not Job.objects.filter(cost__isnull=True).exists()
    client.force_login(alice)
    page = client.get(reverse("dashboard:job-list")).content.decode()
    assert f'Jobs <span class="muted">{team.jobs.count()}</span>' in page
    # Each login has an address, so the digests can be tried in the demo: alice gets her team's.
    digests = client.get(reverse("digests:index")).content.decode()
    assert f"You receive the {team.name} digest at alice@example.org." in digests
