import django.db.models.deletion
from django.db import migrations, models


def link_past_pulls(apps, schema_editor):
    """A pull's run was told from others only by its archive path, `connector:<name>`."""
    Connector = apps.get_model("fleet", "Connector")
    IngestRun = apps.get_model("fleet", "IngestRun")
    for connector in Connector.objects.only("pk", "name"):
        IngestRun.objects.filter(source="connector", archive_path=f"connector:{connector.name}").update(
            connector_id=connector.pk
        )


class Migration(migrations.Migration):
    dependencies = [
        ("fleet", "0015_machinetoken_reads_jobs"),
    ]

    operations = [
        migrations.AddField(
            model_name="ingestrun",
            name="connector",
            field=models.ForeignKey(
                blank=True,
                help_text="The connector this run is a pull of (none for archives, or once the connector is deleted).",
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="runs",
                to="fleet.connector",
            ),
        ),
        migrations.RunPython(link_past_pulls, migrations.RunPython.noop),
    ]
