"""Idle alerts posted to a team's chat webhook (`TeamWebhook`), beside the emails.

`alerts.check_jobs` makes one `Delivery` (kind IDLE_ALERT_WEBHOOK, its `webhook` the webhook, no
`recipient` address) per webhook, job and idle stretch, unique as an email's is, so pulling a job
again posts nothing new; `send_delivery` claims it, POSTs once and stamps it, the task retrying what
may pass (no answer, HTTP 429 or 5xx) with the digests' backoff and recording the rest as failed, in
words.

Two formats: Slack-compatible (`{"text": ...}` in Slack's mrkdwn, which Mattermost and Rocket.Chat
take too) and generic JSON (the alert's `facts`, as kept in the delivery's `details`: each figure in
words with its value beside it, `with_figures`).

The URL is a secret (its path is the webhook's token): it is decrypted for the request only; what is
shown or logged names its host, and an error answer that quotes the path has it cut out. Redirects
are not followed: the message goes where the operator pointed it, or nowhere.

Internal addresses are refused (server-side request forgery: a URL is typed into a page, and the
server posts to it): loopback, private, link-local (the cloud's metadata service at 169.254.169.254),
multicast, reserved, unspecified, unless ALERT_WEBHOOK_ALLOWED_NETWORKS holds the address. The form
says so when saving; the post checks the very address it connects to (`GuardedAdapter`: the name is
resolved once, each address checked, and the socket opened to a checked one, the URL's host kept for
the Host header, SNI and the certificate), so a name that resolves elsewhere between the form's
check and the post (DNS rebinding) gets nowhere. Connectors are not held to this: Prometheus or
slurmrestd are internal services by nature.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import socket
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal, InvalidOperation
from urllib.parse import urlsplit

import requests
from django.conf import settings
from django.db.models import F
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ConnectTimeoutError, NameResolutionError, NewConnectionError
from urllib3.util.connection import create_connection

from fleet.connectors.base import ConfigError
from fleet.connectors.http import _causes, connection_problem, where
from fleet.money import to_cents

from .models import Delivery, DigestKind, TeamWebhook

logger = logging.getLogger(__name__)

USER_AGENT = "fleet-triage-alerts/1"
# Of an error answer, what is read and kept (after the URL's secret is cut out of it).
ERROR_BODY_BYTES = 2048
SAID_CHARS = 200
LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain"})
INTERNAL_ADVICE = "webhooks may not post to internal addresses unless ALERT_WEBHOOK_ALLOWED_NETWORKS allows them"


# --- The URL -------------------------------------------------------------------------------------


def is_loopback(host: str) -> bool:
    host = host.strip("[]").lower()
    if host in LOOPBACK_NAMES or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def url_problem(url: str) -> str | None:
    """Why this URL cannot be a webhook here, or None. https only: the URL's path is its secret, which
    http sends in the clear; http only to this machine (a relay beside the service, the tests'
    server), or anywhere when ALERT_WEBHOOK_ALLOW_HTTP is on (DEBUG's default). Checked by the form
    and again before each POST (a URL saved before the setting changed). Where the URL's host may be is
    `destination_problem`'s (the form's) and `GuardedAdapter`'s (each post's) to say."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (raises ValueError on a port out of range)
    except ValueError:
        return "it is not a URL (a port out of range, or a malformed host)"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "it must be an https URL with a host, e.g. https://hooks.slack.com/services/…"
    if parts.scheme == "http" and not (settings.ALERT_WEBHOOK_ALLOW_HTTP or is_loopback(parts.hostname)):
        return (
            "use https: the URL's path is the webhook's secret, which http sends in the clear (http is taken "
            "only to this server itself, 127.0.0.1 or localhost, or where ALERT_WEBHOOK_ALLOW_HTTP is on)"
        )
    return None


# --- Where a post may go ----------------------------------------------------------------------------

# Checked in this order, the first that holds naming the address's kind.
REFUSED_KINDS = (
    ("is_unspecified", "the unspecified address"),
    ("is_loopback", "a loopback address"),
    ("is_link_local", "a link-local address (169.254.169.254 is the cloud's metadata service)"),
    ("is_multicast", "a multicast address"),
    ("is_reserved", "a reserved address"),
    ("is_private", "a private network address"),
)
NAT64 = ipaddress.ip_network("64:ff9b::/96")  # IPv6-only networks reach IPv4 hosts as these (DNS64)


