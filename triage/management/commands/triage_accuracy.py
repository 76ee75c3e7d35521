"""Print per-category precision/recall of triage on a freshly generated demo fleet.

`manage.py triage_accuracy --jobs 300 --seed 42` generates the fleet in a temporary folder, runs the
same evidence extraction and rules as the service on every job (read straight from the archive,
nothing is stored), and scores the findings against the generator's ground-truth file.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from fleet.archive.parser import parse_archive
from fleet.series import summarize
from triage.accuracy import format_table, load_truth, score
from triage.demo.generator import generate_demo_fleet
from triage.evidence import JobInfo, build_evidence
from triage.models import RuleSet
from triage.rules import default_thresholds, triage


class Command(BaseCommand):
    help = "Triage a generated demo fleet and print per-category precision and recall against its ground truth."

    def add_arguments(self, parser):
        parser.add_argument("--jobs", type=int, default=300)
        parser.add_argument("--seed", type=int, default=42)
        parser.add_argument(
            "--rule-set", type=int, metavar="VERSION", help="Thresholds of this version (default: defaults)."
        )
        parser.add_argument("--min", type=float, default=0.9, help="Exit with an error if any score is below this.")

    def handle(self, *args, **options):
        if options["jobs"] < 1:
            raise CommandError("--jobs must be at least 1")
        if not 0 <= options["min"] <= 1:  # NaN too: no score is below it, so it would check nothing
            raise CommandError("--min must be a score from 0 to 1")
        thresholds = default_thresholds()
        if options["rule_set"] is not None:
            rule_set = RuleSet.objects.filter(version=options["rule_set"]).first()
            if rule_set is None:
                raise CommandError(f"there is no rule set v{options['rule_set']}")
            thresholds = rule_set.effective_thresholds()
        with tempfile.TemporaryDirectory() as folder:
            archive = Path(folder) / "demo.zip"
            summary = generate_demo_fleet(archive, jobs=options["jobs"], seed=options["seed"])
            truth = load_truth(summary.truth_path)
            parsed = parse_archive(archive, artifact_max_bytes=settings.ARTIFACT_MAX_BYTES)
            predicted, healthy_with_findings = {}, 0
            for job_id, record in parsed.jobs.items():
                frame = parsed.series.get(job_id)
                figures = summarize(frame, start=record.start_time, end=record.end_time, gpu_count=record.gpu_count)
                info = JobInfo(
                    start=record.start_time,
                    end=record.end_time,
                    gpu_count=record.gpu_count,
                    node_count=record.node_count,
                    cpu_count=record.cpu_count,
                    job_type=record.job_type,
                    command=record.command,
                    state=record.state,
                    coverage=figures.coverage,
                    mean_gpu_util=figures.mean_gpu_util,
                )
                artifacts = parsed.artifacts.get(job_id, [])
                text = {a.path: a.content.decode("utf-8", errors="replace") for a in artifacts if a.kind != "trace"}
                evidence = build_evidence(
                    info,
                    frame,
                    logs=[(a.path, text[a.path]) for a in artifacts if a.kind == "log"],
                    scripts=[(a.path, text[a.path]) for a in artifacts if a.kind == "script"],
                    traces=[(a.path, a.content) for a in artifacts if a.kind == "trace"],
                    thresholds=thresholds,
                )
                result = triage(evidence)
                predicted[(record.cluster, job_id)] = {f.category.value for f in result.findings}
                if figures.mean_gpu_util is not None and figures.mean_gpu_util > thresholds["low_util_threshold"]:
                    healthy_with_findings += bool(result.findings)
        scores = score(predicted, truth)
        self.stdout.write(f"Demo fleet: {options['jobs']} jobs, seed {options['seed']}")
        self.stdout.write(format_table(scores))
        self.stdout.write(f"jobs with mean util > threshold that got findings: {healthy_with_findings}")
        measured = [s.lowest for s in scores if s.lowest is not None]
        worst = min(measured, default=1.0)
        if worst < options["min"] or healthy_with_findings:
            raise CommandError(f"below the bar: lowest precision/recall {worst:.2f} (< {options['min']})")
        if len(measured) < len(scores):
            self.stdout.write(f"{len(scores) - len(measured)} categories neither planted nor found: not measured")
