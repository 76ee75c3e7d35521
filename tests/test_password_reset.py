"""A forgotten password: Django's reset flow, its mail through a real SMTP server on loopback
(aiosmtpd). Before, only an operator could set a new password; now the login page offers a link."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest
from django.core.cache import cache
from django.test import Client
from django.urls import reverse

from tests.conftest import free_port as _free_port
from tests.test_digests import BASE_URL, smtp  # noqa: F401  (smtp: the SMTP server fixture)

pytestmark = pytest.mark.django_db

OLD_PASSWORD = "correct horse battery staple"
NEW_PASSWORD = "a brand new passphrase 42"


def forget_cooldowns() -> None:
    """Delete earlier tests' "one mail per 15 minutes" (user ids repeat). With REDIS_URL (CI) the cache is
    Redis, shared with the task queue: only those keys are deleted there, never the whole database."""
    from django.core.cache import caches
    from django.core.cache.backends.redis import RedisCache

    backend = caches["default"]  # `cache` is a proxy to it
    if isinstance(backend, RedisCache):
        client = backend._cache.get_client(write=True)
        for key in client.scan_iter(match=backend.make_key("password-reset-mail:*")):
            client.delete(key)
    else:
        backend.clear()


@pytest.fixture(autouse=True)
def _no_earlier_cooldowns():
    forget_cooldowns()
    yield
    forget_cooldowns()


@pytest.fixture
def ask(django_capture_on_commit_callbacks):
    """Enter an address on the reset page; the mail is queued when the request's transaction commits."""

    def post(email: str, **client_options):
        with django_capture_on_commit_callbacks(execute=True):
            return Client(**client_options).post(reverse("password_reset"), {"email": email})

    return post


def _link(message) -> str:
    return re.search(r"https?://\S+", message.get_content()).group(0)


def test_the_login_page_offers_a_reset(client):
    page = client.get(reverse("login")).content.decode()
    assert f'href="{reverse("password_reset")}"' in page and "Forgot your password?" in page


def test_a_member_resets_a_forgotten_password_from_the_mailed_link(member_a, smtp, ask):  # noqa: F811
    elsewhere = Client()
    elsewhere.post(reverse("login"), {"username": "alice-member", "password": OLD_PASSWORD})

    # The request names another host: the link still goes to PUBLIC_BASE_URL.
    response = ask("ALICE-member@example.org", HTTP_HOST="localhost")
    assert response.status_code == 302 and response["Location"] == reverse("password_reset_done")
    [message] = smtp.messages
    assert message["To"] == "alice-member@example.org"
    link = _link(message)
    assert link.startswith(BASE_URL + "/password/reset/"), link
    assert "alice-member" in message.get_content() and "within 60 minutes" in message.get_content()

    browser = Client()
    form = browser.get(urlsplit(link).path, follow=True)
    assert form.status_code == 200 and b"Choose a new password" in form.content
    done = browser.post(
        form.redirect_chain[-1][0], {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD}, follow=True
    )
    assert done.redirect_chain[-1][0] == reverse("password_reset_complete") and b"Password set" in done.content

    assert Client().post(reverse("login"), {"username": "alice-member", "password": NEW_PASSWORD}).status_code == 302
    assert Client().post(reverse("login"), {"username": "alice-member", "password": OLD_PASSWORD}).status_code == 200
    gone = elsewhere.get(reverse("dashboard:overview"))
    assert gone.status_code == 302 and "/login/" in gone["Location"], "the other session is logged out"
    again = Client().get(urlsplit(link).path, follow=True)
    assert b"This link no longer works" in again.content, "a link works once"


def test_the_answer_does_not_say_whether_an_address_has_an_account(member_a, smtp, ask):  # noqa: F811
    known, unknown = ask("alice-member@example.org"), ask("nobody@example.org")
    assert (known.status_code, known["Location"]) == (unknown.status_code, unknown["Location"])
    assert known.content == unknown.content
    assert Client().get(known["Location"]).content == Client().get(unknown["Location"]).content
    assert [m["To"] for m in smtp.messages] == ["alice-member@example.org"]


def test_an_address_asked_again_and_again_gets_one_mail(member_a, smtp, settings, ask):  # noqa: F811
    """The form must not let anyone flood a mailbox: one mail per account per PASSWORD_RESET_MAIL_MINUTES."""
    assert settings.PASSWORD_RESET_MAIL_MINUTES == 15
    for _ in range(5):
        assert ask("alice-member@example.org").status_code == 302
    assert len(smtp.messages) == 1


def test_a_mail_server_that_is_down_changes_nothing_the_page_shows(member_a, settings, ask):
    """In-process (no worker) the mail is sent during the request: a failure there must not turn
    into a server error, which would tell that the address has an account."""
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = "127.0.0.1", _free_port(), 2
    response = ask("alice-member@example.org")
    assert response.status_code == 302 and response["Location"] == reverse("password_reset_done")
    # Nothing went out, so the person may ask again at once (no cooldown started).
    assert not cache.get(f"password-reset-mail:{member_a.pk}")


def test_an_inactive_account_or_one_without_a_password_gets_no_mail(member_a, outsider, smtp, ask):  # noqa: F811
    member_a.is_active = False
    member_a.save()
    outsider.set_unusable_password()
    outsider.save()
    ask("alice-member@example.org")
    ask("oscar-outsider@example.org")
    assert smtp.messages == []
