"""Triage jobs now: `manage.py triage --all | --job CLUSTER/ID [--rule-set VERSION] [--dry-run] [--rescan-logs]`."""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.urls import reverse

from fleet.models import Job
from fleet.tasking import QueueUnreachable, publish
from triage import services
from triage.models import RetriageRun, RuleSet


class Command(BaseCommand):
    help = "Triage jobs with the current (or a given) rule-set version and store their findings."

    def add_arguments(self, parser):
        which = parser.add_mutually_exclusive_group(required=True)
        which.add_argument("--all", action="store_true", help="Triage every job.")
        which.add_argument("--job", metavar="CLUSTER/ID", help="Triage one job by its natural key.")
        parser.add_argument("--rule-set", type=int, metavar="VERSION", help="Rule-set version (default: the newest).")
        parser.add_argument("--dry-run", action="store_true", help="Print the findings; store nothing.")
        parser.add_argument(
            "--rescan-logs",
            action="store_true",
            help="First find the events of each job's stored logs again (the job page's Log events), in place "
            "of those its import found: after an upgrade that recognises more log lines. With --all and a "
            "broker (REDIS_URL), queued to the workers in batches, with progress on the rules page.",
        )
        parser.add_argument(
            "--in-process",
            action="store_true",
            help="Do the --all --rescan-logs work in this command, one job at a time, even with a broker.",
        )

    def handle(self, *args, **options):
        if options["rescan_logs"] and options["dry_run"]:
            raise CommandError("--rescan-logs stores the events it finds; it cannot be a dry run")
        if options["rule_set"] is not None:
            rule_set = RuleSet.objects.filter(version=options["rule_set"]).first()
            if rule_set is None:
                raise CommandError(f"there is no rule set v{options['rule_set']}")
        else:
            rule_set = RuleSet.current()
        if options["job"]:
            cluster, _, external_id = options["job"].partition("/")
            jobs = Job.objects.filter(cluster__name=cluster, external_id=external_id)
            if not jobs.exists():
                raise CommandError(f"no job {options['job']} (give CLUSTER/ID, e.g. alpha/4810123)")
        else:
            jobs = Job.objects.all()
        broker = not settings.CELERY_TASK_ALWAYS_EAGER  # REDIS_URL: workers to share the work
        if options["rescan_logs"] and options["all"] and broker and not options["in_process"]:
            return self._fan_out(rule_set)
        jobs = jobs.select_related("cluster").prefetch_related("artifacts", "cluster__prices").order_by("pk")
        counts: dict[str, int] = {}
        rescanned = missing = 0
        for job in jobs.iterator(chunk_size=100):
            if options["rescan_logs"]:
                stored, kept = services.rescan_and_triage(job, rule_set)
                missing, rescanned = missing + kept, rescanned + (not kept)
                status = stored.status
                findings = [(f.category, f.confidence, f.gpu_hours) for f in stored.findings.all()]
            elif options["dry_run"]:
                _, result = services.evaluate_job(job, rule_set)
                status, findings = (
                    result.status,
                    [(f.category.value, f.confidence, f.gpu_hours) for f in result.findings],
                )
            else:
                stored = services.triage_job(job, rule_set)
                status = stored.status
                findings = [(f.category, f.confidence, f.gpu_hours) for f in stored.findings.all()]
            counts[status] = counts.get(status, 0) + 1
            if options["job"] or options["verbosity"] > 1 or options["dry_run"]:
                described = ", ".join(f"{c} ({conf:.2f}, {hours:.2f} GPU-h)" for c, conf, hours in findings)
                self.stdout.write(f"{job}: {status}" + (f": {described}" if described else ""))
        summary = ", ".join(f"{count} {status}" for status, count in sorted(counts.items())) or "no jobs"
        verb = "would be" if options["dry_run"] else "were"
        if options["rescan_logs"]:
            self.stdout.write(
                f"Log events found again for {rescanned} jobs"
                + (f"; {missing} kept theirs (a log missing from storage)." if missing else ".")
            )
        self.stdout.write(f"Rule set v{rule_set.version}: {summary} ({sum(counts.values())} jobs {verb} triaged).")

    def _fan_out(self, rule_set: RuleSet) -> None:
        """Queue every job's log rescan and triage to the workers in batches of RETRIAGE_BATCH, as a new rule
        set's re-triage is queued, with the same progress (a RetriageRun, shown on the rules page)."""
        job_ids = list(Job.objects.order_by("pk").values_list("pk", flat=True))
        run = RetriageRun.objects.create(rule_set=rule_set, jobs_total=len(job_ids), status=RetriageRun.Status.RUNNING)
        if not job_ids:
            services.finish_retriage(run.pk)
        batches = range(0, len(job_ids), services.RETRIAGE_BATCH)
        from triage.tasks import rescan_and_triage_task

        for first in batches:
            batch = job_ids[first : first + services.RETRIAGE_BATCH]
            try:
                publish(
                    rescan_and_triage_task,
                    (batch, rule_set.pk, run.pk),
                    not_done=f"the batches from job {batch[0]} on were not queued",
                    then="run the command again (it is safe to repeat)",
                )
            except QueueUnreachable as exc:
                services.fail_retriage(run.pk, str(exc))
                raise CommandError(str(exc)) from exc
        page = settings.PUBLIC_BASE_URL + reverse("triage:rule-set")
        self.stdout.write(
            f"Queued the log rescan and triage of {len(job_ids)} jobs with rule set v{rule_set.version} in "
            f"{len(batches)} tasks of up to {services.RETRIAGE_BATCH} jobs; progress: {page} "
            "(--in-process does it here instead)."
        )