def _as_ipv4(address: ipaddress.IPv4Address | ipaddress.IPv6Address):
    """The IPv4 address an IPv6 one stands for (mapped ::ffff:a.b.c.d, 6to4, Teredo, NAT64), else itself:
    ::ffff:127.0.0.1 is this machine, whatever its IPv6 kind says."""
    if address.version == 6:
        teredo = address.teredo[1] if address.teredo else None
        embedded = address.ipv4_mapped or address.sixtofour or teredo
        if embedded is None and address in NAT64:
            embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if embedded is not None:
            return embedded
    return address


def _allowed(address) -> bool:
    for entry in settings.ALERT_WEBHOOK_ALLOWED_NETWORKS:
        network = ipaddress.ip_network(entry, strict=False)
        if address in network or _as_ipv4(address) in network:
            return True
    return False


def refused_kind(address: str) -> str | None:
    """What kind of internal address `address` (an IP literal) is, when a webhook may not be posted
    to it; None for an address of the public internet, or one ALERT_WEBHOOK_ALLOWED_NETWORKS allows."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])  # fe80::1%eth0: its zone says nothing here
    if _allowed(ip):
        return None
    plain = _as_ipv4(ip)
    # A NAT64 address is its IPv4 host's (the prefix itself is "reserved"); any other, both kinds count.
    kinds_of = (plain,) if ip in NAT64 else (plain, ip)
    for attribute, words in REFUSED_KINDS:
        if any(getattr(each, attribute) for each in kinds_of):
            return words
    if not plain.is_global:  # e.g. carrier-grade NAT's 100.64.0.0/10
        return "not an address of the public internet"
    return None


def address_problem(address: str) -> str | None:
    """Why a webhook may not be posted to this IP address, e.g. "127.0.0.1 is a loopback address"."""
    kind = refused_kind(address)
    return f"{address} is {kind}" if kind else None


def _ip_literal(host: str) -> str | None:
    try:
        return str(ipaddress.ip_address(host.strip("[]")))
    except ValueError:
        return None


def resolve(host: str, port: int) -> list[str]:
    """The addresses `host` resolves to, as the post would connect (raises socket.gaierror)."""
    infos = socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM)
    return list(dict.fromkeys(info[4][0] for info in infos))


def destination_problem(url: str) -> str | None:
    """The form's check: why this URL's host may not be posted to (an internal address), or None. A name
    that does not resolve here is let be (the post says so, and checks again where it connects)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    literal = _ip_literal(host)
    if literal:
        return address_problem(literal)
    try:
        addresses = resolve(host, parts.port or (443 if parts.scheme == "https" else 80))
    except (OSError, UnicodeError):
        return None
    for address in addresses:
        kind = refused_kind(address)
        if kind:
            return f"{host} resolves to {address}, {kind}"
    return None


class RefusedDestination(NewConnectionError):
    """A connection not opened: the host is, or resolves to, an internal address."""

    def __init__(self, conn, address: str, kind: str, literal: bool):
        super().__init__(conn, f"{address} is {kind}: not connected")
        self.address, self.kind, self.literal = address, kind, literal


class _GuardedConnectionMixin:
    """urllib3's connection with its socket opened only to an address `refused_kind` lets through: the
    name is resolved once here, every address checked (one internal address refuses the name), and the
    socket opened to a checked one. The URL's host stays the Host header, the SNI and the name the
    certificate must carry."""

    def _new_conn(self) -> socket.socket:
        literal = _ip_literal(self._dns_host) is not None
        try:
            addresses = resolve(self._dns_host, self.port)
        except socket.gaierror as exc:
            raise NameResolutionError(self.host, self, exc) from exc
        for address in addresses:
            kind = refused_kind(address)
            if kind:
                raise RefusedDestination(self, address, kind, literal)
        error: OSError | None = None
        for address in addresses:
            try:
                return create_connection(
                    (address, self.port), self.timeout, source_address=self.source_address,
                    socket_options=self.socket_options,
                )  # fmt: skip
            except TimeoutError as exc:
                raise ConnectTimeoutError(self, f"Connection to {self.host} timed out.") from exc
            except OSError as exc:
                error = exc
        raise NewConnectionError(self, f"Failed to establish a new connection: {error}") from error


class _GuardedHTTPConnection(_GuardedConnectionMixin, HTTPConnection):
    pass


class _GuardedHTTPSConnection(_GuardedConnectionMixin, HTTPSConnection):
    pass


