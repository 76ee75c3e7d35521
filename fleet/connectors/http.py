"""The one HTTP client every connector uses: timeouts, retries with backoff and jitter, auth, TLS.

Built on `requests` + `urllib3.Retry` rather than a loop of our own:

- The transport adapter retries connection errors, timeouts before the response, 5xx and 429,
  with exponential backoff plus jitter, honouring `Retry-After` (capped, so a server cannot park
  a worker for hours).
- Failures *while reading the body* (a connection dropped mid-response, a read timeout, JSON cut
  short) happen after the adapter has handed the response over, so they get a second `Retry` of
  the same policy here.
- 4xx other than 429 is not retried: asking again gets the same answer. Nor is a body that is
  complete but not what the contract says (`BadData`).
- Redirects are followed only within the connector's own origin (scheme, host and port; an upgrade
  from http to https on the same host counts as the same). `requests` strips only `Authorization`
  when a redirect leaves the host, so a secret sent in a custom header (`X-SLURM-USER-TOKEN`) or a
  tenant header would be handed to whatever host the `Location` names. A redirect elsewhere is
  refused with a message naming where it pointed; the fix is to set the URL to the final address.
- A failure is told in one plain sentence naming the host and what to check (connection refused,
  an unknown host name, a timeout, TLS, HTTP 401/403/404/429/5xx; see `connection_problem` and
  `status_problem`), which is what the connector's pages show. The library's own text
  ("HTTPConnectionPool(host=..., port=...): Max retries exceeded ...") goes to the log only.
"""

from __future__ import annotations

import base64
import json
import logging
import socket
import ssl
from typing import Any
from urllib.parse import urlsplit

import requests
from requests.adapters import HTTPAdapter
from urllib3.exceptions import (
    ConnectTimeoutError,
    MaxRetryError,
    NameResolutionError,
    NewConnectionError,
    ProtocolError,
    ReadTimeoutError,
)
from urllib3.exceptions import SSLError as Urllib3SSLError
from urllib3.util.retry import Retry

from fleet.canonical import loads_json
from fleet.connectors.base import BadData, ConnectorSettings, JsonString, TransientError
from fleet.logcut import HeadTail
from fleet.quoting import library_error

logger = logging.getLogger(__name__)

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
MAX_RESPONSE_BYTES = 512 * 2**20
# Of an error answer: enough for a Kubernetes `Status` with a long message and its `continue` token.
ERROR_BODY_BYTES = 16_384
USER_AGENT = "fleet-triage-connector/1"


class HttpStatusError(BadData):
    """A 4xx answer (other than 429): the request itself is wrong, asking again will not help."""

    def __init__(self, status: int, url: str, detail: str, document: dict | None = None):
        self.status = status
        self.url = url
        self.detail = detail
        # The answer's JSON object, when it was one (a Kubernetes `Status`: its `metadata.continue` resumes
        # a listing whose token expired); never shown, the message is `detail`, scrubbed.
        self.document = document
        super().__init__(status_problem(status, url, detail))


def where(url: str) -> str:
    """The host (and port, when the URL gives one) a message names."""
    parts = urlsplit(url)
    try:
        host, port = parts.hostname or "", parts.port
    except ValueError:  # a port out of range
        host, port = parts.hostname or "", None
    host = f"[{host}]" if ":" in host else host
    return f"{host}:{port}" if port else (host or url[:200])


def _causes(exc: BaseException) -> list[BaseException]:
    """The exception and every one it wraps: requests wraps urllib3's MaxRetryError, which holds the
    last attempt's error as its `reason`, itself raised from the socket's."""
    seen: list[BaseException] = []
    todo: list = [exc]
    while todo:
        current = todo.pop()
        if not isinstance(current, BaseException) or any(current is known for known in seen):
            continue
        seen.append(current)
        todo += [current.__cause__, current.__context__, getattr(current, "reason", None), *current.args]
    return seen


