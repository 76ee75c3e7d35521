"""What a script is told about its query string: a yes/no filter takes the usual spellings and
refuses the rest, a list refuses a parameter it does not take (listing those it does), and a page
that is no page number is a 400, not a missing page."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import jsonschema
import pytest

from tests.factories import JobFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def jobs(team_a):
    """One job at or below the low-utilization threshold, one above it."""
    return JobFactory(team=team_a, mean_gpu_util=5.0), JobFactory(team=team_a, mean_gpu_util=90.0)


def ids(response) -> set[int]:
    assert response.status_code == 200, response.content
    return {job["id"] for job in response.json()["results"]}


@pytest.mark.parametrize(("spelling", "low"), [
    ("true", True), ("True", True), ("1", True), ("yes", True), ("YES", True),
    ("false", False), ("FALSE", False), ("0", False), ("no", False), ("No", False),
])  # fmt: skip
def test_low_util_takes_the_usual_spellings(client, operator, jobs, spelling, low):
    client.force_login(operator)
    idle, busy = jobs
    assert ids(client.get("/api/v1/jobs/", {"low_util": spelling})) == ({idle.pk} if low else {busy.pk})


def test_no_util_lists_the_jobs_without_samples_as_the_jobs_list_does(client, operator, jobs, team_a):
    """The overview links to `/jobs/?no_util=true`, the jobs with no utilization figure, which neither
    `low_util=true` nor `low_util=false` returns; a script had no way to ask the API for them."""
    from django.urls import reverse

    client.force_login(operator)
    blank = JobFactory(team=team_a, mean_gpu_util=None, unused_gpu_hours=None, idle_gpu_hours=None, coverage=0.0)
    listed = client.get(reverse("dashboard:job-list"), {"no_util": "true"}).context["page"].object_list
    assert ids(client.get("/api/v1/jobs/", {"no_util": "true"})) == {job.pk for job in listed} == {blank.pk}
    assert ids(client.get("/api/v1/jobs/", {"no_util": "no"})) == {job.pk for job in jobs}
    refused = client.get("/api/v1/jobs/", {"no_util": "maybe"})
    assert refused.json() == {"no_util": ["Use true or false (or 1/0, yes/no)."]}
    parameters = client.get("/api/v1/schema/", {"format": "json"}).json()["paths"]["/api/v1/jobs/"]["get"]["parameters"]
    [documented] = [parameter for parameter in parameters if parameter["name"] == "no_util"]
    assert documented["in"] == "query" and documented["schema"] == {"type": "boolean"}
    assert "neither GPU samples nor a Slurm step-accounting average" in documented["description"]


@pytest.mark.parametrize("spelling", ["maybe", "2", "y", "on"])
def test_low_util_refuses_anything_else_with_a_400_naming_it(client, operator, jobs, spelling):
    client.force_login(operator)
    response = client.get("/api/v1/jobs/", {"low_util": spelling})
    assert response.status_code == 400
    assert response.json() == {"low_util": ["Use true or false (or 1/0, yes/no)."]}


def test_an_empty_filter_is_no_filter(client, operator, jobs):
    client.force_login(operator)
    assert ids(client.get("/api/v1/jobs/", {"low_util": "", "team": ""})) == {job.pk for job in jobs}


@pytest.mark.parametrize(
    ("path", "param", "taken"),
    [
        ("/api/v1/jobs/", "from", "cluster, team, user"),
        ("/api/v1/jobs/", "ordering", "low_util"),
        ("/api/v1/jobs/", "page_size", "ingest_run"),
        ("/api/v1/ingest-runs/", "ordering", "status, source, page"),
        ("/api/v1/teams/", "team", "from, to, period, cluster"),
    ],
)
def test_a_parameter_a_list_does_not_take_is_a_400_listing_those_it_takes(client, operator, jobs, path, param, taken):
    client.force_login(operator)
    response = client.get(path, {param: "2026-11-01"})
    assert response.status_code == 400
    [message] = response.json()[param]
    assert message.startswith("This list takes no such parameter; it takes ") and taken in message


def test_a_long_parameter_a_list_does_not_take_is_named_by_its_opening(client, operator, jobs):
    """A 5,000-character parameter name came back whole, as the key of its 400."""
    client.force_login(operator)
    response = client.get("/api/v1/jobs/", {"p" * 4999 + "Z": "1"})
    assert response.status_code == 400
    [name] = response.json()
    assert name == "p" * 100 + "…"


def test_the_filters_a_list_takes_still_work_together_with_a_page(client, operator, jobs):
    client.force_login(operator)
    idle, _ = jobs
    assert ids(client.get("/api/v1/jobs/", {"low_util": "yes", "page": "1", "format": "json"})) == {idle.pk}


@pytest.mark.parametrize("page", ["abc", "0", "-1", "1.5", "٣"])
def test_a_page_that_is_no_page_number_is_a_400(client, operator, jobs, page):
    client.force_login(operator)
    response = client.get("/api/v1/jobs/", {"page": page})
    assert (response.status_code, response.json()) == (400, {"page": ["A page is a whole number from 1 (or last)."]})


def test_a_page_past_the_last_is_still_a_404_and_last_is_the_last(client, operator, jobs):
    client.force_login(operator)
    # It said "Invalid page.", as DRF says of a page that is no number: now where the list ends.
    past = client.get("/api/v1/jobs/", {"page": "2"})
    assert (past.status_code, past.json()) == (404, {"detail": "There is no page 2: the last is 1, at 100 a page."})
    # A page number of 5,000 digits was a server error (int() refuses over 4,300), an HTML page.
    huge = client.get("/api/v1/jobs/", {"page": "9" * 5000})
    assert (huge.status_code, huge.json()) == (
        404,
        {"detail": f"There is no page {'9' * 20}…: the last is 1, at 100 a page."},
    )
    documented = client.get("/api/v1/schema/", {"format": "json"}).json()["paths"]["/api/v1/jobs/"]["get"]
    [page] = [parameter for parameter in documented["parameters"] if parameter["name"] == "page"]
    assert "`last`" in page["description"]
    assert ids(client.get("/api/v1/jobs/", {"page": "last"})) == {job.pk for job in jobs}


def test_the_schema_documents_page_as_the_lists_take_it(client):
    """A client built from the schema sent `page=0` (an integer, as documented) and got a 400; and
    `last`, which every list takes, was no integer at all. The schema now says: from 1, or `last`."""
    paths = client.get("/api/v1/schema/", {"format": "json"}).json()["paths"]
    for path in ("/api/v1/jobs/", "/api/v1/ingest-runs/"):
        [documented] = [p for p in paths[path]["get"]["parameters"] if p["name"] == "page"]
        validator = jsonschema.Draft4Validator(documented["schema"])
        assert [validator.is_valid(value) for value in (1, 2, 10**30, "last")] == [True] * 4, path
        assert [validator.is_valid(value) for value in (0, -1, 1.5, "first", "")] == [False] * 5, path


def test_refusing_the_caller_comes_before_refusing_the_parameters(client):
    assert client.get("/api/v1/jobs/", {"from": "x"}).status_code == 401


def test_jobs_stored_while_a_script_pages_through_neither_repeat_nor_hide_a_job(client, operator, team_a, monkeypatch):
    """A sync script walked `next` while the weekly import landed: the new jobs sort first (newest
    start), so page 2 began with page 1's last jobs again. The walk is now of the jobs there were
    at its first page, its `next` links carrying `max_id`; the new jobs are the next walk's."""
    from config.api_params import PageNumbers

    monkeypatch.setattr(PageNumbers, "page_size", 2)
    client.force_login(operator)
    before = [JobFactory(team=team_a) for _ in range(5)]
    first = client.get("/api/v1/jobs/").json()
    seen = [job["id"] for job in first["results"]]
    newer = JobFactory(team=team_a, start_time=max(job.start_time for job in before) + timedelta(days=1))
    url = first["next"]
    while url:
        page = client.get(url).json()
        assert page["count"] == 5
        seen += [job["id"] for job in page["results"]]
        url = page["next"]
    assert seen == [job.pk for job in sorted(before, key=lambda job: job.start_time, reverse=True)]
    assert f"max_id={before[-1].pk}" in first["next"]
    # The next walk starts with it, and going back keeps to the walk's jobs too.
    again = client.get("/api/v1/jobs/").json()
    assert again["results"][0]["id"] == newer.pk and again["count"] == 6
    assert f"max_id={newer.pk}" in client.get(again["next"]).json()["previous"]


