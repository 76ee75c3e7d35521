"""Fleet Triage settings: one module, driven by environment variables (see .env.example).

With neither DATABASE_URL nor REDIS_URL set the service runs embedded: SQLite in
DATA_DIR and Celery tasks executed in-process, so one command shows the product.
"""

from __future__ import annotations

import ipaddress
import os
import re
import secrets
from datetime import timedelta
from pathlib import Path

import dj_database_url
from celery.schedules import crontab
from cryptography.fernet import Fernet
from django.core.exceptions import ImproperlyConfigured

from config.env import env_bool, env_float, env_int, env_list, env_str
from config.sso import content_security_policy, oidc_settings
from config.url_prefix import prefix_settings

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(env_str("DATA_DIR", str(BASE_DIR / "data"))).resolve()
STORAGE_DIR = Path(env_str("STORAGE_DIR", str(DATA_DIR / "storage"))).resolve()

DEBUG = env_bool("DEBUG", False)


ENV_EXAMPLE_SECRET_KEY = "change-me"  # noqa: S105 (the placeholder refused below)


def _secret_key() -> str:
    key = env_str("SECRET_KEY")
    if key and not DEBUG and key.strip() == ENV_EXAMPLE_SECRET_KEY:
        # .env.example's placeholder, left as it was: everyone who read that file could sign sessions.
        raise ImproperlyConfigured(
            f"SECRET_KEY is still {ENV_EXAMPLE_SECRET_KEY!r} from .env.example: "
            "set it to a secret of your own (generate one with `openssl rand -hex 32`)."
        )
    if key:
        return key
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY must be set when DEBUG is off (generate one with `openssl rand -hex 32`)."
        )
    # Demo mode: generate once and keep it in the data folder so sessions survive restarts.
    key_file = DATA_DIR / "secret_key"
    if not key_file.exists():
        DATA_DIR.mkdir(parents=True, exist_ok=True)
        key_file.write_text(secrets.token_urlsafe(50))
        key_file.chmod(0o600)
    return key_file.read_text().strip()


SECRET_KEY = _secret_key()
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])
# Served under a path prefix behind a reverse proxy (https://ops.example.com/triage/): URL_PREFIX=/triage
# (config/url_prefix.py; docs/operations.md, "Serving under a path prefix") sets FORCE_SCRIPT_NAME, STATIC_URL,
# the cookies' names and path. PUBLIC_BASE_URL, the base of emails' links, may be given with the prefix or without.
# Each setting prefix_settings() decides is named here (tests/test_url_prefix.py checks that none is left out).
_PREFIXED = prefix_settings(env_str("URL_PREFIX"), public_base_url=env_str("PUBLIC_BASE_URL", "http://127.0.0.1:8000"))
URL_PREFIX = _PREFIXED["URL_PREFIX"]  # "" or "/triage"
FORCE_SCRIPT_NAME = _PREFIXED["FORCE_SCRIPT_NAME"]  # None or "/triage"
PUBLIC_BASE_URL = _PREFIXED["PUBLIC_BASE_URL"]  # without the prefix: mails add URL_PREFIX (public_url)
STATIC_URL = _PREFIXED["STATIC_URL"]
SESSION_COOKIE_NAME = _PREFIXED["SESSION_COOKIE_NAME"]
SESSION_COOKIE_PATH = _PREFIXED["SESSION_COOKIE_PATH"]
CSRF_COOKIE_NAME = _PREFIXED["CSRF_COOKIE_NAME"]
CSRF_COOKIE_PATH = _PREFIXED["CSRF_COOKIE_PATH"]
LANGUAGE_COOKIE_PATH = _PREFIXED["LANGUAGE_COOKIE_PATH"]

INSTALLED_APPS = [
    # Django's admin with its site's search capped (config/admin_site.py): admin.site is a FleetAdminSite.
    "config.admin_site.FleetAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI's files, served as our own static files
    "rest_framework_api_key",
    "axes",
    "fleet",
    "triage",
    "triage.labeling",
    "triage.digests",
]