def connection_problem(exc: BaseException, url: str, timeout_s: float) -> str:
    """What a request that got no answer ran into, in one sentence naming the host and what to check."""
    causes = _causes(exc)

    def any_of(*kinds) -> bool:
        return any(isinstance(cause, kinds) for cause in causes)

    at = where(url)
    if any_of(requests.exceptions.SSLError, Urllib3SSLError, ssl.SSLError):
        return (
            f"The TLS connection to {at} failed (its certificate is not trusted, has expired or names another "
            f"host, or it does not speak https): check the CA bundle and the URL's scheme and host name."
        )
    if any_of(NameResolutionError, socket.gaierror):
        return f"The host name {urlsplit(url).hostname} could not be found: check its spelling in the URL, and the DNS."
    if any_of(ConnectionRefusedError):
        return f"{at} refused the connection: check the port in the URL and that the service is running."
    if any_of(NewConnectionError):  # NewConnectionError is a ConnectTimeoutError to urllib3: before timeouts
        return f"Could not connect to {at}: check the URL, and the network between this server and {at}."
    if any_of(requests.exceptions.ConnectTimeout, ConnectTimeoutError):
        return (
            f"{at} did not take the connection within {timeout_s:g} s: check the host and port, and that no "
            f"firewall drops the traffic."
        )
    if any_of(requests.exceptions.ReadTimeout, ReadTimeoutError, TimeoutError):
        return (
            f"{at} took the connection but did not answer within {timeout_s:g} s: check that the service is "
            f"healthy, or raise CONNECTOR_HTTP_TIMEOUT."
        )
    if any_of(requests.exceptions.ChunkedEncodingError, ProtocolError, ConnectionError):
        return f"{at} broke off the connection before answering in full: check the service, and any proxy before it."
    return f"Could not get an answer from {at}: check the URL, and the network between this server and {at}."


def status_problem(status: int, url: str, detail: str = "") -> str:
    """An HTTP error status, in one sentence naming the host, the server's own words and what to check."""
    at, path = where(url), _without_query(urlsplit(url).path) or "/"
    said = f', "{detail[:200]}"' if detail else ""
    if status == 401:
        return (
            f"{at} refused the credentials (HTTP 401{said}): check the auth kind and the secret, or the "
            f"variable or file it is read from."
        )
    if status == 403:
        return (
            f"{at} does not let these credentials read {path} (HTTP 403{said}): check the permissions of the "
            f"account or token."
        )
    if status == 404:
        return f"{at} has nothing at {path} (HTTP 404{said}): check the path in the URL, and the API version."
    if status == 429:
        return f"{at} answered HTTP 429 (too many requests) to every try at {path}: pull less often, or ask for more."
    if status >= 500:
        return (
            f"{at} answered HTTP {status} (a server error) to every try at {path}: check the service's health and logs."
        )
    return f"{at} refused the request for {path} (HTTP {status}{said}): check the connector's URL and options."


class RedirectRefused(BadData):
    """The platform answered with a redirect to another origin; following it would send our headers there."""


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    default = {"http": 80, "https": 443}.get(parts.scheme)
    return parts.scheme, (parts.hostname or "").lower(), parts.port or default


def same_origin(source: str, target: str) -> bool:
    """Whether a redirect from `source` to `target` stays with the same server (http -> https on the
    default ports of one host included, as browsers and `requests` treat it)."""
    old, new = _origin(source), _origin(target)
    if old == new:
        return True
    return old[1] == new[1] and (old[0], old[2]) == ("http", 80) and (new[0], new[2]) == ("https", 443)


class _OwnOriginSession(requests.Session):
    def rebuild_auth(self, prepared_request, response):
        # Called by `requests` for every redirect hop, before the next request is sent.
        if not same_origin(response.request.url, prepared_request.url):
            target = _origin(prepared_request.url)
            where = f"{target[0]}://{target[1]}" + (f":{target[2]}" if target[2] else "")
            raise RedirectRefused(
                f"{response.request.method} {_without_query(response.request.url)}: HTTP {response.status_code} "
                f"redirects to another server ({where}); not followed, so the connector's secret and headers "
                f"are not sent there. Set the connector URL to the address it should really use."
            )
        super().rebuild_auth(prepared_request, response)


def _without_query(url: str) -> str:
    return url.split("?", 1)[0]


