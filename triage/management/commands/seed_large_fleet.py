import random
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from django.core.management.base import BaseCommand, CommandError
from django.db import connection, transaction

from fleet.models import Cluster, GpuModelPrice, Job, Team
from fleet.money import cost_of

GPU_MODELS = {"A100-80GB": Decimal("2.50"), "H100-80GB": Decimal("4.00"), "V100-32GB": Decimal("1.20")}
BATCH = 5000


class Command(BaseCommand):
    help = (
        "Fill the database with N synthetic jobs (summary columns only, no series) for load and "
        "speed tests of the dashboard, e.g. `seed_large_fleet --jobs 100000`. Jobs get external ids "
        "prefixed 'load-' in the clusters 'load-a' and 'load-b'; --delete removes them again."
    )

    def add_arguments(self, parser):
        parser.add_argument("--jobs", type=int, default=100_000)
        parser.add_argument("--teams", type=int, default=20)
        parser.add_argument("--days", type=int, default=90, help="spread start times over this many days")
        parser.add_argument("--seed", type=int, default=1)
        parser.add_argument("--end", default="2026-11-23", help="last day of the spread (UTC)")
        parser.add_argument("--delete", action="store_true", help="remove previously seeded jobs instead")

    def handle(self, jobs, teams, days, seed, end, delete, **options):
        if delete:
            count, _ = Job.objects.filter(cluster__name__in=["load-a", "load-b"]).delete()  # cascades to triage
            self.stdout.write(f"deleted {count} rows")
            return
        if jobs < 1 or teams < 1 or days < 1:
            raise CommandError("--jobs, --teams and --days must be positive")
        rng = random.Random(seed)
        end_time = datetime.fromisoformat(end).replace(tzinfo=UTC)
        clusters = [Cluster.objects.get_or_create(name=name)[0] for name in ("load-a", "load-b")]
        for cluster in clusters:
            for model, price in GPU_MODELS.items():
                GpuModelPrice.objects.update_or_create(
                    cluster=cluster, gpu_model=model, defaults={"price_per_gpu_hour": price, "currency": "USD"}
                )
        team_rows = [
            Team.objects.get_or_create(slug=f"load-team-{i:02d}", defaults={"name": f"Load team {i:02d}"})[0]
            for i in range(teams)
        ]
        created = 0
        while created < jobs:
            batch = []
            for index in range(created, min(created + BATCH, jobs)):
                batch.append(self._job(rng, index, clusters, team_rows, end_time, days))
            with transaction.atomic():
                Job.objects.bulk_create(batch, ignore_conflicts=True)
                self._triage(rng, [job.external_id for job in batch])
            created += len(batch)
            self.stdout.write(f"\r{created}/{jobs} jobs", ending="")
        # Fresh planner statistics, as PostgreSQL's manual advises after a bulk load: until autovacuum
        # gets to it, the planner guesses a handful of rows and picks plans that spill to disk.
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
        self.stdout.write(f"\nseeded {jobs} jobs across {teams} teams and {days} days")

    @staticmethod
    def _triage(rng, external_ids: list[str]) -> None:
        """A current triage result per job, and one or two findings for the low-utilization ones."""
        from triage.models import Finding, JobTriage, RuleSet
        from triage.taxonomy import Category

        rule_set = RuleSet.current()
        jobs = list(
            Job.objects.filter(external_id__in=external_ids, cluster__name__in=["load-a", "load-b"]).exclude(
                triage_results__rule_set=rule_set
            )
        )
        results = JobTriage.objects.bulk_create(
            [
                JobTriage(
                    job=job,
                    rule_set=rule_set,
                    is_current=True,
                    mean_util=job.mean_gpu_util,
                    status="classified" if job.mean_gpu_util <= 50 else "healthy",
                )
                for job in jobs
            ],  # fmt: skip
        )
        categories = list(Category)
        findings = []
        for job, result in zip(jobs, results, strict=True):
            if job.mean_gpu_util > 50:
                continue
            for category in rng.sample(categories, rng.choice([1, 1, 2])):
                findings.append(
                    Finding(result=result, job=job, rule_set=rule_set, category=category, confidence=0.9,
                            summary="seeded for load tests", gpu_hours=(job.unused_gpu_hours or 0) / 2,
                            evidence={}, guidance={})
                )  # fmt: skip
        Finding.objects.bulk_create(findings)

    @staticmethod
    def _job(rng, index, clusters, teams, end_time, days) -> Job:
        gpus = rng.choice([1, 1, 1, 2, 4, 8])
        hours = min(rng.lognormvariate(0.7, 1.0), 72)
        start = end_time - timedelta(seconds=rng.uniform(0, days * 86400))
        util = min(100.0, max(0.0, rng.gauss(62, 25)))
        model, price = rng.choice(list(GPU_MODELS.items()))
        gpu_hours = gpus * hours
        coverage = 1.0 if rng.random() > 0.05 else rng.uniform(0.5, 0.95)
        covered = gpu_hours * coverage
        return Job(
            cluster=rng.choice(clusters),
            external_id=f"load-{index}",
            name=f"load-job-{index % 997}",
            user=f"user{rng.randrange(200):03d}",
            team=rng.choice(teams),
            state="COMPLETED",
            start_time=start,
            end_time=start + timedelta(hours=hours),
            gpu_count=gpus,
            gpu_model=model,
            gpu_hours=gpu_hours,
            mean_gpu_util=util,
            peak_gpu_mem_util=rng.uniform(10, 99),
            unused_gpu_hours=covered * (1 - util / 100),
            idle_gpu_hours=covered * max(0.0, 0.5 - util / 100),
            coverage=coverage,
            sample_count=int(hours * 120) * gpus,
            sampling_period_s=30,
            cost=cost_of(gpu_hours, price),  # as an import prices it
            currency="USD",
        )