MIDDLEWARE = [
    # First: probes by address over plain HTTP pass the host check and the HTTPS redirect below.
    "config.middleware.HealthzMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    # Before CSRF: the CSRF check reads the POST body, and the upload cap must be in place first.
    "fleet.uploads.UploadLimitMiddleware",
    "config.middleware.RefuseNulMiddleware",  # after the cap: it reads URL-encoded form bodies
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "config.middleware.PrivateResponsesMiddleware",  # after auth: it asks who the answer is for
    "config.middleware.IdleSessionMiddleware",  # after auth: moves a login's expiry on while it is used
    "config.middleware.UserTimeZoneMiddleware",  # after auth: pages in the zone the person chose
    "django.contrib.messages.middleware.MessageMiddleware",
    # Single sign-on sessions checked with the provider again now and then (fleet/sso.py); else idle.
    "fleet.sso.SsoSessionRefresh",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    # Last, as django-axes asks: it turns a locked-out login into a clear 429 page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "fleet.context_processors.roles",
                "fleet.context_processors.time_zone",
                "config.navigation.nav_section",
            ],
        },
    },
]

# --- Database -----------------------------------------------------------------------
_DEFAULT_SQLITE = f"sqlite:///{DATA_DIR / 'fleet-triage.sqlite3'}"
try:
    # Connections are kept for a minute; the health check (a SELECT 1 when a request first reuses one)
    # drops a connection that a PostgreSQL restart has killed, instead of failing that request with a 500.
    DATABASES = {
        "default": dj_database_url.parse(
            env_str("DATABASE_URL") or _DEFAULT_SQLITE, conn_max_age=60, conn_health_checks=True
        )
    }
except ValueError as exc:
    raise ImproperlyConfigured(f"DATABASE_URL is not a database URL: {exc}") from None
# dj-database-url knows MySQL, Oracle and more, whose drivers are not installed and whose SQL the
# migrations do not speak: name the two that work instead of "Error loading MySQLdb module".
if DATABASES["default"]["ENGINE"] not in ("django.db.backends.postgresql", "django.db.backends.sqlite3"):
    raise ImproperlyConfigured(
        f"DATABASE_URL must be a postgres:// (PostgreSQL) or sqlite:/// URL, not "
        f"{env_str('DATABASE_URL').split('://', 1)[0]}://…"
    )
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    # WAL lets the dev server read while an in-process ingest writes; the timeout rides out short locks.
    # IMMEDIATE: a transaction takes the write lock when it begins, so two that read and then write
    # (two "Freeze gold" clicks) wait their turn; begun as readers, one could not become a writer and
    # SQLite refused it at once ("database is locked", whatever the timeout): a 500.
    # synchronous=NORMAL: in WAL mode a commit no longer waits for the disk (only checkpoints do);
    # a power cut may lose the last commits but never corrupts the file (SQLite's "WAL mode" page).
    # Triage commits once a job: 300 jobs re-triaged in 5.4 s instead of 5.8-6.4 s.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 30,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
    }
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    # A file, not :memory:, so a separate worker process can share the test database; one per
    # test process so that two suites running at once never share it.
    DATABASES["default"]["TEST"] = {"NAME": str(DATA_DIR / f"test-fleet-triage-{os.getpid()}.sqlite3")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Auth ---------------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
AUTHENTICATION_BACKENDS = [
    # Login throttling: after AXES_FAILURE_LIMIT failures for a username from one address, that
    # pair is locked out for AXES_COOLOFF_MINUTES.
    "axes.backends.AxesStandaloneBackend",
    # Django's, fetching a logged-in user with their time zone in one query (a page asked for it in one
    # more); sessions made under Django's own path were moved to it (fleet migration 0028).
    "fleet.auth.ModelBackend",
]
# Single sign-on with an OpenID Connect provider (config/sso.py, fleet/sso.py, README "Single sign-on"):
# off unless OIDC_ISSUER is set; the login page keeps its username and password for break-glass admins.
_OIDC = oidc_settings()
globals().update(_OIDC)
OIDC_ENABLED = _OIDC["OIDC_ENABLED"]
if OIDC_ENABLED:
    AUTHENTICATION_BACKENDS.append("fleet.sso.SsoBackend")
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("LOGIN_COOLOFF_MINUTES", 15, minimum=1))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
# Behind reverse proxies (HTTPS=1 sits behind one), how many append to X-Forwarded-For: the address
# counted is then the client's, not the proxy's (config/client_ip.py). 0: REMOTE_ADDR, the header ignored.
TRUSTED_PROXIES = env_int("TRUSTED_PROXIES", 0, minimum=0)
AXES_CLIENT_IP_CALLABLE = "config.client_ip.client_ip"
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_VERBOSE = False  # no start-up banner in every management command's output
# A forgotten password (fleet/accounts.py): the mailed link works once, for this long; an account is
# mailed at most one link per PASSWORD_RESET_MAIL_MINUTES, however often its address is entered.
PASSWORD_RESET_TIMEOUT = env_int("PASSWORD_RESET_LINK_MINUTES", 60, minimum=5) * 60
PASSWORD_RESET_MAIL_MINUTES = env_int("PASSWORD_RESET_MAIL_MINUTES", 15, minimum=0)
# Personal API tokens (fleet/personal_tokens.py): how many live ones (neither revoked nor expired) a
# person may hold at once, as GitHub and GitLab cap them; one more is a form error saying to revoke one.
PERSONAL_TOKENS_PER_USER = env_int("PERSONAL_TOKENS_PER_USER", 20, minimum=1)
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "dashboard:overview"
LOGOUT_REDIRECT_URL = "login"