class _BodyError(Exception):
    """The body could not be read completely, or was cut short (`final`: it was read whole and is
    not JSON we can keep, which reading it again would not change)."""

    def __init__(self, message: str, *, not_json: bool = False, final: bool = False):
        super().__init__(message)
        self.not_json = not_json
        self.final = final


class HttpClient:
    def __init__(self, settings: ConnectorSettings, *, max_response_bytes: int = MAX_RESPONSE_BYTES):
        self.settings = settings
        self.base_url = settings.url.rstrip("/")
        self.max_response_bytes = max_response_bytes
        self.session = _OwnOriginSession()
        self.session.headers.update({"User-Agent": USER_AGENT, "Accept": "application/json"})
        self.session.headers.update(settings.headers)
        self.previous_secrets: list[ConnectorSettings] = []
        if settings.basic_auth:
            self.session.auth = settings.basic_auth
        self.session.verify = settings.verify
        # For addresses the platform hands out to fetch a file from elsewhere (a signed storage
        # URL): the same timeouts, retries and TLS policy, and none of the connector's credentials.
        self.bare_session = requests.Session()
        self.bare_session.headers.update({"User-Agent": USER_AGENT})
        self.bare_session.verify = settings.verify
        for session in (self.session, self.bare_session):
            adapter = HTTPAdapter(max_retries=self._retry())
            session.mount("http://", adapter)
            session.mount("https://", adapter)

    def _retry(self) -> Retry:
        s = self.settings
        return Retry(
            total=s.retries,
            connect=s.retries,
            read=s.retries,
            status=s.retries,
            other=0,
            redirect=0,  # redirects are followed by requests (see _OwnOriginSession), not urllib3
            allowed_methods=None,  # every request a connector makes is a read, POST for PromQL included
            status_forcelist=RETRY_STATUSES,
            backoff_factor=s.backoff_s,
            backoff_jitter=s.backoff_s,
            backoff_max=s.backoff_max_s,
            retry_after_max=int(s.retry_after_max_s),
            respect_retry_after_header=True,
            raise_on_status=False,  # the last 5xx/429 response comes back; we raise TransientError
        )

    def _reread_credentials(self) -> bool:
        """Read the connector's secret reference again (HTTP 401: a rotated token file holds a new one);
        True when the credentials changed and are now used."""
        fresh = self.settings.reread()
        if fresh.headers == self.settings.headers and fresh.basic_auth == self.settings.basic_auth:
            return False
        for name in self.settings.headers:
            self.session.headers.pop(name, None)
        self.session.headers.update(fresh.headers)
        self.session.auth = fresh.basic_auth
        self.previous_secrets.append(self.settings)  # still scrubbed from messages
        self.settings = fresh
        return True

    def close(self) -> None:
        self.session.close()
        self.bare_session.close()

    def _scrub(self, text: str) -> str:
        """A server's error text without the connector's secrets, should it quote the request back."""
        secrets: list[str] = []
        for settings in (self.settings, *self.previous_secrets):  # a token rotated away is still one
            values = [value for value in settings.headers.values() if value]
            values += [value.split(" ", 1)[1] for value in values if value.startswith(("Bearer ", "Basic "))]
            secrets += values
            if settings.basic_auth:
                user, password = settings.basic_auth
                # What requests sends, `Authorization: Basic <base64 of user:password>` (Latin-1, as it
                # encodes them), decodes to the password: a server quoting the request back quotes that.
                # Unpadded too, in case the quote drops the trailing '='.
                sent = base64.b64encode(f"{user}:{password}".encode("latin-1")).decode("ascii")
                secrets += [password, sent, sent.rstrip("=")]
        for secret in sorted((s for s in secrets if len(s) >= 4), key=len, reverse=True):
            text = text.replace(secret, "(secret removed)")
        return text

    def url(self, path: str) -> str:
        if path.startswith(("http://", "https://")):
            return path
        return f"{self.base_url}/{path.lstrip('/')}"

    # -- requests ----------------------------------------------------------------------------
    def get_json(self, path: str, params: dict | list | None = None) -> Any:
        return self.request_json("GET", path, params=params)

    def post_form_json(self, path: str, form: dict) -> Any:
        return self.request_json("POST", path, data=form)

    def request_json(self, method: str, path: str, **kwargs) -> Any:
        return self._request(method, path, parse=_parse_json, **kwargs)

    def get_bytes(self, path: str, params: dict | None = None, *, max_bytes: int | None = None) -> bytes:
        return self._request("GET", path, params=params, parse=lambda body: body, max_bytes=max_bytes)

    def get_head_tail(self, path: str, params: dict | None = None, *, max_bytes: int) -> tuple[bytes, bool]:
        """A log, or its first and last halves of `max_bytes` with a marker line between (`fleet.logcut`), and
        whether anything was left out. The whole answer is read as it streams, the middle only counted: a
        log's end says why the job ended, its beginning how it started."""
        return self._request("GET", path, params=params, parse=None, keep=lambda: HeadTail(max_bytes))

    def get_signed_bytes(self, url: str, *, max_bytes: int, head_tail: bool = False):
        """The first `max_bytes` (+ nothing more) of a file at an absolute address the platform gave
        out, such as a pre-signed storage URL: fetched without the connector's auth or headers, so
        they never reach the storage host. With `head_tail`, a log as `get_head_tail` keeps it."""
        if not url.startswith(("http://", "https://")):
            raise BadData(f"{url[:200]!r} is not an http(s) address")
        keep = (lambda: HeadTail(max_bytes)) if head_tail else None
        try:
            return self._request(
                "GET", url, parse=lambda body: body, max_bytes=max_bytes, session=self.bare_session, keep=keep
            )
        except (TransientError, BadData) as exc:
            # The query of a signed URL is its signature: keep it out of messages an operator reads.
            query = urlsplit(url).query
            if not query or query not in str(exc) or type(exc) not in (TransientError, BadData):
                raise
            raise type(exc)(str(exc).replace(query, "(signature removed)")) from None

    def _request(
        self, method: str, path: str, *, parse, max_bytes: int | None = None, session=None, keep=None, **kwargs
    ):
        url = self.url(path)
        own = session is None
        session = session or self.session
        body_retry = self._retry()
        reread = own and self.settings.reread is not None
        while True:
            try:
                # `verify` on each request: requests lets REQUESTS_CA_BUNDLE / CURL_CA_BUNDLE in the
                # environment override a session's CA bundle, so the cluster's CA (a Kubernetes API
                # server's) was not used wherever an image sets those variables for its own use.
                response = session.request(
                    method, url, timeout=self.settings.timeout_s, stream=True, verify=self.settings.verify, **kwargs
                )
            except requests.exceptions.RequestException as exc:
                if _is_body_failure(exc):  # e.g. the server closed the connection after the headers
                    body_retry = self._again(body_retry, method, url, exc)
                    continue
                logger.warning("%s %s failed: %s", method, _without_query(url), exc)
                raise TransientError(connection_problem(exc, url, self.settings.timeout_s)) from exc
            try:
                if response.status_code in RETRY_STATUSES:
                    logger.warning("%s %s: HTTP %s after retries", method, _without_query(url), response.status_code)
                    raise TransientError(status_problem(response.status_code, url))
                if response.status_code == 401 and reread and self._reread_credentials():
                    reread = False  # once a request: a new secret that is refused too is a real refusal
                    logger.info("%s %s: HTTP 401; trying again with the secret read again", method, url)
                    continue
                if response.status_code >= 400:
                    # response.url: after a same-origin redirect, the address that actually answered
                    answered = _without_query(response.url or url)
                    snippet, document = _snippet(response)
                    detail = self._scrub(snippet)
                    logger.warning("%s %s: HTTP %s: %s", method, answered, response.status_code, detail)
                    raise HttpStatusError(response.status_code, answered, detail, document)
                try:
                    if keep is not None:  # a fresh keeper each try: a broken read starts over
                        kept = _stream_into(response, keep())
                        return kept.content(), kept.truncated
                    body = _read_body(response, max_bytes or self.max_response_bytes, truncate=max_bytes is not None)
                    return parse(body)
                except _BodyError as exc:
                    if exc.final:
                        raise BadData(f"{method} {url}: {exc}") from exc
                    body_retry = self._again(body_retry, method, url, exc)
            finally:
                response.close()

    def _again(self, retry: Retry, method: str, url: str, exc: Exception) -> Retry:
        """Count one failed body read against the policy and sleep its backoff; give up when spent."""
        try:
            retry = retry.increment(method, url, error=ProtocolError(str(exc)))
        except MaxRetryError:
            if isinstance(exc, _BodyError) and exc.not_json:
                raise BadData(f"{method} {url}: {exc}") from exc
            logger.warning("%s %s failed while reading the answer: %s", method, _without_query(url), exc)
            if isinstance(exc, _BodyError) and exc.__cause__ is None:  # cut short: our own words already
                raise TransientError(f"{method} {url}: {exc}") from exc
            raise TransientError(connection_problem(exc, url, self.settings.timeout_s)) from exc
        logger.info("Retrying %s %s after a failed read: %s", method, url, exc)
        retry.sleep()
        return retry


