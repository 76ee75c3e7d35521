"""Shared fixtures: personas (operator, researcher, member of team A, outsider), storage, Celery mode."""

from __future__ import annotations

import os
import socket
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.contrib.auth.models import Group
from django.test import Client
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

from fleet.access import OPERATORS_GROUP, RESEARCHERS_GROUP
from tests.factories import ClusterFactory, JobFactory, OwnerFactory, TeamFactory, UserFactory

REPO = Path(__file__).resolve().parent.parent


# The suite runs over the machine's cores (`pytest -n`, pytest-xdist; `make test` asks for two). Each
# worker gets a database of its own from pytest-django (test_<name>_gw0, _gw1, ...), and here a Redis
# database number of its own: the cache (the password-reset mail limit, the rules sweep's batch mark)
# and the real Celery workers some tests start would otherwise meet the other worker's keys and take
# its tasks. REDIS_URL's own number belongs to worker gw0, gw1 takes the two below it, and so on
# (test_password_reset_redis.py uses the number below a worker's: redis_db_below()). Django's
# settings are read before this file, so the derived settings are set again; workers and commands
# that tests start inherit the environment.
REDIS_DBS_PER_WORKER = 2


def _xdist_worker_index(environ) -> int:
    worker = environ.get("PYTEST_XDIST_WORKER", "")
    return int(worker[2:]) if worker.startswith("gw") else 0


def _with_redis_db(url: str, number: int) -> str:
    from urllib.parse import urlsplit, urlunsplit

    return urlunsplit(urlsplit(url)._replace(path=f"/{number}"))


def _redis_db_of(url: str) -> int:
    from urllib.parse import urlsplit

    return int(urlsplit(url).path.strip("/") or 0)


def _isolate_redis_per_worker() -> None:
    index = _xdist_worker_index(os.environ)
    url = os.environ.get("REDIS_URL", "")
    if not index or not url:
        return
    number = _redis_db_of(url) - REDIS_DBS_PER_WORKER * index
    if number < 1:  # 0 is the default database of every other user of this Redis
        raise pytest.UsageError(f"too many test workers for REDIS_URL {url}: worker {index} needs database {number}")
    from django.conf import settings

    url = _with_redis_db(url, number)
    os.environ["REDIS_URL"] = url
    settings.REDIS_URL = settings.CELERY_BROKER_URL = settings.CELERY_RESULT_BACKEND = url
    settings.CACHES["default"]["LOCATION"] = url
    from config.celery import app

    app.conf.update(broker_url=url, result_backend=url)


_isolate_redis_per_worker()


def redis_db_below() -> int:
    """A Redis database number next to this worker's own, for a test that needs a second one."""
    return _redis_db_of(require_service("REDIS_URL")) - 1


EXAMPLE_ARCHIVE = REPO / "docs" / "examples" / "example-archive.zip"

# Property tests (hypothesis) under three profiles. "ci": the same examples every run (each test's
# seed is a hash of the test), no example database, so a rare crash not met yet cannot turn a CI run
# red for an unrelated change; it is for a deliberate hunt to find. "hunt" (FUZZ_EXAMPLES set, even in
# CI) and "dev" (a developer's run): new examples every run, and a failure prints the blob that
# replays it (@reproduce_failure). Loaded here, before the test modules build their settings from it.
# Each is built on hypothesis's "default" profile: hypothesis loads a "ci" profile of its own when it
# sees CI set, which a profile built on the current one would inherit (a hunt in CI derandomized).
_HYPOTHESIS_BASE = hypothesis_settings.get_profile("default")
hypothesis_settings.register_profile(
    "ci",
    _HYPOTHESIS_BASE,
    derandomize=True,
    database=None,
    print_blob=True,
    deadline=None,  # a busy CI machine is slow, not wrong
    suppress_health_check=[HealthCheck.too_slow],
)
hypothesis_settings.register_profile("hunt", _HYPOTHESIS_BASE, derandomize=False, print_blob=True)
hypothesis_settings.register_profile("dev", _HYPOTHESIS_BASE, derandomize=False, print_blob=True)


def hypothesis_profile(environ) -> str:
    """The profile for a run: HYPOTHESIS_PROFILE when set, else "hunt" when FUZZ_EXAMPLES asks for a
    deeper hunt, else "ci" when CI is set, else "dev"."""
    if environ.get("HYPOTHESIS_PROFILE"):
        return environ["HYPOTHESIS_PROFILE"]
    if environ.get("FUZZ_EXAMPLES"):
        return "hunt"
    return "ci" if environ.get("CI") else "dev"


hypothesis_settings.load_profile(hypothesis_profile(os.environ))