# --- Time and language: UTC everywhere ------------------------------------------------
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# --- Files --------------------------------------------------------------------------
# STATIC_URL: under URL_PREFIX, set above (/static/ without one).
STATICFILES_DIRS = [BASE_DIR / "static"]
# STATIC_ROOT set (the Docker image sets it and runs collectstatic into it when it is built): pages link
# the collected files by content-hashed names, which WhiteNoise serves compressed (gzip, brotli) and
# cacheable for ever. Unset: files are served straight from static/ (no collectstatic step), unhashed.
STATIC_COLLECTED = bool(env_str("STATIC_ROOT")) and not DEBUG
# Empty is unset: Path("") is the working folder, which WhiteNoise would serve (source, .env) at /static/.
STATIC_ROOT = Path(env_str("STATIC_ROOT") or DATA_DIR / "staticfiles").resolve()
STORAGES = {
    # Series blobs and artifacts go through the storage API so an object store can replace the folder.
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": str(STORAGE_DIR)}},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if STATIC_COLLECTED
        else "whitenoise.storage.CompressedStaticFilesStorage"
        if not DEBUG
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
# Without collected files, serve straight from static/, so the app works without `collectstatic`.
WHITENOISE_USE_FINDERS = not STATIC_COLLECTED
STATIC_ROOT.mkdir(parents=True, exist_ok=True)

# --- Security (tightened further by the security issue) ------------------------------
SESSION_COOKIE_HTTPONLY = True
# A login ends after this long without a request (config.middleware.IdleSessionMiddleware moves the
# expiry on while it is used, writing the session at most every few minutes); Django's default was two
# weeks after logging in, however long the browser had been left.
SESSION_COOKIE_AGE = env_int("SESSION_IDLE_MINUTES", 8 * 60, minimum=5) * 60
CSRF_COOKIE_HTTPONLY = False
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
# Content security policy: scripts and styles only from our own origin (vendored, no CDN);
# inline styles are allowed because Plotly sets them on the elements it draws.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'", "'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}
# Logging out of a single sign-on session goes on to the provider's logout (config/sso.py).
CONTENT_SECURITY_POLICY = content_security_policy(CONTENT_SECURITY_POLICY, _OIDC)
if env_bool("HTTPS", False):
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000, minimum=0)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    # Preloading commits every subdomain to HTTPS for good, so it is the operator's explicit choice.
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
    if not SECURE_HSTS_PRELOAD:
        SILENCED_SYSTEM_CHECKS = ["security.W021"]
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# --- JSON API (/api/v1/) ---------------------------------------------------------------
REST_FRAMEWORK = {
    # People use their session (with CSRF); machines use API tokens. A token authenticates as the
    # token (request.auth), never as a person (request.user stays anonymous), so the permissions
    # say what each token may do. Tokens first: a request with neither credential is then a 401
    # naming the token scheme in WWW-Authenticate, and a bad token a 401 saying what is wrong.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "fleet.tokens.MachineTokenAuthentication",
        # A person's own read-only token (Bearer): it acts as its owner, scoped like their session.
        "fleet.tokens.PersonalTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "EXCEPTION_HANDLER": "config.api.exception_handler",  # refusals that say what to do
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_FILTER_BACKENDS": ["config.api_params.FiltersNamingChoices"],  # a wrong choice: 400 listing them
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "config.api_params.FormatNamingNegotiation",  # ?format=csv: 400, no 404
    "DEFAULT_PAGINATION_CLASS": "config.api_params.PageNumbers",  # a page that is no page number: 400
    "PAGE_SIZE": 100,
    "DEFAULT_SCHEMA_CLASS": "config.api_schema.FleetAutoSchema",  # documents the error responses too
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Fleet Triage API",
    "DESCRIPTION": (
        "Jobs, findings and archive ingestion of Fleet Triage. Every time is ISO 8601 in UTC; every amount of "
        'money is a decimal string with 2 places in major units of the currency beside it ("12.50"); fields '
        "marked deprecated stay with their values until a new version of the API."
    ),
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # The API's reference page (/api/v1/docs/) runs Swagger UI from our static files: no CDN, and
    # its start-up script is a file of ours too, so the strict script-src 'self' holds.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "SWAGGER_UI_SETTINGS": {"persistAuthorization": False, "tryItOutEnabled": False},
    "SCHEMA_PATH_PREFIX": "/api/v1",
    "PREPROCESSING_HOOKS": ["config.api_schema.without_slashless_twins"],
    # Served under a prefix, the schema names it as its server: the paths are the server's (/api/v1/...).
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums", "config.api_schema.served_under_prefix"],
    # A job's triage status and an ingest run's are both "status": name them apart.
    # An ingest run's has a name of its own too, as the push's 503 (IngestRunRefused) shares its status field.
    "ENUM_NAME_OVERRIDES": {
        "TriageStatusEnum": "triage.models.TriageStatus",
        "IngestRunStatusEnum": "fleet.models.IngestRun.Status",
        # A job's `categories` list the same names as a finding's `category`: one enum, not two.
        "CategoryEnum": "triage.taxonomy.Category",
        "DimensionEnum": "triage.taxonomy.Dimension",
    },
    "APPEND_COMPONENTS": {
        "securitySchemes": {
            "MachineToken": {
                "type": "apiKey",
                "in": "header",
                "name": "Authorization",
                "description": 'A machine token created by an operator, sent as "Authorization: Api-Key <token>". '
                "It does only what it was made for, each a box on the tokens page: push archives (ticked by "
                "default), read /metrics, the teams' report, the jobs; anything else is a 403 naming what it "
                "may not do.",
            },
            "PersonalToken": {
                "type": "http",
                "scheme": "bearer",
                "description": "A person's own read-only token, made on their page /account/tokens/, sent as "
                '"Authorization: Bearer <token>". It acts as its owner (what their login sees, checked at each '
                "request) and only reads: any other method is a 403.",
            },
            # The operations' `auth` names it beside the token; spectacular declares no scheme for an
            # operation whose auth is given, so an undeclared name made the schema invalid.
            "cookieAuth": {
                "type": "apiKey",
                "in": "cookie",
                "name": SESSION_COOKIE_NAME,
                "description": "A person's login session (a POST also sends the CSRF token as X-CSRFToken).",
            },
        }
    },
}
API_KEY_CUSTOM_HEADER = None  # tokens travel in "Authorization: Api-Key <token>"