def walk(client, url: str) -> tuple[list[int], list[dict]]:
    seen, pages = [], []
    while url:
        page = client.get(url).json()
        pages.append(page)
        seen += [job["id"] for job in page["results"]]
        url = page["next"]
    return seen, pages


def test_jobs_deleted_while_a_script_pages_through_hide_no_other_job(client, operator, team_a, monkeypatch):
    """An operator deleted jobs (an ingest run, a team) while a sync script walked `next`: page 2 is
    'rows 3 and 4', so with page 1's first job gone it began one job later and the script never saw
    the job that moved up onto page 1. `next` and `previous` now carry where the page ended or began
    (`after`, `before`), so a deleted job is missing from the walk and no other job is."""
    from config.api_params import PageNumbers

    monkeypatch.setattr(PageNumbers, "page_size", 2)
    client.force_login(operator)
    jobs = [JobFactory(team=team_a) for _ in range(7)]
    order = [job.pk for job in sorted(jobs, key=lambda job: (-job.start_time.timestamp(), job.pk))]
    first = client.get("/api/v1/jobs/").json()
    assert [job["id"] for job in first["results"]] == order[:2]
    JobFactory._meta.model.objects.filter(pk=order[0]).delete()  # behind the walk
    second = client.get(first["next"]).json()
    assert [job["id"] for job in second["results"]] == order[2:4]
    JobFactory._meta.model.objects.filter(pk=order[5]).delete()  # ahead of it
    rest, pages = walk(client, second["next"])
    assert rest == [order[4], order[6]]
    assert [page["count"] for page in pages] == [5]  # the jobs there are now, of those there were
    # Going back from page 2 gives page 1 as it now is: its one job left.
    assert [job["id"] for job in client.get(second["previous"]).json()["results"]] == [order[1]]
    # A walk's page number is a label now; a page past the (shrunk) last one is no 404 when it has an `after`.
    assert client.get(first["next"]).status_code == 200


