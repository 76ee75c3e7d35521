"""The contract of a connector, and the errors a pull can end with.

A connector is a class registered under a `kind` (see `registry`). The sync service
(`fleet.connectors.sync`) drives it in three steps, and only ever stores what it hands back:

1. `list_jobs(watermark, until)` yields `Batch`es of finished jobs that changed after `watermark`
   (an opaque string the connector itself produced earlier: a time, or a cursor). Each batch
   carries the watermark that is safe to save once *all jobs of this and every earlier batch*
   are stored — so a crash part-way resumes at the last stored batch and never skips a job.
   Each job then goes through `describe(job)`, which may complete it from a request of its own.
2. `fetch_series(job)` returns the job's normalised series frame (`fleet.series.normalize`) or
   None. Connectors that only list jobs delegate this to their metrics source (Prometheus).
3. `fetch_artifacts(job)` returns the job's logs and scripts as `ArtifactRecord`s. A job stored again
   has its artifacts replaced by these, except the earlier ones whose path `keeps_artifacts` matches
   and that were not brought again (a log the platform no longer serves).

Errors: `TransientError` (timeouts, connection errors, 5xx, 429 — after the HTTP client's own
retries are used up) ends the pull without moving the watermark, so the next run tries again.
`BadData` (a response or record that cannot be understood) is recorded and not retried.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, ClassVar

from fleet.canonical import ArtifactRecord, JobRecord, RecordError, as_utc, loads_json
from fleet.quoting import library_error

if TYPE_CHECKING:
    import pandas as pd

    from fleet.connectors.http import HttpClient


class ConnectorError(Exception):
    """Base of the errors a connector raises."""


class TransientError(ConnectorError):
    """The platform did not answer usefully in time; trying again later may succeed."""


class BadData(ConnectorError):
    """The platform answered with something we cannot read; trying again will not help."""


class SomeBadData(BadData):
    """Part of an answer could not be read: `records` are what could, `problems` say what was wrong with
    each of the rest (a pull stores the records and reports each problem)."""

    def __init__(self, records: list, problems: list[str]):
        super().__init__("; ".join(problems))
        self.records = records
        self.problems = problems


class ConfigError(ConnectorError):
    """The connector's configuration is incomplete or contradictory."""


# What reading a record of the wrong JSON shape raises (a list where an object belongs, a number
# where text does). Parsers catch these around one record (a job, a pod), so one malformed record of
# a platform's answer is reported by position and skipped, and the rest are still read.
# OverflowError: a number too large for what it stands for (a time or a duration of 10^20 seconds).
SHAPE_ERRORS = (AttributeError, TypeError, KeyError, IndexError, ValueError, OverflowError)


def shape_problem(what: str, exc: Exception) -> str:
    """The message for a record that `SHAPE_ERRORS` stopped: what it was, and what was wrong."""
    return f"{what}: unexpected shape, so it was skipped ({exc.__class__.__name__}: {library_error(exc)})"


