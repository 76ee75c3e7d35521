"""Streaming an archive in spill buckets, the next bucket read ahead on a thread of its own."""

from __future__ import annotations

import errno
import threading
from pathlib import Path

import pytest

from fleet.archive.parser import ArchiveStream, _ReadAhead, _Spill


def stored_form(stream: ArchiveStream) -> list[tuple[str, bytes | None, list[str]]]:
    """Each job as the importer stores it: id, series blob, artifact paths."""
    return [
        (job.record.external_id, job.series.to_parquet_bytes() if job.series is not None else None,
         [artifact.path for artifact in job.artifacts])
        for job in stream
    ]  # fmt: skip


def read_ahead_threads() -> list[threading.Thread]:
    """The stream's helper threads: the next bucket's (or batch's) reader and the spill's writer."""
    return [thread for thread in threading.enumerate() if thread.name.startswith(("read-ahead", "spill"))]


def test_many_small_buckets_read_ahead_give_what_one_bucket_gives(demo_archive, tmp_path):
    with ArchiveStream(demo_archive, work_dir=tmp_path) as whole:
        expected = stored_form(whole)
        expected_duplicates = whole.duplicate_samples
    with ArchiveStream(demo_archive, work_dir=tmp_path, bucket_rows=2_000) as stream:
        assert stream._parser._spill.count > 10  # the archive really is read in many buckets
        assert stored_form(stream) == expected
        assert stream.duplicate_samples == expected_duplicates
    assert len(expected) == 40 and sum(blob is not None for _, blob, _ in expected) > 30
    assert read_ahead_threads() == []


def test_leaving_a_stream_part_way_stops_its_read_ahead_and_removes_its_folder(demo_archive, tmp_path):
    with ArchiveStream(demo_archive, work_dir=tmp_path, bucket_rows=2_000) as stream:
        jobs = iter(stream)
        first = [next(jobs) for _ in range(3)]
        assert read_ahead_threads()  # the next bucket is being read meanwhile
    assert len(first) == 3
    assert read_ahead_threads() == []
    assert list(Path(tmp_path).iterdir()) == []


def test_read_ahead_keeps_order_and_raises_the_generators_error_in_its_place():
    closed = []

    def items():
        try:
            yield from (1, 2, 3)
            raise ValueError("spill file unreadable")
        finally:
            closed.append(True)

    ahead = _ReadAhead(items())
    assert [next(ahead) for _ in range(3)] == [1, 2, 3]
    with pytest.raises(ValueError, match="spill file unreadable"):
        next(ahead)
    assert closed == [True]
    with pytest.raises(StopIteration):
        next(ahead)


def test_closing_a_read_ahead_closes_its_generator_without_reading_it_to_the_end():
    produced, closed = [], []

    def items():
        try:
            for number in range(1000):
                produced.append(number)
                yield number
        finally:
            closed.append(True)

    ahead = _ReadAhead(items())
    assert next(ahead) == 0
    ahead.close()
    assert closed == [True]
    assert len(produced) <= 2  # the item handed over and the one read ahead, no more
    assert list(ahead) == []


def test_a_spill_write_that_fails_fails_reading_the_metrics_and_leaves_nothing(demo_archive, tmp_path, monkeypatch):
    """Batches are spilled on a thread of their own; a full disk there still stops the import
    while the metrics are read (not later, not silently), and leaves no folder or thread behind."""
    write = _Spill._write
    calls = []

    def full_disk(self, *args):
        calls.append(True)
        if len(calls) == 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        return write(self, *args)

    monkeypatch.setattr(_Spill, "_write", full_disk)
    stream = ArchiveStream(demo_archive, work_dir=tmp_path, bucket_rows=2_000)
    with pytest.raises(OSError, match="No space left"):
        stream.__enter__()
    assert calls == [True]
    assert read_ahead_threads() == []
    assert list(Path(tmp_path).iterdir()) == []
