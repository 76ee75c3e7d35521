"""Export a study's labels, agreement figures, gold set, rule output or rule quality as CSV or JSON."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from triage.labeling import exchange, services
from triage.labeling.models import Study
from triage.models import RuleSet


class Command(BaseCommand):
    help = "Export a labeling study (columns documented in docs/labeling.md)."

    def add_arguments(self, parser):
        parser.add_argument("study", type=int, help="Study id")
        parser.add_argument("kind", choices=sorted(exchange.KINDS))
        parser.add_argument("--format", choices=["csv", "json"], default="csv")
        parser.add_argument("--gold", type=int, help="Gold-set version (default: the latest)")
        parser.add_argument("--rule-set", type=int, help="Rule-set version (default: the current one)")
        parser.add_argument("--out", help="File to write (default: standard output)")

    def handle(self, *args, study: int, kind: str, format: str, gold, rule_set, out, **options):
        study_obj = Study.objects.filter(pk=study).first()
        if study_obj is None:
            raise CommandError(f"No study {study}")
        asked = [name for name, value in (("gold", gold), ("rule_set", rule_set)) if value is not None]
        unread = exchange.version_not_read(kind, asked, shown={"gold": "--gold", "rule_set": "--rule-set"})
        if unread:
            raise CommandError(unread)
        meta = {"study": {"id": study_obj.pk, "name": study_obj.name, "seed": study_obj.seed}}
        gold_set = study_obj.gold_sets.filter(version=gold).first() if gold is not None else study_obj.gold_sets.first()
        rules = RuleSet.objects.filter(version=rule_set).first() if rule_set is not None else RuleSet.current()
        if kind in ("gold", "quality") and gold_set is None:
            raise CommandError("The study has no such gold set")
        if kind in ("rules", "quality") and rules is None:
            raise CommandError(f"No rule set v{rule_set}")
        if kind == "labels":
            rows = exchange.label_rows(study_obj)
        elif kind == "agreement":
            report = services.agreement_report(study_obj)
            rows = exchange.agreement_rows(study_obj, report)
            meta |= exchange.agreement_meta(study_obj, report)
        elif kind == "gold":
            rows, meta["gold_version"] = exchange.gold_rows(gold_set), gold_set.version
        elif kind == "rules":
            rows, meta["rule_set_version"] = exchange.rule_rows(study_obj, rules), rules.version
            meta |= exchange.rules_revisions_meta(rows)
        else:
            evaluation = services.evaluate_rules(gold_set, rules)
            rows = exchange.quality_rows(evaluation)
            if format == "csv":  # as the page's export: the summary below the categories
                rows += exchange.quality_summary_rows(evaluation)
            meta |= {"gold_version": gold_set.version, "rule_set_version": rules.version}
            meta |= exchange.quality_meta(evaluation)  # as the page's JSON export (docs/labeling.md)
        text = exchange.to_csv(rows, exchange.KINDS[kind]) if format == "csv" else exchange.to_json(rows, kind, **meta)
        if out:
            try:
                Path(out).write_text(text, encoding="utf-8")
            except OSError as exc:
                raise CommandError(f"Cannot write {out}: {exc.strerror}") from None
            self.stdout.write(f"Wrote {len(rows)} rows to {out}")
        else:
            self.stdout.write(text, ending="")