# --- Celery ---------------------------------------------------------------------------
# Docs: https://docs.celeryq.dev/en/stable/userguide/configuration.html
REDIS_URL = env_str("REDIS_URL")
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 2 * 60 * 60, minimum=60)
CELERY_TASK_SOFT_TIME_LIMIT = max(CELERY_TASK_TIME_LIMIT - 60, 30)
# The cache holds what must be the same in every process: the password-reset mail limit (one mail per
# account per PASSWORD_RESET_MAIL_MINUTES, fleet/accounts.py), claimed by the web processes and freed
# by a worker whose mail failed. Each process's own memory (Django's default) made that limit per
# process; with REDIS_URL it lives in that Redis, under the prefix "fleet-triage" (the application
# never calls cache.clear(), which would empty the whole Redis database, the task queue's too). Login
# throttling (django-axes) counts failures in the database, in every process alike.
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "fleet-triage",
            "OPTIONS": {"socket_connect_timeout": 5, "socket_timeout": 5},
        }
    }
if REDIS_URL:
    CELERY_BROKER_URL = REDIS_URL
    CELERY_RESULT_BACKEND = REDIS_URL
    CELERY_TASK_ALWAYS_EAGER = False
else:
    # Embedded mode: no broker; .delay() runs the task in-process.
    CELERY_BROKER_URL = "memory://localhost/"  # with a host: kombu warns on every use without one
    CELERY_RESULT_BACKEND = "cache+memory://"
    CELERY_TASK_ALWAYS_EAGER = True