def json_kind(value) -> str:
    """What a JSON value is, in the words of an error message: "null", "a list", "text" ..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "text"
    return "a list" if isinstance(value, list) else "an object"


class JsonString(str):
    """A JSON string an answer decoded to (`HttpClient.get_json` of the body `"oops"`): text already, told
    apart from a body still to parse, which a plain `str` is to `json_document`."""


def answer_kind(value) -> str:
    """What a whole answer decoded to, in the words of an error message: 'a JSON string ("oops")', "a list"..."""
    if isinstance(value, str):
        text = value if len(value) <= 80 else f"{value[:80]}…"
        return f"a JSON string ({json.dumps(text, ensure_ascii=False)})"
    return json_kind(value)


def json_document(data: bytes | str | dict, source: str):
    """A response body (or an already decoded document) as JSON; BadData naming `source` if it is not, or
    if it is a JSON string (no document this takes is one)."""
    if isinstance(data, JsonString):  # decoded already, and the answer was a JSON string
        raise BadData(f"{source}: the answer is {answer_kind(data)}, expected an object")
    if not isinstance(data, bytes | bytearray | str):  # decoded already (`HttpClient.get_json`): any JSON value
        return data
    try:
        return loads_json(data)
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, NaN or Infinity
        raise BadData(f"{source}: not valid JSON ({library_error(exc)})") from exc


@dataclass(frozen=True)
class ConnectorSettings:
    """Everything a connector needs to talk to its platform, with secrets already resolved.

    Built from the `Connector` model by the sync service; tests build it directly.
    """

    name: str
    kind: str
    url: str
    cluster: str = ""
    headers: dict[str, str] = field(default_factory=dict)  # auth and custom headers, ready to send
    basic_auth: tuple[str, str] | None = None
    verify: bool | str = True  # True, False (skip verification) or a CA bundle path
    options: dict = field(default_factory=dict)  # kind-specific settings (label mapping, team mapping ...)
    timeout_s: float = 30.0
    retries: int = 5
    backoff_s: float = 1.0
    backoff_max_s: float = 60.0
    retry_after_max_s: float = 300.0
    # Settings built again from the connector's secret reference, for a client to call when the server
    # refuses the credentials (HTTP 401): a file the platform rotates under a running pull (a projected
    # service-account token, a Slurm JWT a cron job refreshes) holds a new one. None: nothing to re-read.
    reread: Callable[[], ConnectorSettings] | None = field(default=None, compare=False, repr=False)


# What HTTP lets a header carry: a name of token characters, and a value of printable Latin-1
# (tabs allowed). Anything else — a line break in a pasted token, a multi-line secret file, a
# non-Latin-1 character — makes the HTTP library fail with an error quoting the value, secret
# and all; it is refused here, by name, before any request.
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_HEADER_VALUE = re.compile(r"^[\t\x20-\x7e\xa0-\xff]*$")


def header_problem(name: str, value: str, *, what: str) -> str | None:
    """Why `name: value` cannot go in a request (`what` names the value without quoting it), or None."""
    if not _HEADER_NAME.match(name):
        return f"the header name {name[:100]!r} is not a valid HTTP header name"
    if not _HEADER_VALUE.match(value):
        return f"{what} holds a line break or a character HTTP headers cannot carry (only printable Latin-1)"
    return None


def number_option(options: dict, name: str, default, *, low: float, high: float, integer: bool = False):
    """A numeric option (a number, or text of one) within [low, high]; ConfigError naming it otherwise.

    The connector form checks only that options are a JSON object: each connector reads its own
    options through this, so a wrong one is a message on the connector's page, not a server error.
    """
    value = options.get(name, default)
    try:
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise ValueError
        number = float(value)
    except ValueError:
        number = None
    if number is None or not low <= number <= high or (integer and not number.is_integer()):
        kind = "a whole number" if integer else "a number"
        raise ConfigError(f"option {name!r} must be {kind} from {low:g} to {high:g} (got {str(value)[:60]!r})")
    return int(number) if integer else number


def mapping_option(options: dict, name: str) -> dict[str, str]:
    """An option mapping names to names (a team per account or namespace); ConfigError otherwise."""
    value = options.get(name) or {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ConfigError(f'option {name!r} must be a JSON object of names to names, e.g. {{"ml": "vision"}}')
    return value


@dataclass
class Batch:
    """Finished jobs from one page or window, and the watermark to save once they are stored."""

    jobs: list[JobRecord]
    watermark: str
    errors: list[RecordError] = field(default_factory=list)  # records that were rejected (not retried)


class BaseConnector:
    """Base of every connector kind. Subclasses set `kind` and override the methods below they need."""

    kind: ClassVar[str] = ""
    label: ClassVar[str] = ""
    # True for kinds that list jobs; a metrics-only kind (Prometheus) serves other connectors.
    lists_jobs: ClassVar[bool] = True
    # Paths of artifacts an earlier pull stored that a later pull of the job keeps when it does not bring
    # them again (Kubernetes: a container's runs' logs, which the kubelet serves for a while only).
    keeps_artifacts: ClassVar[re.Pattern | None] = None
    # Shown beside the connector form: typical options (JSON) and the auth the platform expects.
    options_example: ClassVar[str] = "{}"
    # The URL help on the form once this kind is chosen: a typical base URL of its server.
    url_example: ClassVar[str] = ""
    url_what: ClassVar[str] = ""  # what that URL is of, e.g. "the Kubernetes API server"
    # Every option the kind reads, by name, with its type (a name in `fleet.connectors.options.OPTION_TYPES`):
    # the form refuses any other option, and a value of another type, naming the option.
    options_schema: ClassVar[dict[str, str]] = {}
    auth_hint: ClassVar[str] = ""

    def __init__(self, settings: ConnectorSettings, http: HttpClient, metrics: BaseConnector | None = None):
        self.settings = settings
        self.http = http
        self.metrics = metrics  # where series come from, when this kind has none of its own

    def list_jobs(self, watermark: str, until: datetime) -> Iterator[Batch]:
        raise NotImplementedError

    def fetch_series(self, job: JobRecord) -> pd.DataFrame | None:
        """By default: ask the metrics source for the GPUs the job's labels name (see docs/connectors.md)."""
        if self.metrics is None:
            return None
        from fleet.connectors.prometheus import request_from_labels

        return self.metrics.fetch_job_series(request_from_labels(job))

    def describe(self, job: JobRecord) -> JobRecord:
        """The listed job completed with what only a request of its own tells (W&B keeps a run's
        command line in a file of the run, not in the run list); by default the job as listed."""
        return job

    def fetch_artifacts(self, job: JobRecord) -> list[ArtifactRecord]:
        return []

    def check(self) -> dict:
        """A cheap request that proves the URL and credentials work; returns what it learnt, and under
        `warnings` (a list of sentences) what its pulls will lack although it answers."""
        return {}

    @classmethod
    def watermark_time(cls, watermark: str) -> datetime | None:
        """The moment a watermark stands for, for the lag shown in the UI (None when it is a cursor)."""
        return parse_time_watermark(watermark)