@pytest.mark.parametrize("token", ["abc", "W10", "WyJ4IiwieSJd", "WyIyMDI2LTAxLTAxVDAwOjAwOjAwIiwiMSJd", "WzFd"])
@pytest.mark.parametrize("name", ["after", "before"])
def test_an_after_or_before_that_is_no_link_s_is_a_400_naming_it(client, operator, jobs, name, token):
    """Not base64, an empty list, words where a time and an id go, a time with no zone, a number."""
    client.force_login(operator)
    response = client.get("/api/v1/jobs/", {name: token})
    assert response.status_code == 400 and response.json() == {
        name: [f"This {name} is not one of this list's: follow its pages' next and previous links, or leave it out."]
    }
    both = client.get("/api/v1/jobs/", {"after": token, "before": token})
    assert both.status_code == 400 and set(both.json()) == {"after", "before"}


def test_the_schema_documents_after_and_before_on_both_lists(client, operator, jobs, monkeypatch):
    """The lists' `next` and `previous` were documented with DRF's example, `/accounts/?page=4`: a link
    without the `max_id` and `after` a real one carries."""
    from config.api_params import PageNumbers

    schema = client.get("/api/v1/schema/", {"format": "json"}).json()
    for name in ("PaginatedJobList", "PaginatedIngestRunList"):
        links = schema["components"]["schemas"][name]["properties"]
        assert "example" not in links["next"] and "example" not in links["previous"]
        assert "`max_id` and `after" in links["next"]["description"]
        assert "`max_id` and `before" in links["previous"]["description"]
    monkeypatch.setattr(PageNumbers, "page_size", 1)
    JobFactory(team=jobs[0].team)  # three pages: the second has both links
    client.force_login(operator)
    second = client.get(client.get("/api/v1/jobs/").json()["next"]).json()
    assert {"max_id", "before"} <= set(parse_qs(urlsplit(second["previous"]).query))
    assert {"max_id", "after", "page"} == set(parse_qs(urlsplit(second["next"]).query))
    paths = schema["paths"]
    for path in ("/api/v1/jobs/", "/api/v1/ingest-runs/"):
        documented = {p["name"]: p for p in paths[path]["get"]["parameters"]}
        assert documented["after"]["schema"] == documented["before"]["schema"] == {"type": "string"}
        assert "deleted" in documented["after"]["description"]


@pytest.mark.parametrize("value", ["abc", "-1", "1.5"])
def test_a_max_id_that_is_no_whole_number_is_a_400_naming_it(client, operator, jobs, value):
    client.force_login(operator)
    response = client.get("/api/v1/jobs/", {"max_id": value})
    assert response.status_code == 400 and list(response.json()) == ["max_id"]
    assert ids(client.get("/api/v1/jobs/", {"max_id": "9" * 5000})) == {job.pk for job in jobs}
    assert ids(client.get("/api/v1/jobs/", {"max_id": str(jobs[0].pk)})) == {jobs[0].pk}


