import secrets
from decimal import Decimal
from pathlib import Path

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from fleet.access import OPERATORS_GROUP, RESEARCHERS_GROUP
from fleet.models import Cluster, GpuModelPrice, Owner, Team
from triage.accuracy import load_truth
from triage.demo import study as demo_study
from triage.labeling import services as labeling_services
from triage.labeling.models import Study
from triage.labeling.services import LabelingError

# Indicative on-demand prices per GPU-hour; operators set their own under Settings → GPU-hour prices.
DEMO_PRICES = {
    "": Decimal("1.50"),
    "H100-80GB": Decimal("4.00"),
    "A100-80GB": Decimal("2.50"),
    "A100-40GB": Decimal("2.00"),
    "V100-32GB": Decimal("1.20"),
    "T4": Decimal("0.35"),
}


class Command(BaseCommand):
    help = (
        "Prepare an imported demo fleet for a tour: GPU prices for every cluster and three logins "
        "(an operator, a researcher and a member of the first team), printed with fresh passwords, and "
        "a labeling study of low-utilization jobs that two demo raters have labelled from the demo's "
        "ground truth, for the researcher to join. Run it after `ingest_archive` of a demo archive. "
        "Never use it on a production database."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="say what would be created, change nothing")
        parser.add_argument(
            "--truth",
            type=Path,
            help="the demo's ground truth, for the demo raters' labels (default: the .truth.json beside the "
            "archive of the latest successful ingest, as make_demo_fleet writes it)",
        )

    @transaction.atomic
    def handle(self, dry_run=False, truth=None, **options):
        team = Team.objects.order_by("slug").first()
        if team is None:
            raise CommandError("no teams yet: import the demo archive first (python manage.py ingest_archive PATH)")
        clusters = list(Cluster.objects.all())
        logins = [
            ("operator", "Operator: sees the whole fleet, ingest runs and admin"),
            ("researcher", "Researcher: sees the whole fleet for labeling studies"),
            ("alice", f"Member of team '{team.name}': sees only that team's jobs"),
        ]
        truth_path = truth or demo_study.latest_demo_truth()
        if dry_run:
            self.stdout.write(
                f"would price {len(clusters)} clusters and create logins: {', '.join(u for u, _ in logins)}"
            )
            if Study.objects.filter(name=demo_study.DEMO_STUDY_NAME).exists():
                self.stdout.write(f"would leave the study '{demo_study.DEMO_STUDY_NAME}' as it is")
            elif truth_path:
                self.stdout.write(f"would make the study '{demo_study.DEMO_STUDY_NAME}' from {truth_path}")
            return

        for cluster in clusters:
            for gpu_model, price in DEMO_PRICES.items():
                GpuModelPrice.objects.update_or_create(
                    cluster=cluster, gpu_model=gpu_model, defaults={"price_per_gpu_hour": price, "currency": "USD"}
                )

        User = get_user_model()
        passwords = {}
        for username, _ in logins:
            user, _ = User.objects.get_or_create(username=username)
            passwords[username] = secrets.token_urlsafe(9)
            user.set_password(passwords[username])
            # An address at a domain reserved for examples (RFC 2606), so the digest pages and their
            # sending can be tried: the demo prints mail to the console (no EMAIL_HOST set).
            user.email = user.email or f"{username}@example.org"
            user.save()
        operator = User.objects.get(username="operator")
        operator.is_staff = operator.is_superuser = True
        operator.save()
        # get_or_create: the role groups come from a data migration, which a flushed database lacks
        operator.groups.add(Group.objects.get_or_create(name=OPERATORS_GROUP)[0])
        User.objects.get(username="researcher").groups.add(Group.objects.get_or_create(name=RESEARCHERS_GROUP)[0])
        Owner.objects.get_or_create(user=User.objects.get(username="alice"), team=team)
        self._study(truth_path, User.objects.get(username="researcher"))

        self.stdout.write(self.style.SUCCESS("Demo logins (passwords are new on every run):"))
        for username, role in logins:
            self.stdout.write(f"  {username:<11} {passwords[username]:<14} {role}")

    def _study(self, truth_path: Path | None, researcher) -> None:
        # Made once and left as it is: an archive imported since (the example archive, uploaded on the
        # README's walk) has no ground truth beside it, and needs none to keep the study.
        existing = Study.objects.filter(name=demo_study.DEMO_STUDY_NAME).first()
        if existing is not None:
            self._said(existing, made=False)
            return
        if truth_path is None:
            self.stdout.write(
                "No labeling study: no demo ground truth beside the imported archive (pass --truth PATH)."
            )
            return
        try:
            truth = load_truth(truth_path)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise CommandError(f"{truth_path}: not a demo ground truth ({exc})") from exc
        try:
            with transaction.atomic():  # a study refused leaves no demo rater behind, and the logins stand
                study, made = demo_study.ensure_demo_study(truth, researcher)
        except LabelingError as exc:
            self.stdout.write(self.style.WARNING(f"No labeling study ({truth_path}): {exc}"))
            return
        self._said(study, made=made)

    def _said(self, study, *, made: bool) -> None:
        done = "made" if made else "already there, left as it is"
        self.stdout.write(
            f"Labeling study '{study.name}' ({done}): {study.items.count()} jobs, labelled by "
            f"{' and '.join(demo_study.DEMO_RATERS)}; {self._researchers_part(study)}."
        )

    @staticmethod
    def _researchers_part(study) -> str:
        """How far the demo's researcher is with the study, as a run again finds it: the jobs they labelled and
        those they skipped each counted (`progress` counts both as done: a skipped job is off their queue, but
        has no label)."""
        link = study.rater_links.filter(user__username="researcher").select_related("user").first()
        if link is None:
            return "researcher is not one of its raters"
        done, total = labeling_services.progress(study, link.user)
        skipped = labeling_services.skipped_count(study, link.user)
        labelled = done - skipped
        if link.submitted_at is not None:
            if not skipped:
                return "researcher has labelled and submitted them"
            return f"researcher has labelled {labelled}, skipped {skipped} and submitted them"
        if done == 0:
            return "researcher has them to label"
        if not skipped:
            if done < total:
                return f"researcher has labelled {done} of them, {total - done} to go"
            return f"researcher has labelled all {total}, not submitted yet"
        if done < total:
            return f"researcher has labelled {labelled} and skipped {skipped} of them, {total - done} to go"
        return f"researcher has labelled {labelled} and skipped {skipped}, not submitted yet"