CELERY_TASK_EAGER_PROPAGATES = True
# A task unacknowledged for longer than this is handed to another worker. It must exceed the
# longest task (the hard time limit), or a slow but healthy task would run twice.
CELERY_VISIBILITY_TIMEOUT = env_int("CELERY_VISIBILITY_TIMEOUT", CELERY_TASK_TIME_LIMIT + 15 * 60, minimum=5)
# A new worker takes back a dead worker's unacknowledged tasks in a sweep; kombu's default sweep
# runs every ~100 s (interval 10 s x throttle 10). One sweep per quarter timeout (at most a minute).
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": CELERY_VISIBILITY_TIMEOUT,
    "unacked_restore_interval": max(1, min(60, CELERY_VISIBILITY_TIMEOUT // 4)),
    "unacked_restore_throttle": 1,
}
CELERY_RESULT_BACKEND_TRANSPORT_OPTIONS = {"visibility_timeout": CELERY_VISIBILITY_TIMEOUT}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Ingest and triage tasks run for minutes; a worker must not hoard queued tasks it cannot start.
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ACKS_LATE = False  # opted into per task, only where the task is idempotent
CELERY_TASK_TRACK_STARTED = True
CELERY_RESULT_EXPIRES = 24 * 60 * 60
CELERY_TIMEZONE = "UTC"
# How often a task that kills its worker may be redelivered before it is given up.
CELERY_MAX_DELIVERIES = env_int("CELERY_MAX_DELIVERIES", 3, minimum=1)
# An import whose database connection fails (PostgreSQL restarted, a failover, the network) is
# retried after INGEST_DB_RETRY_BACKOFF seconds, doubled each time up to INGEST_DB_RETRY_BACKOFF_MAX,
# at most INGEST_DB_MAX_RETRIES times (the defaults ride out about 15 minutes of outage).
INGEST_DB_MAX_RETRIES = env_int("INGEST_DB_MAX_RETRIES", 8, minimum=0)
INGEST_DB_RETRY_BACKOFF = env_float("INGEST_DB_RETRY_BACKOFF", 5.0, minimum=0)
INGEST_DB_RETRY_BACKOFF_MAX = env_float("INGEST_DB_RETRY_BACKOFF_MAX", 300.0, minimum=0)
# Jobs an import stores per transaction; the run's progress moves once per batch.
INGEST_STORE_BATCH = env_int("INGEST_STORE_BATCH", 100, minimum=1)
# A task redelivered while another worker still imports its run looks again after this many seconds.
INGEST_BUSY_RETRY_SECONDS = env_int("INGEST_BUSY_RETRY_SECONDS", 60, minimum=1)
# An archive's run still pending this many minutes after its task was queued lost that task (a worker
# lost it, the queue was flushed): beat's sweep, as often, queues it again, or fails it, saying so,
# when its archive is gone. A copy of a task that was only slow finds the run busy or done: harmless.
# On PostgreSQL the same sweep queues again a run left *running* that no worker holds (its worker died
# and the redelivery never came) once CELERY_VISIBILITY_TIMEOUT + this has passed since it started.
INGEST_REQUEUE_MINUTES = env_int("INGEST_REQUEUE_MINUTES", 30, minimum=1)

# --- Product --------------------------------------------------------------------------
LOW_UTIL_THRESHOLD = env_float("LOW_UTIL_THRESHOLD", 50.0, minimum=0, maximum=100)
IDLE_UTIL_THRESHOLD = env_float("IDLE_UTIL_THRESHOLD", 5.0, minimum=0, maximum=100)
# An idle alert is about a job idle *now*: its last sample at most this old (0: any age). An archive
# of last week's jobs, some still running when it was written, alerts no one.
IDLE_ALERT_MAX_AGE_MINUTES = env_int("IDLE_ALERT_MAX_AGE_MINUTES", 6 * 60, minimum=0)
# Teams' chat webhooks for idle alerts (triage/digests/webhooks.py): each POST waits at most this many
# seconds; a webhook URL must be https, http only to this machine (loopback) unless this allows it
# anywhere (a webhook URL carries its secret in its path, which http sends in the clear).
ALERT_WEBHOOK_TIMEOUT = env_float("ALERT_WEBHOOK_TIMEOUT", 10.0, minimum=0.1)
ALERT_WEBHOOK_ALLOW_HTTP = env_bool("ALERT_WEBHOOK_ALLOW_HTTP", DEBUG)
# A webhook is never posted to an internal address (loopback, private, link-local such as the cloud's
# metadata service 169.254.169.254, multicast, reserved, unspecified), checked on the address connected
# to, unless it is in one of these networks (CIDRs, comma-separated, e.g. an internal Mattermost's
# 10.20.0.0/16; a single address is its own /32 or /128). Connectors are not held to this.
ALERT_WEBHOOK_ALLOWED_NETWORKS = env_list("ALERT_WEBHOOK_ALLOWED_NETWORKS", [])
for _entry in ALERT_WEBHOOK_ALLOWED_NETWORKS:
    try:
        ipaddress.ip_network(_entry, strict=False)
    except ValueError:
        raise ImproperlyConfigured(
            f"ALERT_WEBHOOK_ALLOWED_NETWORKS: {_entry!r} is not a network (e.g. 10.20.0.0/16, fd00::/8) or an address."
        ) from None
DEFAULT_CURRENCY = env_str("DEFAULT_CURRENCY", "USD")
# Per-artifact size cap at ingest; bigger logs are kept truncated with a note.
ARTIFACT_MAX_BYTES = env_int("ARTIFACT_MAX_BYTES", 20 * 1024 * 1024, minimum=1024)

# --- Archive uploads and hostile-archive limits ------------------------------------------
# Largest archive accepted by the upload page and the API, in bytes; refused (413) before the body
# is read when Content-Length says so, and while streaming otherwise. Keep it at or below the
# proxy's own limit (nginx client_max_body_size).
UPLOAD_MAX_BYTES = env_int("UPLOAD_MAX_BYTES", 4 * 1024**3, minimum=1024)
# Where uploaded archives wait (under generated names) for their ingest run; workers must see it.
UPLOAD_DIR = Path(env_str("UPLOAD_DIR", str(DATA_DIR / "uploads"))).resolve()
# Django spools uploads bigger than FILE_UPLOAD_MAX_MEMORY_SIZE here; same disk as UPLOAD_DIR, so
# keeping the upload is a rename, not a copy.
FILE_UPLOAD_TEMP_DIR = str(UPLOAD_DIR / "incoming")
Path(FILE_UPLOAD_TEMP_DIR).mkdir(parents=True, exist_ok=True)
# Where an import spills an archive's metrics and artifacts while it runs (removed after each run).
# It needs room for the uncompressed archive: keep it on the data disk, not in a RAM-backed /tmp.
ARCHIVE_WORK_DIR = Path(env_str("ARCHIVE_WORK_DIR", str(DATA_DIR / "work"))).resolve()
# Limits on what an archive may expand to, counted while streaming (never from its headers):
ARCHIVE_MAX_MEMBERS = env_int("ARCHIVE_MAX_MEMBERS", 200_000, minimum=1)
ARCHIVE_MAX_MEMBER_BYTES = env_int("ARCHIVE_MAX_MEMBER_BYTES", 16 * 1024**3, minimum=1024)
ARCHIVE_MAX_TOTAL_BYTES = env_int("ARCHIVE_MAX_TOTAL_BYTES", 64 * 1024**3, minimum=1024)
# Decompressed bytes per compressed byte of a zip member or a whole tarball (above 1 MiB).
ARCHIVE_MAX_RATIO = env_float("ARCHIVE_MAX_RATIO", 200.0, minimum=1.0)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        # Its DEBUG lines name each request's path, and a chat webhook's path is its secret.
        "urllib3.connectionpool": {"level": "INFO"},
    },
}