class _GuardedHTTPPool(HTTPConnectionPool):
    ConnectionCls = _GuardedHTTPConnection


class _GuardedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _GuardedHTTPSConnection


class GuardedAdapter(HTTPAdapter):
    """requests' adapter whose direct connections are `_GuardedConnectionMixin`'s."""

    def init_poolmanager(self, *args, **kwargs):
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": _GuardedHTTPPool, "https": _GuardedHTTPSPool}


def _session() -> requests.Session:
    session = requests.Session()
    session.mount("http://", GuardedAdapter())
    session.mount("https://", GuardedAdapter())
    return session


def scrub(text: str, url: str) -> str:
    """`text` without the URL's secret: the URL, its path and query, and each longer piece of them
    (an error page that says "Cannot POST /services/T0/B0/token" keeps "Cannot POST …")."""
    parts = urlsplit(url)
    pieces = [url, parts.path, parts.query, *parts.path.split("/"), *parts.query.replace("=", "&").split("&")]
    for piece in sorted({p for p in pieces if len(p) >= 6}, key=len, reverse=True):
        text = text.replace(piece, "…")
    return text


# --- The message ---------------------------------------------------------------------------------


def _slack_escape(text) -> str:
    """Slack's three control characters, escaped as Slack asks: a job's name like "<!channel>" stays text."""
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def slack_text(alert: dict) -> str:
    """The alert in Slack's mrkdwn: the job (linked), cluster, GPUs, how long idle, cost per hour, cause."""
    from .alerts import idle_for_text

    e = _slack_escape
    name = alert.get("name") or alert.get("external_id") or "a job"
    idle_for = idle_for_text(int(alert.get("idle_minutes") or 0))
    since = ""
    if alert.get("idle_since"):
        since = f" (since {datetime.fromisoformat(alert['idle_since']).strftime('%Y-%m-%d %H:%M')} UTC)"
    link = f"<{alert['job_url']}|{e(name)}>" if alert.get("job_url") else f"*{e(name)}*"
    lines = [
        f":zzz: *Idle now:* {link} on {e(alert.get('cluster', ''))} has left {e(alert.get('gpus', ''))} "
        f"idle for {idle_for}{since}",
    ]
    if alert.get("cost_per_hour"):
        currency = e(alert.get("currency", ""))
        lines.append(
            f"*Cost:* {e(alert['cost_per_hour'])} {currency} per hour wasted while it idles "
            f"({e(alert.get('cost_so_far') or '0.00')} {currency} so far)"
        )
    else:
        lines.append("*Cost:* no GPU-hour price is set for this cluster")
    lines.append(
        f"*Team:* {e(alert.get('team', ''))}  *User:* {e(alert.get('user', ''))}  "
        f"*Job:* {e(alert.get('cluster', ''))}/{e(alert.get('external_id', ''))}"
    )
    if alert.get("cause"):
        lines.append(f"*Cause:* {e(alert['cause'].get('label', ''))}: {e(alert['cause'].get('summary', ''))}")
    lines.append("If the job is done, or stuck, end it to free the GPUs for others.")
    return "\n".join(lines)


def blind_rated(job_id: int | None) -> bool:
    """Whether someone rates this job blind and has not submitted: a channel may hold them, so the
    posted alert names no rule's finding (an email leaves it out for that rater only)."""
    if job_id is None:
        return False
    from triage.labeling.models import Assignment

    return Assignment.objects.filter(
        item__job_id=job_id,
        item__study__show_findings=False,
        item__study__rater_links__user=F("rater"),
        item__study__rater_links__submitted_at__isnull=True,
    ).exists()


# The figures an alert kept before they were posted gets from its job, while the job is there (`with_figures`)
JOB_FIGURES = ("gpu_count", "gpu_model", "gpu_share", "idle_gpu_hours")