def test_the_schema_documents_max_id_on_both_lists(client):
    paths = client.get("/api/v1/schema/", {"format": "json"}).json()["paths"]
    for path in ("/api/v1/jobs/", "/api/v1/ingest-runs/"):
        [documented] = [p for p in paths[path]["get"]["parameters"] if p["name"] == "max_id"]
        assert documented["schema"] == {"type": "integer", "minimum": 0} and "next" in documented["description"]


def test_a_cluster_or_team_no_one_has_is_a_400_listing_those_the_caller_may_see(
    client, operator, member_a, team_a, team_b
):
    """`/api/v1/jobs/?team=genia` answered `count: 0`, which a sync script files as a quiet week, where
    the teams report refuses a cluster no cluster is named. Now both lists name the parameter and the
    names there are; a member is told only theirs, so another team's name cannot be found by trying."""
    from fleet.models import MachineToken
    from tests.factories import ClusterFactory, TeamFactory

    ours = JobFactory(team=team_a, cluster=ClusterFactory(name="alpha"))
    theirs = JobFactory(team=team_b, cluster=ClusterFactory(name="beta"))
    idle = TeamFactory(slug="team-idle")  # a team without jobs is an empty list, no error
    client.force_login(operator)
    assert client.get("/api/v1/jobs/", {"cluster": "nope"}).json() == {
        "cluster": ["There is no cluster named 'nope' (the clusters: alpha, beta)."]
    }
    assert client.get("/api/v1/jobs/", {"team": "genia"}).json() == {
        "team": ["There is no team 'genia' (the teams: team-a, team-b, team-idle)."]
    }
    assert ids(client.get("/api/v1/jobs/", {"team": idle.slug})) == set()
    assert ids(client.get("/api/v1/jobs/", {"team": "team-b", "cluster": "beta"})) == {theirs.pk}
    client.force_login(member_a)
    assert client.get("/api/v1/jobs/", {"team": "team-b"}).json() == {
        "team": ["There is no team 'team-b' (the teams: team-a)."]
    }
    assert client.get("/api/v1/jobs/", {"cluster": "beta"}).json() == {
        "cluster": ["There is no cluster named 'beta' (the clusters: alpha)."]
    }
    assert ids(client.get("/api/v1/jobs/", {"team": "team-a", "cluster": "alpha"})) == {ours.pk}
    client.logout()
    _, key = MachineToken.objects.create_key(name="reader", reads_jobs=True)
    token = {"HTTP_AUTHORIZATION": f"Api-Key {key}"}
    assert ids(client.get("/api/v1/jobs/", {"team": "team-b", "cluster": "beta"}, **token)) == {theirs.pk}
    assert client.get("/api/v1/jobs/", {"team": "nope"}, **token).status_code == 400


def test_an_ingest_run_no_one_has_is_a_400_naming_it_as_an_unknown_cluster_or_team_is(client, operator, team_a):
    """`?ingest_run=<an id no run has>` answered `count: 0`, as if the run had stored nothing, where an
    unknown `cluster` or `team` is a 400 naming the parameter. A run that stored nothing is still an
    empty list."""
    from fleet.models import IngestRun

    stored = IngestRun.objects.create(archive_name="week-47.zip", status=IngestRun.Status.SUCCEEDED)
    empty = IngestRun.objects.create(archive_name="week-48.zip", status=IngestRun.Status.SUCCEEDED)
    job = JobFactory(team=team_a, ingest_run=stored)
    client.force_login(operator)
    assert ids(client.get("/api/v1/jobs/", {"ingest_run": stored.pk})) == {job.pk}
    assert ids(client.get("/api/v1/jobs/", {"ingest_run": empty.pk})) == set()
    missing = empty.pk + 1
    response = client.get("/api/v1/jobs/", {"ingest_run": missing})
    assert response.status_code == 400
    assert response.json() == {"ingest_run": [f"There is no ingest run {missing}."]}
    assert list(client.get("/api/v1/jobs/", {"ingest_run": "abc"}).json()) == ["ingest_run"]


@pytest.mark.parametrize(
    ("sent", "message"),
    [
        (str(10**40), f"There is no ingest run {10**40}."),  # past any bigint: refused before the query
        (str(2**63), f"There is no ingest run {2**63}."),
        ("abc", "Ingest run must be a run number, such as ingest_run=42 (not 'abc')."),
        ("0", "Ingest run must be a run number, such as ingest_run=42 (not '0')."),
        ("-3", "Ingest run must be a run number, such as ingest_run=42 (not '-3')."),
    ],
)
def test_an_ingest_run_that_is_no_run_number_says_so_in_plain_words(client, operator, sent, message):
    """`?ingest_run=<40 digits>` said "Ensure this value is less than or equal to 9223372036854775807."
    and `abc` "Enter a number.": the database's limit, and not which parameter or what it takes."""
    client.force_login(operator)
    response = client.get("/api/v1/jobs/", {"ingest_run": sent})
    assert response.status_code == 400
    assert response.json() == {"ingest_run": [message]}


