"""Sessions logged in through Django's ModelBackend name it in the session; the settings now name
fleet.auth.ModelBackend (the same check, the user fetched with their time zone), and Django ends a session
whose backend the settings no longer list. Moved here, such a login outlives the upgrade."""

from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY
from django.db import migrations

OLD, NEW = "django.contrib.auth.backends.ModelBackend", "fleet.auth.ModelBackend"


def move_sessions(apps, schema_editor):
    if (
        not settings.SESSION_ENGINE.startswith("django.contrib.sessions.backends.")
        or "db" not in settings.SESSION_ENGINE
    ):
        return  # sessions kept elsewhere (a cache, signed cookies) are not this database's to move
    from django.contrib.sessions.backends.db import SessionStore

    Session, store = apps.get_model("sessions", "Session"), SessionStore()
    for session in Session.objects.filter(session_data__isnull=False).iterator():
        data = store.decode(session.session_data)  # {} for one that no longer decodes: left to expire
        if data.get(BACKEND_SESSION_KEY) == OLD:
            data[BACKEND_SESSION_KEY] = NEW
            Session.objects.filter(pk=session.pk).update(session_data=store.encode(data))


class Migration(migrations.Migration):
    dependencies = [
        ("fleet", "0027_ssoidentity"),
        ("sessions", "0001_initial"),
    ]

    operations = [migrations.RunPython(move_sessions, migrations.RunPython.noop, elidable=True)]