# --- Connectors (fleet/connectors, docs/connectors.md) ----------------------------------
# A Fernet key for connector secrets stored in the database; without one it is derived from
# SECRET_KEY (then rotating SECRET_KEY means entering the secrets again).
CONNECTOR_SECRET_KEY = env_str("CONNECTOR_SECRET_KEY")
# Refused here, at start-up, rather than at the first connector secret stored or read (the key is
# never repeated: it is a secret).
try:
    if CONNECTOR_SECRET_KEY:
        Fernet(CONNECTOR_SECRET_KEY.encode())
except ValueError:
    raise ImproperlyConfigured(
        "CONNECTOR_SECRET_KEY is not a Fernet key (32 bytes in URL-safe base64, 44 characters); make one with "
        '`python -c "from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())"`, '
        "or unset it to derive the key from SECRET_KEY."
    ) from None
# What a connector's secret reference may name (fleet/connectors/secrets.py): operators are not the
# server's administrators, and env:SECRET_KEY or file:/etc/... on a connector pointed at a server of
# their own would send it there. Variables: names, or prefixes ending in *; files: under these folders.
CONNECTOR_SECRET_ENV = env_list("CONNECTOR_SECRET_ENV", ["FLEET_SECRET_*"])
CONNECTOR_SECRET_DIRS = env_list("CONNECTOR_SECRET_DIRS", [])
for _entry in CONNECTOR_SECRET_ENV:
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*\*?", _entry):
        raise ImproperlyConfigured(
            f"CONNECTOR_SECRET_ENV: {_entry!r} is not a variable name or a prefix ending in * (e.g. FLEET_SECRET_*)."
        )