def _read_body(response: requests.Response, limit: int, *, truncate: bool) -> bytes:
    chunks: list[bytes] = []
    size = 0
    try:
        for chunk in response.iter_content(chunk_size=65536):
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                if truncate:
                    return b"".join(chunks)[:limit]
                raise BadData(f"{response.url}: the response is larger than {limit} bytes")
    except requests.exceptions.RequestException as exc:
        raise _BodyError(f"the connection broke while reading the response ({_reason(exc)})") from exc
    body = b"".join(chunks)
    expected = response.headers.get("Content-Length")
    if expected and expected.isdigit() and int(expected) > len(body) and "Content-Encoding" not in response.headers:
        raise _BodyError(f"the response was cut short ({len(body)} of {expected} bytes)")
    return body


def _stream_into(response: requests.Response, kept: HeadTail) -> HeadTail:
    """The whole body fed to `kept` as it arrives, however long (only about its limit is held)."""
    try:
        for chunk in response.iter_content(chunk_size=65536):
            kept.feed(chunk)
    except requests.exceptions.RequestException as exc:
        raise _BodyError(f"the connection broke while reading the response ({_reason(exc)})") from exc
    expected = response.headers.get("Content-Length")
    encoded = "Content-Encoding" in response.headers
    if expected and expected.isdigit() and int(expected) > kept.total_bytes and not encoded:
        raise _BodyError(f"the response was cut short ({kept.total_bytes} of {expected} bytes)")
    return kept


