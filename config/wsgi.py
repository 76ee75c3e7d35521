import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()

# Pages need the static files collectstatic wrote when STATIC_ROOT is set: say so, not a 500 a page.
from config.startup import static_files_or_exit  # noqa: E402

static_files_or_exit()