def require_service(env_name: str) -> str:
    """The URL of a real service; in CI a missing one fails the test, elsewhere it skips."""
    value = os.environ.get(env_name, "")
    if not value:
        if os.environ.get("CI"):
            pytest.fail(f"{env_name} must point at a running service in CI")
        pytest.skip(f"{env_name} is not set; this test needs the real service")
    return value


def require_postgresql(why: str) -> None:
    """For a test that needs what only PostgreSQL has (row and advisory locks held from another
    connection): in CI it fails on any other database, elsewhere it skips saying `why`."""
    from django.db import connection

    if connection.vendor == "postgresql":
        return
    if os.environ.get("CI"):
        pytest.fail("CI must run the suite on PostgreSQL (set DATABASE_URL)")
    pytest.skip(why)


@contextmanager
def a_worker_imports(run_id: int):
    """For a test that looks at a running run going on (its Elapsed moving, its rate, its time left). On PostgreSQL
    another session holds the run's lock, as its importing worker's does (`tests.test_ingest_exclusive.hold_run_lock`):
    there a running run no lock holds is one no process imports (`IngestRun.no_process_holds`), whose page says
    Elapsed "stopped" and no rate. On SQLite the process the run keeps tells: none recorded, or this one, goes on."""
    from fleet import ingest

    if not ingest.run_locks_tell():
        yield
        return
    from tests.test_ingest_exclusive import hold_run_lock

    worker = hold_run_lock(run_id)
    try:
        yield
    finally:
        worker.close()


@pytest.fixture(autouse=True)
def _celery_in_process():
    """Tasks run in-process unless a test starts a real worker (see test_services.py)."""
    from config.celery import app

    previous = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = previous


def wait_for_imports(seconds: float = 60) -> bool:
    """Wait until the imports this process runs in the background are over (an upload's, without a task
    queue: see `fleet.ingest.start_run`); whether they all are. A test that uploads with real commits
    reads the finished run after this, where the upload itself answered with the run just begun."""
    from fleet import ingest

    return ingest.wait_for_background_imports(seconds)


def pytest_runtest_setup(item):
    """A test marked `sqlite_only(why)` is about the embedded mode (SQLite, where no run lock tells): skipped on
    PostgreSQL, saying why. CI runs the suite on PostgreSQL, then these on SQLite (`.ci/run`), so they are never
    skipped there both times."""
    marker = item.get_closest_marker("sqlite_only")
    if marker is not None:
        from django.conf import settings

        if "sqlite" not in settings.DATABASES["default"]["ENGINE"]:
            pytest.skip(marker.args[0] if marker.args else "about SQLite's embedded mode")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item, nextitem):
    """No background import outlives its test: it would write into the next test's (flushed) database."""
    if not wait_for_imports():
        pytest.fail(f"{item.nodeid}: an import it began in the background was still running a minute later")


@pytest.fixture(autouse=True)
def storage_dir(settings, tmp_path):
    """Each test stores series and artifacts in a folder of its own."""
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(tmp_path / "storage")},
        },
    }
    return tmp_path / "storage"


@pytest.fixture
def upload_dirs(settings, tmp_path):
    """Uploads (kept archives and Django's temporary files) in a folder of the test's own; every
    upload is spooled to a temporary file, as a real archive is. Returns the folder."""
    settings.UPLOAD_DIR = tmp_path / "uploads"
    settings.FILE_UPLOAD_TEMP_DIR = str(tmp_path / "uploads" / "incoming")
    (tmp_path / "uploads" / "incoming").mkdir(parents=True)
    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 1024
    return tmp_path / "uploads"


@pytest.fixture
def team_a(db):
    return TeamFactory(slug="team-a", name="Team A")


@pytest.fixture
def team_b(db):
    return TeamFactory(slug="team-b", name="Team B")


def user_in_group(username: str, group: str):
    """A new user in the group named `group` (OPERATORS_GROUP, RESEARCHERS_GROUP; the group made if it is not there)."""
    user = UserFactory(username=username)
    user.groups.add(Group.objects.get_or_create(name=group)[0])
    return user


@pytest.fixture
def operator(db):
    return user_in_group("olivia-operator", OPERATORS_GROUP)


@pytest.fixture
def operator_client(operator):
    """A test client logged in as the operator."""
    client = Client()
    client.force_login(operator)
    return client


@pytest.fixture
def researcher(db):
    return user_in_group("rita-researcher", RESEARCHERS_GROUP)


@pytest.fixture
def member_a(team_a):
    return OwnerFactory(user=UserFactory(username="alice-member"), team=team_a).user


