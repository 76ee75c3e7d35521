"""`manage.py ingest_archive` as a person runs it in a terminal: a progress bar that ends at every job,
and, when the output goes to a file or a pipe, plain summary lines only. Run in a real process on a
real pseudo-terminal, against the test database."""

from __future__ import annotations

import fcntl
import os
import struct
import subprocess
import sys
import termios

import pytest

from fleet.models import IngestRun, Job
from tests.conftest import EXAMPLE_ARCHIVE, REPO
from tests.test_services import _worker_database_url

pytestmark = pytest.mark.django_db(transaction=True)


def run_command(args: list[str], storage_dir, *, terminal: bool, size=(120, 40)) -> tuple[int, str]:
    """Run the command with its output on a pseudo-terminal of `size` (columns, rows), or a pipe;
    (exit code, what it printed)."""
    env = {
        **os.environ,
        "DATABASE_URL": _worker_database_url(),
        "STORAGE_DIR": str(storage_dir),
        "SECRET_KEY": os.environ.get("SECRET_KEY", "terminal-test-key"),
        "REDIS_URL": "",  # the triage an import starts runs in that process, not queued on a shared broker
    }
    command = [sys.executable, "manage.py", "ingest_archive", *args]
    if not terminal:
        done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
        return done.returncode, done.stdout
    primary, secondary = os.openpty()
    columns, rows = size
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    try:
        process = subprocess.Popen(command, cwd=REPO, env=env, stdout=secondary, stderr=subprocess.DEVNULL)
        os.close(secondary)
        chunks = []
        while True:
            try:
                chunk = os.read(primary, 65536)
            except OSError:  # EIO: the process closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        return process.wait(timeout=300), b"".join(chunks).decode("utf-8", errors="replace")
    finally:
        os.close(primary)


# A window of 120 × 40; and a terminal that reports no size at all (0 × 0: `script`, some CI
# runners and serial consoles), where tqdm drew nothing until it was given a height.
@pytest.mark.parametrize("size", [(120, 40), (0, 0)], ids=["window", "no-size"])
def test_an_import_on_a_terminal_shows_a_bar_that_ends_at_every_job(storage_dir, size):
    code, shown = run_command([str(EXAMPLE_ARCHIVE)], storage_dir, terminal=True, size=size)
    assert code == 0, shown
    jobs = Job.objects.count()
    assert jobs > 0
    last_bar = shown.split("status:")[0].rstrip().split("\r")[-1]
    assert "100%" in last_bar and f"{jobs}/{jobs}" in last_bar and "job/s" in last_bar  # done/total, the rate
    run = IngestRun.objects.get()
    assert f"{run.samples:,} samples" in shown  # the bar's postfix
    assert "status: Succeeded" in shown


def test_a_dry_run_on_a_terminal_shows_the_same_bar_and_stores_nothing(storage_dir):
    code, shown = run_command([str(EXAMPLE_ARCHIVE), "--dry-run"], storage_dir, terminal=True)
    assert code == 0, shown
    last_bar = shown.split("Dry run of")[0].rstrip().split("\r")[-1]
    assert last_bar.startswith("checking jobs: 100%") and "5/5" in last_bar  # it ends at every job
    assert "reading metrics" in shown  # the phases as the archive is read
    assert "jobs: 5 to create" in shown
    assert not Job.objects.exists() and not IngestRun.objects.exists()


def test_output_to_a_pipe_is_plain_lines_without_a_bar(storage_dir):
    code, printed = run_command([str(EXAMPLE_ARCHIVE)], storage_dir, terminal=False)
    assert code == 0
    assert "\r" not in printed and "job/s" not in printed
    assert printed.splitlines()[1:] == [
        "status: Succeeded",
        f"jobs: {Job.objects.count()} created, 0 updated, 0 unchanged, 0 rejected",
        f"samples: {IngestRun.objects.get().samples}",
    ]


def test_async_prints_the_address_of_the_run_s_page(settings, upload_dirs):
    """`--async` said "follow it in the ingest runs page" without saying where that page is; it
    prints the run's page under PUBLIC_BASE_URL, ready to open."""
    from io import StringIO

    from django.core.management import call_command

    settings.PUBLIC_BASE_URL = "https://fleet.example.org"
    out = StringIO()
    call_command("ingest_archive", str(EXAMPLE_ARCHIVE), "--async", stdout=out)
    run = IngestRun.objects.get()
    assert f"queued; follow it at https://fleet.example.org/ingest-runs/{run.pk}/" in out.getvalue()


def test_a_path_longer_than_a_run_keeps_is_refused_in_words(upload_dirs):
    """A path longer than the run's archive_path column (1,000 characters) stopped `ingest_archive` on
    PostgreSQL with a DataError's stack trace (SQLite keeps any length); it is refused in one sentence, and
    no run is made."""
    from django.core.management import call_command
    from django.core.management.base import CommandError

    path = "/tmp/" + "d" * 250 + "/" + "e" * 250 + "/" + "f" * 250 + "/" + "g" * 250 + "/fleet.zip"
    with pytest.raises(CommandError) as refused:
        call_command("ingest_archive", path)
    assert str(refused.value).startswith(f"The archive's path is {len(path):,} characters, more than the 1,000")
    assert IngestRun.objects.count() == 0