def _parse_json(body: bytes) -> Any:
    try:
        value = loads_json(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        # A body cut short by a proxy or a dropped connection looks exactly like this; read again.
        raise _BodyError(f"the response is not valid JSON ({library_error(exc)})", not_json=True) from exc
    except ValueError as exc:  # NaN, Infinity, 1e400, nesting too deep: whole, and the same next time
        raise _BodyError(f"the response is not valid JSON ({library_error(exc)})", not_json=True, final=True) from exc
    # An answer that is a JSON string ("oops") is told apart from a body not yet parsed (`json_document`).
    return JsonString(value) if isinstance(value, str) else value


def _is_body_failure(exc: Exception) -> bool:
    if isinstance(exc, requests.exceptions.ChunkedEncodingError | requests.exceptions.ContentDecodingError):
        return True
    if isinstance(exc, requests.exceptions.ConnectionError):
        inner = exc.args[0] if exc.args else None
        return isinstance(inner, ProtocolError) and not isinstance(inner, MaxRetryError)
    return False


def _reason(exc: Exception) -> str:
    inner = exc.args[0] if exc.args else exc
    if isinstance(inner, MaxRetryError) and inner.reason is not None:
        return f"gave up after retries: {inner.reason}"
    return str(inner)


def _snippet(response: requests.Response) -> tuple[str, dict | None]:
    """An error answer's words for the message, and its JSON object (None when it is not one)."""
    try:
        text = response.raw.read(ERROR_BODY_BYTES, decode_content=True).decode("utf-8", errors="replace")
    except Exception:  # noqa: BLE001 - only a hint for the error message
        return response.reason or "", None
    try:
        data = json.loads(text)
        if isinstance(data, dict):
            return str(data.get("error") or data.get("message") or data.get("errors") or text)[:500], data
    except ValueError:
        pass
    return text.strip()[:500] or (response.reason or ""), None
