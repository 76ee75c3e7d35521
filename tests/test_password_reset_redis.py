"""The password-reset mail limit (one mail per account per PASSWORD_RESET_MAIL_MINUTES) against the real
Redis: it was kept in each process's memory (Django's default cache), so with several web processes an
address entered again reached another process and was mailed again, and a worker whose mail failed freed
the limit in its own memory, not in the web process that claimed it. With REDIS_URL the cache is Redis.

CI provides Redis as REDIS_URL; these tests use another database number of it (conftest's
redis_db_below(), next to the test worker's own), and delete only the keys they made."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
from django.test import Client
from django.urls import reverse

from fleet import accounts
from tests.conftest import redis_db_below, require_service
from tests.test_digests import smtp  # noqa: F401  (the SMTP server fixture)
from tests.test_password_reset import ask, forget_cooldowns  # noqa: F401

pytestmark = pytest.mark.django_db

REPO = Path(__file__).resolve().parent.parent
REDIS_CACHE = "django.core.cache.backends.redis.RedisCache"


def redis_url() -> str:
    """REDIS_URL with a database number of these tests' own: not the queue's, nor another test's."""
    parts = urlsplit(require_service("REDIS_URL"))
    return urlunsplit(parts._replace(path=f"/{redis_db_below()}"))


def another_process(code: str, url: str) -> str:
    """Run `code` in a separate Python process configured as a web process or worker is, REDIS_URL=url."""
    env = {**os.environ, "REDIS_URL": url, "DJANGO_SETTINGS_MODULE": "config.settings", "DEBUG": "1",
           "SECRET_KEY": "another-process"}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); from fleet import accounts; print({code})"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.fixture
def redis_cache(settings):
    url = redis_url()
    settings.CACHES = {"default": {"BACKEND": REDIS_CACHE, "LOCATION": url, "KEY_PREFIX": "fleet-triage"}}
    forget_cooldowns()
    yield url
    forget_cooldowns()


def test_with_redis_url_the_cache_is_redis_under_the_service_s_prefix():
    code = "from django.conf import settings; c = settings.CACHES['default']; print(c['BACKEND'], c.get('LOCATION'))"
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"} | {"DEBUG": "1", "SECRET_KEY": "x"}
    for url, said in (("redis://:pw@redis:6379/0", f"{REDIS_CACHE} redis://:pw@redis:6379/0"),
                      ("", "django.core.cache.backends.locmem.LocMemCache None")):  # fmt: skip
        done = subprocess.run(
            [sys.executable, "-c", f"import django; django.setup(); {code}"],
            cwd=REPO, env={**env, "REDIS_URL": url, "DJANGO_SETTINGS_MODULE": "config.settings"},
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.stdout.strip() == said, done.stderr


def test_the_mail_limit_holds_across_processes_and_a_worker_frees_it(member_a, redis_cache, smtp, ask):  # noqa: F811
    # Another web process mailed this account a minute ago: this one mails nothing.
    assert another_process(f"accounts.claim_cooldown({member_a.pk})", redis_cache) == "True"
    assert ask("alice-member@example.org").status_code == 302
    assert smtp.messages == []
    # The worker whose mail failed frees the limit (fleet.send_password_reset): the next ask is mailed,
    # and then the other process may not mail again.
    assert another_process(f"accounts.forget_cooldown({member_a.pk})", redis_cache) == "None"
    assert ask("alice-member@example.org").status_code == 302
    assert [m["To"] for m in smtp.messages] == ["alice-member@example.org"]
    assert another_process(f"accounts.claim_cooldown({member_a.pk})", redis_cache) == "False"


def test_redis_down_sends_no_mail_and_the_page_looks_the_same(member_a, settings, smtp, ask, caplog):  # noqa: F811
    """The queue is on the same Redis, so no mail could be queued anyway; the page must not turn into a
    server error, which would tell that the address has an account."""
    settings.CACHES = {"default": {"BACKEND": REDIS_CACHE, "LOCATION": "redis://127.0.0.1:1/0"}}
    known, unknown = ask("alice-member@example.org"), ask("nobody@example.org")
    assert (known.status_code, known["Location"]) == (unknown.status_code, unknown["Location"])
    assert known["Location"] == reverse("password_reset_done") and smtp.messages == []
    assert Client().get(known["Location"]).status_code == 200
    assert f"No password reset mail for user {member_a.pk}: the cache could not be reached" in caplog.text
    accounts.forget_cooldown(member_a.pk)  # a worker's, with Redis down: logged, not raised
