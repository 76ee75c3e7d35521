"""Each triage result records the revision of the rules' code that made it (`triage.rules.RULES_REVISION`).

Results stored before are revision 0, older than any release's rules, so beat's sweep re-triages them
(`triage.services.sweep_outdated`) with the deployed rules; results stored from now on take the deployed
revision.
"""

from django.db import migrations, models

import triage.models


class Migration(migrations.Migration):
    dependencies = [
        ("triage", "0005_price_gpu_model_spellings"),
    ]

    operations = [
        # The rows there are: 0, older than any revision (a callable default would give them today's).
        migrations.AddField(
            model_name="jobtriage",
            name="rules_revision",
            field=models.PositiveIntegerField(default=0),
            preserve_default=False,
        ),
        migrations.AlterField(
            model_name="jobtriage",
            name="rules_revision",
            field=models.PositiveIntegerField(
                db_index=True,
                default=triage.models.current_rules_revision,
                help_text="The revision of the rules' code that made it.",
            ),
        ),
    ]