def with_figures(alert: dict, job=None, team=None) -> dict:
    """The alert with the figures `alerts.facts` gives a script beside its words; an alert kept before
    they were (a delivery queued or failed then, retried now) gets those its words give: the amounts
    ("2,000.50" -> "2000.50") and its idle hours; those only its job gives (`JOB_FIGURES`) from `job`, computed
    as a new alert's are (`alerts.gpu_figures`, over its stretch: idle_since to last_sample), and left out
    when the job is gone; and `team_slug` from `team`, the team the alert was for."""
    from .alerts import gpu_figures

    alert = dict(alert)
    if "team_slug" not in alert and team is not None:
        alert["team_slug"] = team.slug
    missing = [name for name in JOB_FIGURES if name not in alert]
    seconds = _idle_seconds(alert)
    if missing and job is not None and seconds is not None:
        figures = gpu_figures(job, seconds)
        alert.update({name: figures[name] for name in missing})
    for name in ("cost_per_hour", "cost_so_far"):
        if f"{name}_decimal" not in alert:
            try:
                amount = str(to_cents(Decimal(str(alert[name]).replace(",", "")))) if alert.get(name) else None
            except (InvalidOperation, ValueError):
                amount = None
            alert[f"{name}_decimal"] = amount
    if "idle_hours" not in alert and isinstance(alert.get("idle_minutes"), int):
        alert["idle_hours"] = round(alert["idle_minutes"] / 60, 3)
    return alert


def _idle_seconds(alert: dict) -> float | None:
    """A kept alert's idle stretch in seconds: its idle_since to its last_sample, as a new alert counts it, else its
    whole idle minutes; None when it says neither."""
    try:
        return (
            datetime.fromisoformat(alert["last_sample"]) - datetime.fromisoformat(alert["idle_since"])
        ).total_seconds()
    except (KeyError, TypeError, ValueError):
        minutes = alert.get("idle_minutes")
        return minutes * 60 if isinstance(minutes, int) else None


def body_for(webhook_format: str, alert: dict, job=None, team=None) -> dict:
    if webhook_format == TeamWebhook.Format.JSON:
        return with_figures(alert, job, team)
    return {"text": slack_text(alert)}


def test_body(webhook: TeamWebhook) -> dict:
    text = f"Test message from Fleet Triage: the idle alerts of {webhook.team} will be posted here."
    if webhook.format == TeamWebhook.Format.JSON:
        return {"test": True, "team": str(webhook.team), "text": text}
    return {"text": _slack_escape(text)}


# --- Posting -------------------------------------------------------------------------------------


@dataclass
class Outcome:
    status: int | None = None  # the HTTP status answered, when one was
    error: str = ""  # what went wrong, in words naming the host only
    transient: bool = False  # asking again later may work
    retry_after: float | None = None

    @property
    def ok(self) -> bool:
        return not self.error


def post(url: str, body: dict, *, timeout: float | None = None) -> Outcome:
    """POST `body` as JSON to `url`, once, following no redirect, to no internal address."""
    timeout = timeout or settings.ALERT_WEBHOOK_TIMEOUT
    problem = url_problem(url)
    if problem:
        return Outcome(error=f"The webhook URL cannot be used: {problem}.")
    if requests.utils.get_environ_proxies(url):
        # Through an outbound proxy (HTTPS_PROXY), which connects on its own: the name is checked here.
        problem = destination_problem(url)
        if problem:
            return Outcome(error=f"{problem}; {INTERNAL_ADVICE}.")
    with _session() as session:
        return _post(session, url, body, timeout)