@pytest.fixture
def outsider(db):
    return UserFactory(username="oscar-outsider")


THREE_RATERS = ("demo-rater-1", "demo-rater-2", "researcher")  # the demo's two raters (DEMO_RATERS) and its lead


def rate_study(
    team,
    *,
    raters=THREE_RATERS,
    jobs: int = 4,
    sample_size: int | None = None,
    name: str = "Demo",
    description: str = "",
    labels_per_job: int = 2,
    skip_note: str | None = "",
    answer=None,
):
    """A study rated and submitted by `raters` (researchers made here; the last is its lead, `created_by`), on a
    sample (seed 5) of `sample_size` jobs (by default all of them) of those there are, whatever their utilization,
    with `jobs` new ones of `team` among them: bert-0, bert-1, ... Each rater saved one option for each of their
    jobs, `answer(n, position)` for the n-th rater (by default improper batch size), except that the first rater
    skipped job #1 as not enough evidence, in the words `skip_note` (None: no one skipped)."""
    from triage.labeling import services
    from triage.labeling.models import Assignment
    from triage.taxonomy import Category

    users = [user_in_group(username, RESEARCHERS_GROUP) for username in raters]
    if jobs:
        cluster = ClusterFactory(name="c1")
        for i in range(jobs):
            JobFactory(cluster=cluster, team=team, name=f"bert-{i}", mean_gpu_util=20.0 + i)
    study = services.create_study(
        name=name,
        description=description,
        lead=users[-1],
        raters=users,
        sample_size=sample_size or jobs or None,  # None: every job there is
        seed=5,
        labels_per_job=labels_per_job,
        low_util_only=False,
    )
    for n, rater in enumerate(users):
        for assignment in services.assignments_of(study, rater):
            if n == 0 and assignment.item.position == 1 and skip_note is not None:
                services.skip_job(assignment, Assignment.SkipReason.NOT_ENOUGH_EVIDENCE, note=skip_note)
            else:
                option = answer(n, assignment.item.position) if answer else Category.IMPROPER_BATCH_SIZE
                services.save_answer(assignment, {option.value: ""})
        services.submit(study, rater)
    return study


@pytest.fixture
def three_rater_study(team_a):
    """A study as the demo's, all submitted: its raters demo-rater-1, demo-rater-2 and researcher (its lead,
    `created_by`, who sees its every card: My labels, Sample, Raters), a sample of 4 of team A's jobs, each rater's
    answers saved (demo-rater-1 skipped the first job)."""
    return rate_study(team_a)