for _entry in CONNECTOR_SECRET_DIRS:
    if not _entry.startswith("/") or Path(_entry).resolve() == Path("/"):
        raise ImproperlyConfigured(f"CONNECTOR_SECRET_DIRS: {_entry!r} is not an absolute folder other than /.")
CONNECTOR_HTTP_TIMEOUT = env_float("CONNECTOR_HTTP_TIMEOUT", 30.0, minimum=0.1)
CONNECTOR_HTTP_RETRIES = env_int("CONNECTOR_HTTP_RETRIES", 5, minimum=0)
CONNECTOR_HTTP_BACKOFF = env_float("CONNECTOR_HTTP_BACKOFF", 1.0, minimum=0)  # seconds, doubled per retry, + jitter
CONNECTOR_HTTP_BACKOFF_MAX = env_float("CONNECTOR_HTTP_BACKOFF_MAX", 60.0, minimum=0)
CONNECTOR_RETRY_AFTER_MAX = env_float("CONNECTOR_RETRY_AFTER_MAX", 300.0, minimum=0)  # cap on a server's Retry-After
# A pull's lease on its connector; it must outlive the longest pull (the task's hard time limit).
CONNECTOR_LOCK_SECONDS = CELERY_TASK_TIME_LIMIT + 60
# Jobs a connector's deletion (fleet.delete_connector) deletes per transaction; its progress moves once per batch.
JOB_DELETE_BATCH = env_int("JOB_DELETE_BATCH", 500, minimum=1)
CELERY_BEAT_SCHEDULE = globals().get("CELERY_BEAT_SCHEDULE", {})
# Raw series of jobs that ended more than this many days ago are deleted daily (jobs, summary
# figures and findings stay); 0 keeps them for ever. See docs/operations.md.
SERIES_RETENTION_DAYS = env_int("SERIES_RETENTION_DAYS", 0, minimum=0)
CELERY_BEAT_SCHEDULE["fleet.prune_series"] = {
    "task": "fleet.prune_series",
    "schedule": crontab(minute=30, hour=3),
    "options": {"expires": 6 * 60 * 60},
}
# A tick that waited over a minute (no worker free, or none running) is dropped: the next one does its work.
CELERY_BEAT_SCHEDULE["fleet.schedule_connectors"] = {
    "task": "fleet.schedule_connectors",
    "schedule": 60.0,
    "options": {"expires": 60.0},
}
CELERY_BEAT_SCHEDULE["fleet.recover_pending_runs"] = {
    "task": "fleet.recover_pending_runs",
    "schedule": INGEST_REQUEUE_MINUTES * 60.0,
    "options": {"expires": INGEST_REQUEUE_MINUTES * 60.0},
}
# A deletion (a team's, an ingest run's, chosen jobs', a connector's) asked for this many minutes ago whose
# lease has run out lost its task: beat's sweep, as often, queues it again (fleet.resume_deletions).
DELETION_REQUEUE_MINUTES = env_int("DELETION_REQUEUE_MINUTES", 5, minimum=1)
CELERY_BEAT_SCHEDULE["fleet.resume_deletions"] = {
    "task": "fleet.resume_deletions",
    "schedule": DELETION_REQUEUE_MINUTES * 60.0,
    "options": {"expires": DELETION_REQUEUE_MINUTES * 60.0},
}
# Jobs without a triage result this many minutes after they were stored are queued again (their
# triage task was lost, e.g. with the broker); at most TRIAGE_SWEEP_LIMIT jobs per sweep.
# What triage reads of one job's logs, scripts and traces at most (a job can bring a repository).
TRIAGE_READ_FILES = env_int("TRIAGE_READ_FILES", 500, minimum=1)
TRIAGE_READ_BYTES = env_int("TRIAGE_READ_BYTES", 64 * 2**20, minimum=2**20)
TRIAGE_SWEEP_MINUTES = env_int("TRIAGE_SWEEP_MINUTES", 15, minimum=1)
TRIAGE_SWEEP_LIMIT = env_int("TRIAGE_SWEEP_LIMIT", 20_000, minimum=1)
# The same sweep re-triages at most this many jobs whose findings an older release's rules made
# (triage.rules.RULES_REVISION), the longest triaged first, once the batch before is done.
TRIAGE_RULES_CATCHUP_BATCH = env_int("TRIAGE_RULES_CATCHUP_BATCH", 1_000, minimum=1)
# Jobs per triage task: an import queues the triage of its jobs, a saved rule set the re-triage of every
# job, in tasks of this many (tests lower it so that a few jobs make several tasks).
RETRIAGE_BATCH = env_int("RETRIAGE_BATCH", 200, minimum=1)
CELERY_BEAT_SCHEDULE["triage.sweep_untriaged"] = {
    "task": "triage.sweep_untriaged",
    "schedule": TRIAGE_SWEEP_MINUTES * 60.0,
    "options": {"expires": TRIAGE_SWEEP_MINUTES * 60.0},
}

