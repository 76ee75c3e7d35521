from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("fleet", "0005_audit_log")]

    operations = [
        migrations.AddField(
            model_name="job",
            name="series_pruned_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