def time_windows(
    watermark: str, until: datetime, *, settle: timedelta, initial: timedelta, window: timedelta
) -> Iterator[tuple[datetime, datetime]]:
    """The [begin, stop) windows a time-windowed pull asks for: from the watermark (or `initial`
    back, on a first pull) up to `until` less `settle` (records land a little after a job ends),
    `window` at a time."""
    until = until - settle
    begin = parse_time_watermark(watermark) or (until - initial)
    while begin < until:
        stop = min(until, begin + window)
        yield begin, stop
        begin = stop


def counter_rates(points, *, scale: float = 1.0) -> dict[float, float]:
    """Per-second rates of a counter that only grows, at the time of each (seconds, value) point
    after the first: its growth since the point before over the seconds between them, times `scale`
    (a unit's bytes). MLflow and W&B record network and disk traffic as such totals since the run
    began, where the rules need bytes a second. A point where the total went down (the host's
    counters were reset) has no rate, and the next one is measured from it."""
    rates: dict[float, float] = {}
    previous = None
    for stamp, value in sorted(points):
        if previous is not None:
            seconds, growth = stamp - previous[0], value - previous[1]
            if seconds > 0 and growth >= 0:  # False for NaN too: a missing value has no rate
                rates[stamp] = growth * scale / seconds
        previous = (stamp, value)
    return rates


def time_watermark(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat()


def parse_time_watermark(watermark: str) -> datetime | None:
    if not watermark:
        return None
    try:
        return as_utc(datetime.fromisoformat(watermark))
    except (ValueError, OverflowError):
        return None
