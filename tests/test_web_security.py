"""Web hygiene a user relies on without seeing it: throttled logins, CSP, CSRF, deploy checks."""

import os
import subprocess
import sys

import pytest
from django.urls import reverse

from tests.conftest import REPO

pytestmark = pytest.mark.django_db


@pytest.mark.login_throttling
def test_repeated_wrong_passwords_lock_the_login_out(client, member_a, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT):
        client.post(reverse("login"), {"username": "alice-member", "password": "wrong"})
    response = client.post(reverse("login"), {"username": "alice-member", "password": "correct horse battery staple"})
    assert response.status_code == 429
    assert b"Too many failed logins" in response.content
    assert "_auth_user_id" not in client.session


@pytest.mark.login_throttling
def test_one_wrong_password_does_not_lock_the_user_out(client, member_a):
    client.post(reverse("login"), {"username": "alice-member", "password": "wrong"})
    response = client.post(reverse("login"), {"username": "alice-member", "password": "correct horse battery staple"})
    assert response.status_code == 302


def test_pages_carry_a_content_security_policy(client, operator):
    client.force_login(operator)
    policy = client.get(reverse("dashboard:job-list"))["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert "unsafe-eval" not in policy


def test_login_form_refuses_a_post_without_csrf_token(member_a):
    from django.test import Client

    strict = Client(enforce_csrf_checks=True)
    response = strict.post(reverse("login"), {"username": "alice-member", "password": "correct horse battery staple"})
    assert response.status_code == 403


def test_deploy_checks_are_clean_under_production_settings(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in {"DEBUG", "SECRET_KEY", "DATABASE_URL", "REDIS_URL"}} | {
        "DEBUG": "0",
        "HTTPS": "1",
        "SECRET_KEY": "a-long-random-production-secret-key-0123456789-abcdefghijklmnop",
        "ALLOWED_HOSTS": "triage.example.org",
        "DATA_DIR": str(tmp_path),
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_test_client_login_still_works_for_other_tests(client, member_a):
    assert client.login(username="alice-member", password="correct horse battery staple")