@pytest.fixture
def world(db, team_a, team_b, member_a, outsider, researcher, operator):
    """One of everything, for the tests that request every URL: the access matrix's rows fill their
    `{placeholders}` from `params`; `key` is the machine token `pusher`'s key."""
    from datetime import timedelta

    from django.core.files.base import ContentFile
    from django.utils import timezone

    from fleet.connectors.models import Connector, ConnectorDeletion
    from fleet.models import IngestRun, MachineToken, PersonalToken
    from fleet.series import to_parquet_bytes
    from triage.digests import services as digest_services
    from triage.digests.models import Delivery, DigestKind
    from triage.labeling import services as labeling
    from triage.models import Feedback, RetriageRun, RuleSet
    from triage.taxonomy import Category

    cluster = ClusterFactory(name="c1")
    job_a = JobFactory(cluster=cluster, team=team_a, name="team-a-job")
    job_b = JobFactory(cluster=cluster, team=team_b, name="team-b-secret")
    for i in range(4):
        JobFactory(cluster=cluster, team=team_a if i % 2 else team_b, mean_gpu_util=20.0 + i)
    artifact_a = store_artifact(job_a, "log", "logs/train.log", b"epoch 1 loss 0.5\nteam-a log line\n")
    job_a.series_file.save("series.parquet", ContentFile(to_parquet_bytes(tiny_series())))
    artifact_b = store_artifact(job_b, "log", "logs/train.log", b"team-b-secret log line\n")

    token, key = MachineToken.objects.create_key(name="pusher", created_by=operator)
    spare, _ = MachineToken.objects.create_key(name="spare", created_by=operator)
    personal, _ = PersonalToken.objects.create_key(
        owner=member_a, name="alice notebook", expiry_date=timezone.now() + timedelta(days=90)
    )
    run = IngestRun.objects.create(
        source=IngestRun.Source.UPLOAD,
        archive_name="week.zip",
        created_by=operator,
        status=IngestRun.Status.PARTIAL,
        errors=[{"file": "jobs.csv", "row": 2, "field": "gpu_count", "job_id": "1", "message": "not a number"}],
    )
    run_token = IngestRun.objects.create(
        source=IngestRun.Source.API, archive_name="push.zip", api_key=token, status=IngestRun.Status.SUCCEEDED
    )

    ravi, nina = user_in_group("ravi-rater", RESEARCHERS_GROUP), user_in_group("nina-rater", RESEARCHERS_GROUP)
    study = labeling.create_study(name="Pilot", lead=researcher, raters=[researcher, ravi], sample_size=2, seed=1)
    for rater in (researcher, ravi):
        for assignment in labeling.assignments_of(study, rater):
            labeling.save_answer(assignment, {"none": ""})
        labeling.submit(study, rater)
    study_other = labeling.create_study(name="Other", lead=operator, raters=[ravi, nina], sample_size=2, seed=2)

    delivery = Delivery.objects.create(
        recipient=member_a.email,
        user=member_a,
        kind=DigestKind.TEAM,
        team=team_a,
        iso_week="2026-W45",
        status=Delivery.Status.FAILED,
    )
    connector = Connector.objects.create(name="prom", kind=Connector.Kind.PROMETHEUS, url="http://127.0.0.1:9/")
    answer_a = Feedback.objects.create(
        job=job_a, category=Category.values[0], user=member_a, verdict=Feedback.Verdict.WRONG, comment="not ours"
    )
    return {
        "key": key,
        "params": {
            "job_a": job_a.pk,
            "job_b": job_b.pk,
            "artifact_a": artifact_a.pk,
            "artifact_b": artifact_b.pk,
            "team_a": team_a.slug,
            "team_b": team_b.slug,
            "run": run.pk,
            "run_token": run_token.pk,
            "token_spare": spare.prefix,  # its revoke address names its prefix, never its key's hash
            "personal_token": personal.prefix,
            "retriage": RetriageRun.objects.create(rule_set=RuleSet.current()).pk,
            "week": "2026-W45",
            "delivery": delivery.pk,
            "unsubscribe": digest_services.unsubscribe_token(member_a.pk, DigestKind.TEAM, team_a.pk),
            "study": study.pk,
            "item": study.items.first().pk,
            "study_other": study_other.pk,
            "item_other": study_other.items.first().pk,
            "connector": connector.pk,
            "deletion": ConnectorDeletion.objects.create(
                name="old-prom", lease_token="done", status=ConnectorDeletion.Status.SUCCEEDED
            ).pk,
            "category": Category.values[0],
            "answer_a": answer_a.pk,
        },
        "users": {"member": member_a, "outsider": outsider, "researcher": researcher, "operator": operator},
    }


def tiny_series():
    """Two samples of one GPU, as a stored series frame."""
    import pandas as pd

    stamps = pd.to_datetime(["2026-11-02T10:00:00Z", "2026-11-02T10:00:30Z"]).as_unit("ms")
    return pd.DataFrame(
        {
            "timestamp": stamps,
            "host": "n1",
            "gpu": pd.array([0, 0], dtype="Int16"),
            "gpu_util": pd.array([10.0, 90.0], dtype="float32"),
        }
    )


def store_artifact(job, kind: str, path: str, content: bytes, **fields):
    """A file of `job` in the storage, as an import stores one."""
    import hashlib
    import uuid

    from django.core.files.base import ContentFile

    from fleet.models import Artifact

    artifact = Artifact(job=job, kind=kind, path=path, size=len(content), sha256=hashlib.sha256(content).hexdigest())
    artifact.file.save(uuid.uuid4().hex, ContentFile(content), save=False)  # a name no file ever had
    for name, value in fields.items():
        setattr(artifact, name, value)
    artifact.save()
    return artifact


@pytest.fixture(scope="session")
def demo_archive(tmp_path_factory):
    """A small seeded demo fleet (40 jobs, seed 7): the archive's path, built once per session."""
    from triage.demo.generator import generate_demo_fleet

    folder = tmp_path_factory.mktemp("demo")
    out = folder / "demo-fleet.zip"
    generate_demo_fleet(out, jobs=40, seed=7)
    return out


@pytest.fixture(autouse=True)
def _fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def write_zip(path: Path, members: dict[str, bytes | str]) -> Path:
    """Write an archive from {member name: content}; the tests' way to make small archives."""
    import zipfile

    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in members.items():
            archive.writestr(name, content.encode() if isinstance(content, str) else content)
    return path


@pytest.fixture(autouse=True)
def _login_throttling_only_where_tested(request, settings):
    """django-axes needs a request in authenticate(), which Client.login() does not pass; the
    throttling itself is tested through the login form in test_web_security.py."""
    if "login_throttling" not in request.keywords:
        settings.AUTHENTICATION_BACKENDS = ["fleet.auth.ModelBackend"]


