# A chat webhook's delivery named its webhook in `recipient` ("webhook:<pk>"), an email column, which
# the admin called invalid; it is now the row's `webhook` alone, and `recipient` is left empty.

from django.db import migrations, models

WEBHOOK_KIND = "idle_alert_webhook"


def refer_to_webhooks(apps, schema_editor):
    Delivery = apps.get_model("digests", "Delivery")
    TeamWebhook = apps.get_model("digests", "TeamWebhook")
    existing = set(TeamWebhook.objects.values_list("pk", flat=True))
    rows = Delivery.objects.filter(kind=WEBHOOK_KIND).exclude(recipient="").only("pk", "recipient", "webhook_id")
    for row in rows.iterator():
        named = row.recipient.removeprefix("webhook:")
        if row.webhook_id is None and named.isdigit() and int(named) in existing:
            row.webhook_id = int(named)
        row.recipient = ""
        row.save(update_fields=["recipient", "webhook"])


def name_webhooks_in_recipient(apps, schema_editor):
    Delivery = apps.get_model("digests", "Delivery")
    for row in Delivery.objects.filter(kind=WEBHOOK_KIND, recipient="").only("pk", "webhook_id").iterator():
        # A removed webhook's pk is not known any more: one of its own, unique per row.
        row.recipient = f"webhook:{row.webhook_id}" if row.webhook_id else f"webhook:removed-{row.pk}"
        row.save(update_fields=["recipient"])


class Migration(migrations.Migration):
    dependencies = [
        ("digests", "0003_alert_webhooks"),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name="delivery",
            name="digest_delivery_unique_alert",
        ),
        migrations.AlterField(
            model_name="delivery",
            name="recipient",
            field=models.EmailField(blank=True, max_length=254),
        ),
        migrations.RunPython(refer_to_webhooks, name_webhooks_in_recipient),
        migrations.AddConstraint(
            model_name="delivery",
            constraint=models.UniqueConstraint(
                condition=models.Q(("job__isnull", False), models.Q(("kind", "idle_alert_webhook"), _negated=True)),
                fields=("recipient", "job", "idle_since"),
                name="digest_delivery_unique_alert",
            ),
        ),
        migrations.AddConstraint(
            model_name="delivery",
            constraint=models.UniqueConstraint(
                condition=models.Q(("kind", "idle_alert_webhook")),
                fields=("webhook", "job", "idle_since"),
                name="digest_delivery_unique_webhook_alert",
            ),
        ),
    ]