# --- Email and weekly digests (triage/digests, README "Weekly digests") ----------------------
# With EMAIL_HOST set, mail goes out over SMTP; without it, to the console (development).
EMAIL_HOST = env_str("EMAIL_HOST")
EMAIL_BACKEND = env_str(
    "EMAIL_BACKEND",
    "django.core.mail.backends.smtp.EmailBackend" if EMAIL_HOST else "django.core.mail.backends.console.EmailBackend",
)
EMAIL_PORT = env_int("EMAIL_PORT", 587 if env_bool("EMAIL_USE_TLS", False) else 25, minimum=1)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)  # STARTTLS
EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL", False)  # implicit TLS (port 465)
if EMAIL_USE_TLS and EMAIL_USE_SSL:
    raise ImproperlyConfigured("Set at most one of EMAIL_USE_TLS and EMAIL_USE_SSL.")
# Without a timeout a hung mail server would hold a worker forever.
EMAIL_TIMEOUT = env_float("EMAIL_TIMEOUT", 30.0, minimum=1)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "Fleet Triage <fleet-triage@localhost>")
SERVER_EMAIL = DEFAULT_FROM_EMAIL
DIGEST_FROM_EMAIL = env_str("DIGEST_FROM_EMAIL", DEFAULT_FROM_EMAIL)
# When the weekly digests go out, in DIGEST_TIMEZONE; they report the last complete ISO week (UTC).
DIGEST_WEEKDAY = env_str("DIGEST_WEEKDAY", "mon").strip().lower()[:3]
if DIGEST_WEEKDAY not in {"mon", "tue", "wed", "thu", "fri", "sat", "sun"}:
    raise ImproperlyConfigured(f"DIGEST_WEEKDAY={DIGEST_WEEKDAY!r} is not a weekday (mon ... sun).")
DIGEST_HOUR = env_int("DIGEST_HOUR", 7, minimum=0)
if DIGEST_HOUR > 23:
    raise ImproperlyConfigured(f"DIGEST_HOUR={DIGEST_HOUR} is not an hour of the day (0-23).")
DIGEST_TIMEZONE = env_str("DIGEST_TIMEZONE", "UTC")
try:
    from zoneinfo import ZoneInfo

    ZoneInfo(DIGEST_TIMEZONE)
except (ValueError, KeyError, OSError):
    raise ImproperlyConfigured(f"DIGEST_TIMEZONE={DIGEST_TIMEZONE!r} is not an IANA time zone.") from None
# SMTP errors are retried this often, after DIGEST_RETRY_BACKOFF seconds, doubled each time (capped).
DIGEST_MAX_RETRIES = env_int("DIGEST_MAX_RETRIES", 5, minimum=0)
DIGEST_RETRY_BACKOFF = env_float("DIGEST_RETRY_BACKOFF", 60.0, minimum=0)
DIGEST_RETRY_BACKOFF_MAX = env_float("DIGEST_RETRY_BACKOFF_MAX", 3600.0, minimum=0)
DIGEST_TOP_JOBS = env_int("DIGEST_TOP_JOBS", 10, minimum=1)
DIGEST_TOP_TEAMS = env_int("DIGEST_TOP_TEAMS", 10, minimum=1)


def _digest_schedule():
    from triage.digests.schedules import ZonedCrontab

    return ZonedCrontab(minute=0, hour=DIGEST_HOUR, day_of_week=DIGEST_WEEKDAY, zone=DIGEST_TIMEZONE)


CELERY_BEAT_SCHEDULE = globals().get("CELERY_BEAT_SCHEDULE", {})
# A beat that was down at the hour sends late when it comes back; a run expired after 6 h is dropped.
CELERY_BEAT_SCHEDULE["digests.send_weekly"] = {
    "task": "digests.send_weekly",
    "schedule": _digest_schedule(),
    "options": {"expires": 6 * 60 * 60},
}