@pytest.mark.parametrize(
    ("path", "param", "listed"),
    [
        ("/api/v1/jobs/", "category", "model_checkpointing, gpu_memory_bound"),
        ("/api/v1/jobs/", "status", ": healthy, classified, unclassified, insufficient_data, error."),
        ("/api/v1/jobs/", "answer", "right"),
        ("/api/v1/ingest-runs/", "source", "upload"),
    ],
)
def test_a_value_a_choice_filter_does_not_have_is_a_400_listing_those_it_has(client, operator, path, param, listed):
    """'Select a valid choice. checkpointing is not one of the available choices.' sent a script's
    author to the schema to find them."""
    client.force_login(operator)
    response = client.get(path, {param: "checkpointing%s"})
    assert response.status_code == 400
    [message] = response.json()[param]
    assert message.startswith("Select a valid choice. 'checkpointing%s' is not one of the available choices: ")
    assert listed in message


@pytest.mark.parametrize(
    ("path", "answers"),
    [
        ("/api/v1/jobs/", "json"),
        ("/api/v1/teams/", "json"),
        ("/api/v1/schema/", "yaml, json"),
    ],
)
def test_a_format_an_address_does_not_answer_is_a_400_naming_those_it_does(client, operator, jobs, path, answers):
    """`/api/v1/teams/?format=csv` (the teams page's CSV, a script might think) answered 404 "Not found.",
    as a job that does not exist does."""
    client.force_login(operator)
    response = client.get(path, {"format": "csv"})
    assert response.status_code == 400
    # The schema's refusals come in its first format, YAML, as its 404 did.
    assert f"There is no format 'csv' here; it answers {answers}." in response.content.decode()
    if path != "/api/v1/schema/":
        assert response.json() == {"format": [f"There is no format 'csv' here; it answers {answers}."]}
    assert client.get(path, {"format": "json"}).status_code == 200
    # A suffix is part of the address: one the API does not have is its 404, as before.
    assert client.get(path.rstrip("/") + ".csv").status_code == 404


def test_ingest_runs_walk_by_after_too_whatever_is_deleted(client, operator, monkeypatch):
    """The runs list is ordered by created_at and id, both descending: its `after` follows that order."""
    from config.api_params import PageNumbers
    from fleet.models import IngestRun

    monkeypatch.setattr(PageNumbers, "page_size", 1)
    runs = [IngestRun.objects.create(archive_name=f"week-{n}.zip") for n in range(4)]
    newest_first = [run.pk for run in sorted(runs, key=lambda run: (run.created_at, run.pk), reverse=True)]
    client.force_login(operator)
    first = client.get("/api/v1/ingest-runs/").json()
    assert "after=" in first["next"]
    IngestRun.objects.filter(pk=newest_first[0]).delete()
    seen, _ = walk(client, first["next"])
    assert [first["results"][0]["id"], *seen] == newest_first


@pytest.mark.parametrize(
    ("path", "param", "opening"),
    [
        ("/api/v1/jobs/", "cluster", "There is no cluster named "),
        ("/api/v1/jobs/", "team", "There is no team "),
        ("/api/v1/jobs/", "category", "Select a valid choice. "),
        ("/api/v1/ingest-runs/", "source", "Select a valid choice. "),
        ("/api/v1/jobs/", "format", "There is no format "),
        ("/api/v1/teams/", "cluster", "There is no cluster named "),
        ("/api/v1/teams/", "period", "Unknown period "),
    ],
)
def test_a_long_value_refused_is_quoted_by_its_opening_and_length_not_whole(client, operator, path, param, opening):
    """A 5,000-character cluster name sent back all 5,000 characters in its 400 (and a script logs that
    answer). A refused value is quoted whole up to 100 characters; a longer one by its first 100, an
    ellipsis and its length."""
    client.force_login(operator)
    value = "%s" + "x" * 4993 + "END%%"
    response = client.get(path, {param: value})
    assert response.status_code == 400
    [message] = response.json()[param]
    assert message.startswith(f"{opening}'{value[:100]}…' (5,000 characters)")
    assert "END" not in message and len(message) < 1000  # the choices listed after it are the rest
    short = client.get(path, {param: "x" * 100}).json()[param][0]
    assert short.startswith(f"{opening}'{'x' * 100}' ") and "characters)" not in short
