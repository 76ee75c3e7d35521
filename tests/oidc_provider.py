"""A real OpenID Connect provider on loopback, for the single sign-on tests (tests/test_sso.py).

    with FakeProvider() as provider:
        provider.person = {"sub": "u-1", "preferred_username": "ada", "groups": ["gpu-vision"]}
        provider.url            # the issuer; /auth, /token, /userinfo and /jwks under it

It serves the authorization endpoint (which signs the person in at once and sends the browser back
to the redirect_uri with a code and the state), the token endpoint (which checks the client secret,
the redirect_uri and the PKCE verifier, and answers an RS256 ID token carrying the nonce), the
userinfo endpoint (bearer token), the JWKS and the end_session endpoint (RP-initiated logout: it
checks the id_token_hint is one of its own, ends the person's session here and sends the browser to
the post_logout_redirect_uri). `signed_in` is whether the person has a session at the provider: an
ordinary sign-in opens it, a logout ends it, and a silent one (prompt=none) without it answers
error=login_required, as a real provider does; `auth_requests` and `logouts` are what was asked.
`tamper` makes the next ID tokens wrong on purpose: "nonce", "signature" (signed by another key
under the same kid), "issuer" or "audience". An outage short of stopping it: `unavailable` is a
status every request is answered with (503: a proxy in front of a provider that is down), `stall`
seconds every request waits before its answer (a provider that accepts connections and hangs; a
request still waiting when the provider stops ends then, unanswered, leaving no thread behind);
`discovery_requests` counts the GETs of its /.well-known/openid-configuration.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import itertools
import json
import time
from urllib.parse import parse_qs, urlencode, urlsplit

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from tests.loopback import LoopbackServer

CLIENT_ID = "fleet-triage"
CLIENT_SECRET = "s3cret-of-the-client"  # noqa: S105 (a test's)
KID = "test-key-1"


@functools.cache
def signing_keys() -> tuple[rsa.RSAPrivateKey, rsa.RSAPrivateKey]:
    """The provider's key and a forger's, made once per test run (2048-bit RSA takes a while)."""
    return tuple(rsa.generate_private_key(public_exponent=65537, key_size=2048) for _ in range(2))


class FakeProvider(LoopbackServer):
    def __init__(self):
        super().__init__()
        self.key, self.other_key = signing_keys()
        self.person: dict = {}
        self.tamper = ""
        self.userinfo_leaves_out: set[str] = set()  # claims only the ID token carries (Entra ID's groups)
        self.grants: dict[str, dict] = {}
        self.tokens: dict[str, dict] = {}
        self.token_requests: list[dict] = []
        self.counter = itertools.count(1)
        self.signed_in = False  # a session at the provider: opened by a sign-in, ended by a logout
        self.auth_requests: list[dict] = []
        self.logouts: list[dict] = []
        self.unavailable: int | None = None
        self.stall = 0.0
        self.discovery_requests = 0

    @property
    def url(self) -> str:
        return f"{self.origin}/realms/gpu"

    def environment(self) -> dict[str, str]:
        """The environment a deployment would set for this provider."""
        return {
            "OIDC_ISSUER": self.url,
            "OIDC_AUTHORIZATION_ENDPOINT": f"{self.url}/auth",
            "OIDC_TOKEN_ENDPOINT": f"{self.url}/token",
            "OIDC_USERINFO_ENDPOINT": f"{self.url}/userinfo",
            "OIDC_JWKS_URI": f"{self.url}/jwks",
            "OIDC_END_SESSION_ENDPOINT": f"{self.url}/logout",
            "OIDC_CLIENT_ID": CLIENT_ID,
            "OIDC_CLIENT_SECRET": CLIENT_SECRET,
            "OIDC_PROVIDER_NAME": "Keycloak",
            "OIDC_SCOPES": "openid email profile groups",
        }

    # --- the endpoints ---------------------------------------------------------------------
    @staticmethod
    def answer(handler, status: int, body: dict | None = None, headers: dict | None = None) -> None:
        data = json.dumps(body).encode() if body is not None else b""
        handler.send_response(status)
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    def handle(self, handler) -> None:
        if urlsplit(handler.path).path.endswith("/.well-known/openid-configuration"):
            self.discovery_requests += 1
        if self.stall and self.closing.wait(self.stall):
            return None  # stopped while stalling: the client gave up long ago; answer nothing, end now
        if self.unavailable is not None:
            return self.answer(handler, self.unavailable, {"error": "temporarily_unavailable"})
        return super().handle(handler)

    def get(self, handler) -> None:
        parts = urlsplit(handler.path)
        query = {key: values[0] for key, values in parse_qs(parts.query).items()}
        path = parts.path.removeprefix("/realms/gpu")
        if path == "/auth":
            self.auth_requests.append(query)
            if query.get("client_id") != CLIENT_ID or query.get("response_type") != "code":
                return self.answer(handler, 400, {"error": "invalid_request"})
            if query.get("prompt") == "none" and not self.signed_in:
                back = f"{query['redirect_uri']}?{urlencode({'error': 'login_required', 'state': query['state']})}"
                return self.answer(handler, 302, None, {"Location": back})
            self.signed_in = True
            code = f"code-{next(self.counter)}"
            self.grants[code] = {**query, "person": dict(self.person)}
            back = f"{query['redirect_uri']}?{urlencode({'code': code, 'state': query['state']})}"
            return self.answer(handler, 302, None, {"Location": back})
        if path == "/logout":
            self.logouts.append(query)
            try:
                jwt.decode(
                    query.get("id_token_hint", ""),
                    self.key.public_key(),
                    algorithms=["RS256"],
                    audience=CLIENT_ID,
                    options={"verify_exp": False},  # an expired hint is still a hint
                )
            except jwt.PyJWTError:
                return self.answer(handler, 400, {"error": "invalid_request", "error_description": "id_token_hint"})
            self.signed_in = False
            if query.get("post_logout_redirect_uri"):
                return self.answer(handler, 302, None, {"Location": query["post_logout_redirect_uri"]})
            return self.answer(handler, 200, {"signed_out": True})
        if path == "/userinfo":
            token = handler.headers.get("Authorization", "").removeprefix("Bearer ")
            if token not in self.tokens:
                return self.answer(handler, 401, {"error": "invalid_token"})
            return self.answer(handler, 200, self.tokens[token])
        if path == "/.well-known/openid-configuration":
            return self.answer(
                handler,
                200,
                {
                    "issuer": self.url,
                    "authorization_endpoint": f"{self.url}/auth",
                    "token_endpoint": f"{self.url}/token",
                    "userinfo_endpoint": f"{self.url}/userinfo",
                    "jwks_uri": f"{self.url}/jwks",
                    "end_session_endpoint": f"{self.url}/logout",
                    "id_token_signing_alg_values_supported": ["RS256"],
                },
            )
        if path == "/jwks":
            jwk = RSAAlgorithm.to_jwk(self.key.public_key(), as_dict=True)
            return self.answer(handler, 200, {"keys": [{**jwk, "kid": KID, "alg": "RS256", "use": "sig"}]})
        return self.answer(handler, 404, {"error": "not_found"})

    def post(self, handler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        form = {key: values[0] for key, values in parse_qs(handler.rfile.read(length).decode()).items()}
        self.token_requests.append(form)
        if urlsplit(handler.path).path.removeprefix("/realms/gpu") != "/token":
            return self.answer(handler, 404, {"error": "not_found"})
        grant = self.grants.pop(form.get("code", ""), None)  # a code works once
        if form.get("client_id") != CLIENT_ID or form.get("client_secret") != CLIENT_SECRET:
            return self.answer(handler, 401, {"error": "invalid_client"})
        if grant is None or form.get("redirect_uri") != grant["redirect_uri"]:
            return self.answer(handler, 400, {"error": "invalid_grant"})
        verifier = form.get("code_verifier", "")
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
        if grant.get("code_challenge_method") != "S256" or challenge != grant.get("code_challenge"):
            return self.answer(handler, 400, {"error": "invalid_grant", "error_description": "PKCE"})
        person = grant["person"]
        now = int(time.time())
        claims = {
            "iss": self.url,
            "aud": CLIENT_ID,
            "sub": person["sub"],
            "iat": now,
            "exp": now + 300,
            "nonce": grant.get("nonce"),
            **{key: value for key, value in person.items() if key != "sub"},
        }
        key = self.key
        if self.tamper == "nonce":
            claims["nonce"] = "not-the-nonce"
        elif self.tamper == "issuer":
            claims["iss"] = "https://evil.example/realms/gpu"
        elif self.tamper == "audience":
            claims["aud"] = "another-client"
        elif self.tamper == "signature":
            key = self.other_key
        id_token = jwt.encode(claims, key, algorithm="RS256", headers={"kid": KID})
        access_token = f"access-{next(self.counter)}"
        self.tokens[access_token] = {key: value for key, value in person.items() if key not in self.userinfo_leaves_out}
        return self.answer(handler, 200, {"access_token": access_token, "id_token": id_token, "token_type": "Bearer"})
