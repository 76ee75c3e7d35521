#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

import os
import sys


def main():
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.core.management import execute_from_command_line
    from django.db.utils import OperationalError

    try:
        execute_from_command_line(sys.argv)
    except OperationalError as exc:
        # The database is down, unreachable or refuses the login: say where it is and what the driver
        # said, not a traceback (which --traceback still shows).
        if "--traceback" in sys.argv:
            raise
        from django.conf import settings

        from config.startup import EXIT_CODE, database_failure

        print(database_failure(exc, settings.DATABASES["default"]), file=sys.stderr)
        sys.exit(EXIT_CODE)


if __name__ == "__main__":
    main()
