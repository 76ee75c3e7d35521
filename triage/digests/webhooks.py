"""Idle alerts posted to a team's chat webhook (`TeamWebhook`), beside the emails.

`alerts.check_jobs` makes one `Delivery` (kind IDLE_ALERT_WEBHOOK, recipient "webhook:<pk>") per
webhook, job and idle stretch, unique as an email's is, so pulling a job again posts nothing new;
`send_delivery` claims it, POSTs once and stamps it, the task retrying what may pass (no answer,
HTTP 429 or 5xx) with the digests' backoff and recording the rest as failed, in words.

Two formats: Slack-compatible (`{"text": ...}` in Slack's mrkdwn, which Mattermost and Rocket.Chat
take too) and generic JSON (the alert's `facts`, as kept in the delivery's `details`).

The URL is a secret (its path is the webhook's token): it is decrypted for the request only; what is
shown or logged names its host, and an error answer that quotes the path has it cut out. Redirects
are not followed: the message goes where the operator pointed it, or nowhere.
"""

from __future__ import annotations

import ipaddress
import json
import logging
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlsplit

import requests
from django.conf import settings
from django.db.models import F

from fleet.connectors.base import ConfigError
from fleet.connectors.http import connection_problem, where

from .models import Delivery, DigestKind, TeamWebhook

logger = logging.getLogger(__name__)

USER_AGENT = "fleet-triage-alerts/1"
# Of an error answer, what is read and kept (after the URL's secret is cut out of it).
ERROR_BODY_BYTES = 2048
SAID_CHARS = 200
LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain"})


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
    and again before each POST (a URL saved before the setting changed). No rule against internal
    addresses: as a connector's, a webhook may be a service of the operators' own network."""
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


def body_for(webhook_format: str, alert: dict) -> dict:
    if webhook_format == TeamWebhook.Format.JSON:
        return alert
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
    """POST `body` as JSON to `url`, once, following no redirect."""
    timeout = timeout or settings.ALERT_WEBHOOK_TIMEOUT
    problem = url_problem(url)
    if problem:
        return Outcome(error=f"The webhook URL cannot be used: {problem}.")
    at = where(url)
    try:
        response = requests.post(
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
        .select_related("webhook__team")
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
        outcome = post(url, body_for(webhook.format, alert))
    Delivery.objects.filter(pk=delivery.pk).update(response_status=outcome.status)
    if outcome.ok:
        delivery.mark_sent("")
        return SendResult("sent")
    retry = outcome.transient and not final_attempt
    delivery.mark_unsent(outcome.error, final=not retry)
    logger.warning("Idle alert %s to the chat webhook at %s failed: %s", delivery.pk, webhook.host, outcome.error)
    return SendResult("retry" if retry else "failed", outcome.error, outcome.retry_after)
