"""Every model change has its migration: a field's new help text, choices or default with none would be
made on the next deployment's `makemigrations` by whoever runs it, outside review, or not at all."""

from io import StringIO

import pytest
from django.core.management import call_command

pytestmark = pytest.mark.django_db


def test_no_model_change_lacks_a_migration():
    out = StringIO()
    try:
        call_command("makemigrations", "--check", "--dry-run", stdout=out, stderr=out)
    except SystemExit:  # --check exits 1 when a migration is missing
        pytest.fail(f"models changed without a migration:\n{out.getvalue()}")
