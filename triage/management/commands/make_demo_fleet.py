"""`manage.py make_demo_fleet`: write a seeded demo fleet archive and, beside it, its ground truth."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from triage.demo.generator import generate_demo_fleet


class Command(BaseCommand):
    help = (
        "Write a demo GPU fleet in archive format v1 (.zip or .tar.gz) with the 15 low-utilization causes "
        "planted in realistic jobs, and its ground truth as a separate JSON file beside the archive "
        "(never inside it). The same seed always writes the same bytes."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--out",
            required=True,
            help="Archive to write; must end in .zip or .tar.gz. Parent folders are created.",
        )
        parser.add_argument(
            "--jobs",
            type=int,
            default=300,
            help="Number of jobs (default 300). Every category is planted at least once from 15 jobs up.",
        )
        parser.add_argument("--seed", type=int, default=42, help="Random seed (default 42); same seed, same archive.")
        parser.add_argument(
            "--sample-density",
            type=int,
            default=1,
            help="Sample every job N times more often than its exporters would (default 1); "
            "for benchmarks that need many metric samples.",
        )
        parser.add_argument(
            "--truth",
            default=None,
            help="Where to write the ground truth (default: the archive path with .zip/.tar.gz replaced "
            "by .truth.json).",
        )

    def handle(self, *args, **options):
        if options["jobs"] < 1:
            raise CommandError("--jobs must be at least 1")
        if options["seed"] < 0:
            raise CommandError("--seed must be a non-negative integer")
        try:
            summary = generate_demo_fleet(
                options["out"],
                jobs=options["jobs"],
                seed=options["seed"],
                truth_path=options["truth"],
                sample_density=options["sample_density"],
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from exc

        write = self.stdout.write
        write(f"Archive:      {summary.archive_path} ({summary.archive_bytes / 1e6:.1f} MB)")
        write(f"Ground truth: {summary.truth_path}")
        write(
            f"Jobs:         {summary.job_count} ({summary.healthy_count} healthy, "
            f"{summary.job_count - summary.healthy_count} with planted causes, "
            f"{summary.multi_category_count} with two)"
        )
        rows = summary.metric_rows
        # An import's "samples" are GPU samples, each (GPU, time) once: say which of the rows those are.
        write(f"Metric rows:  {rows.total} in metrics.parquet, of which")
        width = len(str(rows.total))
        write(f"  {rows.gpu_samples:>{width}} GPU samples, one per GPU and time: the samples an import counts")
        write(f"  {rows.host_rows:>{width}} host rows, one per node and time (CPU, memory, network, disk)")
        write(f"  {rows.duplicate_rows:>{width}} duplicated rows (planted double scrapes): an import drops them")
        write("Categories:")
        width = max(len(name) for name in summary.category_counts)
        for name, count in summary.category_counts.items():
            write(f"  {name:<{width}}  {count}")
        self.stdout.write(self.style.SUCCESS("Demo fleet written."))