def _post(session: requests.Session, url: str, body: dict, timeout: float) -> Outcome:
    at = where(url)
    try:
        response = session.post(
            url,
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", "User-Agent": USER_AGENT},
            timeout=timeout,
            allow_redirects=False,
            stream=True,
        )
    except requests.exceptions.SSLError:
        return Outcome(
            error=f"The TLS connection to {at} failed (its certificate is not trusted, has expired or names another "
            f"host): check the URL's host name."
        )
    except requests.exceptions.ConnectTimeout:
        return Outcome(error=f"{at} did not take the connection within {timeout:g} s.", transient=True)
    except requests.exceptions.ReadTimeout:
        return Outcome(
            error=f"{at} took the connection but did not answer within {timeout:g} s (ALERT_WEBHOOK_TIMEOUT).",
            transient=True,
        )
    except (requests.RequestException, OSError) as exc:
        refused = next((cause for cause in _causes(exc) if isinstance(cause, RefusedDestination)), None)
        if refused is not None:  # not transient: the same address is refused next time
            how = "is" if refused.literal else "resolves to"
            return Outcome(error=f"{at} {how} {refused.address}, {refused.kind}; {INTERNAL_ADVICE}.")
        # Never the exception's own text: requests names the URL's path ("Max retries exceeded with url: /services/…").
        return Outcome(error=connection_problem(exc, url, timeout), transient=True)
    with response:
        status = response.status_code
        if 200 <= status < 300:
            return Outcome(status=status)
        try:
            said = response.raw.read(ERROR_BODY_BYTES, decode_content=True).decode("utf-8", "replace")
        except Exception:  # noqa: BLE001 (the body is only a hint)
            said = ""
        location = response.headers.get("Location", "")
        retry_after = response.headers.get("Retry-After", "")
    said = " ".join(scrub(said, url).split())[:SAID_CHARS]
    quoted = f', "{said}"' if said else ""
    transient = status in (408, 429) or status >= 500
    if 300 <= status < 400:
        to = f" to {where(location)}" if urlsplit(location).hostname else ""
        error = (
            f"{at} answered HTTP {status}, a redirect{to}: not followed, so the message (and the URL's secret) go "
            f"only where the URL says. Enter the webhook's final URL."
        )
    elif status in (404, 410):
        error = (
            f"{at} has no webhook at this URL (HTTP {status}{quoted}): it was removed or the URL is mistyped. "
            f"Enter the webhook's URL again."
        )
    elif status in (401, 403):
        error = (
            f"{at} refused the message (HTTP {status}{quoted}): the webhook may be turned off or its token revoked. "
            f"Enter a new webhook URL."
        )
    elif status == 429:
        error = f"{at} asked to slow down (HTTP 429{quoted})."
    elif status >= 500:
        error = f"{at} answered HTTP {status} (a server error{quoted})."
    elif status == 400:
        error = (
            f"{at} refused the message as malformed (HTTP 400{quoted}): check that the webhook's format "
            f"(Slack-compatible or generic JSON) is the one the service expects."
        )
    else:
        error = f"{at} refused the message (HTTP {status}{quoted})."
    seconds = float(retry_after) if retry_after.strip().isdigit() else None
    return Outcome(status=status, error=error, transient=transient, retry_after=seconds)


def send_test(webhook: TeamWebhook) -> Outcome:
    """The settings page's "Send a test message": one POST now, no retry."""
    try:
        url = webhook.url()
    except ConfigError as exc:
        return Outcome(error=f"{str(exc)[0].upper()}{str(exc)[1:]}.")
    outcome = post(url, test_body(webhook))
    said = outcome.error or f"HTTP {outcome.status}"
    logger.info("Test message to the chat webhook of %s at %s: %s", webhook.team, webhook.host, said)
    return outcome


@dataclass
class SendResult:
    status: str  # sent, skipped, failed, retry
    error: str = ""
    retry_after: float | None = None

    @property
    def retry(self) -> bool:
        return self.status == "retry"

    def as_dict(self) -> dict:
        return {"status": self.status, "error": self.error}


def send_delivery(delivery_id: int, *, final_attempt: bool = True) -> SendResult:
    """Post one webhook delivery at most once (claimed before, stamped after). A failure that may pass
    (no answer, HTTP 429 or 5xx) puts it back in the queue and asks for a retry, unless this is the
    final attempt; any other is failed at once, with its reason for the deliveries page."""
    delivery = (
        Delivery.objects.filter(pk=delivery_id, kind=DigestKind.IDLE_ALERT_WEBHOOK)
        .select_related("webhook__team", "team", "job")
        .first()
    )
    if delivery is None or delivery.status not in Delivery.CLAIMABLE:
        return SendResult("skipped")
    webhook = delivery.webhook
    if not delivery.claim():
        return SendResult("skipped")
    if webhook is None or not webhook.enabled:
        why = "the team's chat webhook was removed" if webhook is None else "the team's chat webhook is turned off"
        delivery.mark_unsent(f"Not posted: {why}.", final=True)
        return SendResult("failed", delivery.last_error)
    alert = dict(delivery.details or {})
    if alert.get("cause") and blind_rated(delivery.job_id):
        alert["cause"] = None
    try:
        url = webhook.url()
    except ConfigError as exc:
        outcome = Outcome(error=f"{str(exc)[0].upper()}{str(exc)[1:]}.")
    else:
        outcome = post(url, body_for(webhook.format, alert, delivery.job, delivery.team or webhook.team))
    Delivery.objects.filter(pk=delivery.pk).update(response_status=outcome.status)
    if outcome.ok:
        delivery.mark_sent("")
        return SendResult("sent")
    retry = outcome.transient and not final_attempt
    delivery.mark_unsent(outcome.error, final=not retry)
    logger.warning("Idle alert %s to the chat webhook at %s failed: %s", delivery.pk, webhook.host, outcome.error)
    return SendResult("retry" if retry else "failed", outcome.error, outcome.retry_after)
