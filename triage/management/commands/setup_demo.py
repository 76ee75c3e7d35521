import secrets
from decimal import Decimal

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from fleet.access import OPERATORS_GROUP, RESEARCHERS_GROUP
from fleet.models import Cluster, GpuModelPrice, Owner, Team

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
        "(an operator, a researcher and a member of the first team), printed with fresh passwords. "
        "Run it after `ingest_archive` of a demo archive. Never use it on a production database."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="say what would be created, change nothing")

    @transaction.atomic
    def handle(self, dry_run=False, **options):
        team = Team.objects.order_by("slug").first()
        if team is None:
            raise CommandError("no teams yet: import the demo archive first (python manage.py ingest_archive PATH)")
        clusters = list(Cluster.objects.all())
        logins = [
            ("operator", "Operator: sees the whole fleet, ingest runs and admin"),
            ("researcher", "Researcher: sees the whole fleet for labeling studies"),
            ("alice", f"Member of team '{team.name}': sees only that team's jobs"),
        ]
        if dry_run:
            self.stdout.write(
                f"would price {len(clusters)} clusters and create logins: {', '.join(u for u, _ in logins)}"
            )
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

        self.stdout.write(self.style.SUCCESS("Demo logins (passwords are new on every run):"))
        for username, role in logins:
            self.stdout.write(f"  {username:<11} {passwords[username]:<14} {role}")
