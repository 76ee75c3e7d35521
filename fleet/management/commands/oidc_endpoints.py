"""Print the OIDC_* endpoint settings of an OpenID Connect provider, read from its discovery document
(<issuer>/.well-known/openid-configuration), for the environment of single sign-on (README "Single
sign-on"). The service itself never asks for the document: its endpoints are settings, checked at
start-up, so a provider that is down cannot stop it starting."""

from __future__ import annotations

import requests
from django.core.management.base import BaseCommand, CommandError

FIELDS = {
    "OIDC_AUTHORIZATION_ENDPOINT": "authorization_endpoint",
    "OIDC_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_USERINFO_ENDPOINT": "userinfo_endpoint",
    "OIDC_JWKS_URI": "jwks_uri",
}


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser):
        parser.add_argument("issuer", help="The provider's issuer, e.g. https://sso.example.org/realms/gpu")
        parser.add_argument("--timeout", type=float, default=10.0, help="Seconds to wait for the provider.")

    def handle(self, *args, issuer: str, timeout: float, **options):
        issuer = issuer.rstrip("/")
        url = f"{issuer}/.well-known/openid-configuration"
        try:
            response = requests.get(url, timeout=timeout)
            response.raise_for_status()
            document = response.json()
        except requests.RequestException as exc:
            raise CommandError(f"{url} could not be read: {exc}") from None
        except ValueError:
            raise CommandError(f"{url} is not JSON: is {issuer!r} the issuer?") from None
        if not isinstance(document, dict):
            raise CommandError(f"{url} is not a discovery document.")
        if document.get("issuer") != issuer:
            # The ID tokens will name this issuer; OIDC_ISSUER must be it exactly.
            raise CommandError(f"{url} names the issuer {document.get('issuer')!r}, not {issuer!r}: use that one.")
        missing = [field for field in FIELDS.values() if not isinstance(document.get(field), str)]
        if missing:
            raise CommandError(f"{url} lists no {', '.join(missing)}.")
        self.stdout.write(f"OIDC_ISSUER={issuer}")
        for setting, field in FIELDS.items():
            self.stdout.write(f"{setting}={document[field]}")
        if isinstance(document.get("end_session_endpoint"), str):  # optional: logging out ends its session too
            self.stdout.write(f"OIDC_END_SESSION_ENDPOINT={document['end_session_endpoint']}")
        algorithms = document.get("id_token_signing_alg_values_supported") or []
        if algorithms and "RS256" not in algorithms:
            self.stdout.write(f"OIDC_SIGN_ALGO={algorithms[0]}")
