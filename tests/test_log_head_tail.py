"""A log over the size limit keeps its beginning AND its end: the last lines (the traceback, the CUDA out of
memory error) say why a job ended, and keeping only the first 20 MiB cut exactly them off. The marker between
says what was left out, and the log's lines keep their own numbers in the events, the file page and its
search (`fleet.logcut`)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.urls import reverse

from fleet.logcut import find_gap, head_and_tail
from fleet.logevents import OOM, extract_log_events
from fleet.models import Artifact, IngestRun, Job, LogEvent
from tests.conftest import store_artifact, write_zip
from tests.factories import JobFactory
from tests.test_ingest import HEADER, JOBS, MANIFEST, metrics_rows, run_command

pytestmark = pytest.mark.django_db

OOM_LINE = "2026-11-02 10:59:30,000 ERROR torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"


def long_log(lines: int = 3000) -> bytes:
    """A training log of `lines` step lines that ends with an out-of-memory error (line `lines + 1`)."""
    body = [f"2026-11-02 10:{n * 50 // lines:02d}:00,000 INFO step {n} loss {1 / n:.4f}" for n in range(1, lines + 1)]
    return ("\n".join([*body, OOM_LINE]) + "\n").encode()


def test_a_log_over_the_limit_keeps_its_head_and_tail_and_its_line_numbers():
    content, truncated = head_and_tail(long_log(), 8192)
    assert truncated and content.startswith(b"2026-11-02 10:00:00,000 INFO step 1 loss")
    assert content.endswith(OOM_LINE.encode() + b"\n")
    gap = find_gap([content[i : i + 100] for i in range(0, len(content), 100)])  # the marker across chunks
    assert gap is not None and gap.text.startswith(f"[… Fleet Triage left out {gap.omitted_lines:,} lines (")
    for physical, line in enumerate(content.decode().split("\n")[:-1], start=1):
        number = gap.number(physical)
        assert (
            (line == gap.text)
            if number is None
            else line.endswith((f" step {number} loss", OOM_LINE)) or (f" step {number} loss " in line)
        )
    (oom,) = [e for e in extract_log_events(content.decode()) if e.kind == OOM]
    assert oom.line_no == 3001 and oom.timestamp == datetime(2026, 11, 2, 10, 59, 30, tzinfo=UTC)
    small, cut = head_and_tail(long_log(10), 8192)
    assert not cut and small == long_log(10) and find_gap([small]) is None


def test_a_line_that_looks_like_the_marker_is_not_taken_for_one():
    """A log that prints a marker of its own (it cat'ed another cut log) is numbered line by line as ever."""
    content, _ = head_and_tail(long_log(), 8192)
    copied = b"first line\n" + content  # every line one further down than its marker says
    assert find_gap([copied]) is None
    assert [e.line_no for e in extract_log_events(copied.decode()) if e.kind == OOM] == [content.count(b"\n") + 1]


def test_an_archives_log_over_the_limit_keeps_the_oom_that_ended_the_job(tmp_path, settings):
    """A Slurm output file (logs/<job>/slurm-<id>.out) longer than ARTIFACT_MAX_BYTES kept its first 20 MiB:
    the job's out-of-memory error at its end was never seen, and the run said only 'the first were kept'."""
    settings.ARTIFACT_MAX_BYTES = 8192
    members = {
        "manifest.json": MANIFEST,
        "jobs.csv": JOBS,
        "metrics.csv": HEADER + metrics_rows("j1", "2026-11-02T10:00:00Z", 60, 40.0, gpus=2),
        "logs/j1/slurm-4242.out": long_log(),
    }
    code, _, _ = run_command(write_zip(tmp_path / "big.zip", members))
    assert code in (0, 1)
    job = Job.objects.get(external_id="j1")
    artifact = Artifact.objects.get(job=job)
    assert artifact.truncated and artifact.file.read().endswith(OOM_LINE.encode() + b"\n")
    oom = LogEvent.objects.get(job=job, kind=OOM)
    assert oom.line_no == 3001 and oom.timestamp == datetime(2026, 11, 2, 10, 59, 30, tzinfo=UTC)
    (note,) = [e for e in IngestRun.objects.get().errors if e["file"] == "logs/j1/slurm-4242.out"]
    assert "its first and last 4.0 KiB were kept, a marked line in place of the middle" in note["message"]


def test_the_file_page_numbers_a_cut_logs_lines_as_the_log_did(client, member_a, team_a):
    job = JobFactory(team=team_a, name="long-run")
    content, _ = head_and_tail(long_log(), 8192)
    artifact = store_artifact(job, "log", "logs/stdout.log", content, truncated=True)
    gap = find_gap([content])
    url = reverse("dashboard:job-file", args=[job.pk, artifact.pk])
    client.force_login(member_a)
    page = client.get(url, {"line": 3001}).content.decode()
    assert '<span id="L3001" class="hit">' in page and "CUDA out of memory" in page
    assert "3,001 lines" in page
    assert f"({gap.omitted_lines:,} lines) are left out where the marked line says" in page
    first = client.get(url).content.decode()
    assert f'<span class="file-gap" role="note"><span class="ln" aria-hidden="true">…</span>{gap.text}' in first
    assert '<span id="L1">' in first and "step 1 loss" in first
    assert 'href="?from=2001">next</a>' in first  # past the gap: not pages of nothing but the marker
    after = client.get(url, {"from": 2001}).content.decode()
    assert f'<span id="L{gap.resume_line}">' in after and f"step {gap.resume_line} loss" in after
    found = client.get(url, {"q": "out of memory"}).content.decode()
    assert 'href="?line=3001#L3001"' in found


def test_triage_evidence_names_a_cut_logs_lines_as_the_log_did():
    """The findings' `path:line` links come from the triage's own reading of the logs: a line after the marker
    was named by its place in the stored file, a link that opened another line (or none)."""
    from triage.evidence.logs import extract_log_evidence

    content, _ = head_and_tail(long_log(), 8192)
    evidence = extract_log_evidence([("logs/stdout.log", content.decode())])
    (oom,) = evidence.of(OOM)
    assert oom.line_no == 3001 and not oom.estimated
    assert oom.t == datetime(2026, 11, 2, 10, 59, 30, tzinfo=UTC).timestamp()
    assert evidence.quoted(0, 3001, oom.t).text == OOM_LINE
    assert max(evidence.stamped_line) == 3001
    assert not evidence.untimed_runs  # the marker is no line the job printed without a timestamp


def test_triage_says_a_cut_log_lost_its_middle_not_its_end(team_a):
    """The triage's note said 'late log lines may be missing' of any truncated file: of a log kept as head and
    tail it is the middle that is missing, and the end, the part that says why the job ended, was read."""
    from triage.models import RuleSet
    from triage.services import load_evidence

    job = JobFactory(team=team_a, name="long-run")
    content, _ = head_and_tail(long_log(), 8192)
    store_artifact(job, "log", "logs/stdout.log", content, truncated=True)
    notes = load_evidence(job, RuleSet.current().effective_thresholds()).notes
    assert "some logs were over the size limit at ingest: their first and last halves were kept, the lines " in (
        " ".join(notes)
    )
    assert not any("late log lines may be missing" in note for note in notes)
    store_artifact(job, "script", "train.py", b"#" * 100, truncated=True)  # a script keeps its beginning
    notes = load_evidence(job, RuleSet.current().effective_thresholds()).notes
    assert any("late log lines may be missing" in note for note in notes)