def write_busy_archive(path: Path, *, jobs: int, cluster: str, prefix: str) -> Path:
    """An archive whose import keeps a worker busy for seconds: `jobs` jobs on 2 GPUs, per-job metric
    files of 240 samples per GPU and a short log each (for worker-kill and broker-restart tests)."""
    import zipfile

    lines = ["job_id,user,team,gpu_count,start_time,end_time,name"]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("manifest.json", f'{{"format": "fleet-archive", "version": 1, "cluster": "{cluster}"}}')
        for index in range(jobs):
            lines.append(
                f"{prefix}{index:04d},u{index % 7},team-{index % 5},2,2026-11-02T10:00:00Z,2026-11-02T12:00:00Z,j"
            )
        archive.writestr("jobs.csv", "\n".join(lines) + "\n")
        for index in range(jobs):
            rows = ["timestamp,host,gpu,gpu_util,gpu_mem_used_mib,gpu_mem_total_mib"]
            for step in range(240):
                for gpu in (0, 1):
                    util = (index * 7 + step * 3 + gpu * 11) % 101
                    rows.append(f"{1793613600 + step * 30},n{index % 3},{gpu},{util},{1000 + step},80000")
            archive.writestr(f"metrics/{prefix}{index:04d}.csv", "\n".join(rows) + "\n")
            archive.writestr(
                f"logs/{prefix}{index:04d}/stdout.log",
                f"2026-11-02 10:00:05,000 INFO Epoch 1/2 job {index}\n2026-11-02 10:30:00,000 INFO Saving checkpoint\n",
            )
    return path


@pytest.fixture
def queue_down(settings):
    """The task queue (Redis) unreachable: a real Redis URL on which nothing listens (port 1), so
    Celery and kombu fail as they do with Redis down. The URL's password must never be shown."""
    from config.celery import app as celery_app

    settings.REDIS_URL = "redis://:sekrit@127.0.0.1:1/0"
    saved = {key: celery_app.conf[key] for key in ("broker_url", "task_always_eager")}
    pools = (celery_app._pool, celery_app.amqp._producer_pool)
    celery_app.conf.update(broker_url=settings.REDIS_URL, task_always_eager=False)
    celery_app._pool = celery_app.amqp._producer_pool = None
    yield
    celery_app.conf.update(saved)
    celery_app._pool, celery_app.amqp._producer_pool = pools


def free_port() -> int:
    """A loopback port no server listens on now (the OS picks it), for a server a test is about to start."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def worker_output(storage_dir: Path, queue: str) -> str:
    """What the worker `tests.test_services.celery_worker` started for `queue` has logged so far: a worker's steps
    that leave nothing else to poll (it found a run busy, lost its broker) are read here."""
    (log,) = storage_dir.parent.glob(f"worker-{queue}-*.log")  # where `celery_worker` writes the worker's output
    return log.read_text()


@pytest.fixture
def private_redis(tmp_path):
    """A redis-server of the test's own, which it may stop and restart (never the shared one)."""
    from tests.test_redis_restart import PrivateRedis

    server = PrivateRedis(tmp_path / "redis")
    server.start()
    yield server
    server.stop()


class WorkerDied(BaseException):
    """What os._exit looks like from the database's side: the batch under way never commits."""


@contextmanager
def worker_dies_in_the_second_batch():
    """While inside, a deletion's worker dies in its second batch of jobs: `lifecycle.delete_jobs` deletes
    each batch as it does, and raises `WorkerDied` once the second is deleted, before its commit."""
    from fleet import lifecycle

    delete_jobs, batches = lifecycle.delete_jobs, []

    def dies_in_the_second_batch(jobs):
        batches.append(delete_jobs(jobs))
        if len(batches) == 2:
            raise WorkerDied

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(lifecycle, "delete_jobs", dies_in_the_second_batch)
        yield


def hold_lock(url: str, sql: str, *params):
    """Run a locking SELECT on a connection of its own; the lock lasts until commit or the server goes."""
    import psycopg

    conn = psycopg.connect(url)  # not autocommit: the SELECT opens a transaction
    row = conn.execute(sql, params).fetchone()
    return conn, row


def blocked_query(using: str = "default") -> str:
    """The statement a backend (a worker's) of this database is waiting on a lock to run, or ""."""
    from django.db import connections

    with connections[using].cursor() as cursor:
        cursor.execute(
            "SELECT query FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()"
        )
        row = cursor.fetchone()
    return row[0] if row else ""
