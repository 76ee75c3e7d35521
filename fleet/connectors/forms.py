"""The operator's connector form. Secrets are write-only: never rendered back, blank keeps the stored one."""

from __future__ import annotations

import json
import re
from urllib.parse import urlsplit

from django import forms
from django.forms.fields import InvalidJSONInput, JSONString

from fleet.canonical import NUL_MESSAGE, loads_json, nul_path
from fleet.connectors import secrets
from fleet.connectors.base import ConfigError, ConnectorSettings, header_problem
from fleet.connectors.http import same_origin
from fleet.connectors.models import MAX_INTERVAL_MINUTES, Connector, validate_service_url
from fleet.connectors.options import option_problems
from fleet.connectors.registry import kinds
from fleet.models import Cluster

# As an <input pattern>, which Chromium compiles with the v flag: there a hyphen leading a class
# ("[-a-z]") is a syntax error, and the browser ignored the pattern, saying so in the console.
SLUG_PATTERN = r"[a-zA-Z0-9_\-]+"
SECRET_REFERENCE = re.compile(r"^(env:[A-Za-z_][A-Za-z0-9_]*|file:/.+)$")


class ServiceURLField(forms.URLField):
    """A URL field that takes an in-cluster service name as its host (see `ServiceURLValidator`)."""

    default_validators = [validate_service_url]
    default_error_messages = {"invalid": validate_service_url.message}


class JSONTextField(forms.JSONField):
    """A JSON field whose error names the field and says what is wrong and where ("Options: not
    valid JSON at line 2, column 5: Expecting ',' delimiter."), where Django's says "Enter a valid
    JSON.". It reads JSON as a jsonb column stores it (`loads_json`): Python's json also takes NaN,
    lone surrogate escapes and NUL, which PostgreSQL refuses at the insert (a server error), and
    answers nesting past the interpreter's stack with a RecursionError. Text it refuses is shown
    back as typed (Django's `InvalidJSONInput`), to be corrected."""

    def to_python(self, value):
        if self.disabled or value in self.empty_values or not isinstance(value, str):
            return super().to_python(value)
        label = self.label or "The value"
        try:
            converted = loads_json(value)
        except json.JSONDecodeError as exc:  # before ValueError, of which it is one: it knows where
            raise forms.ValidationError(
                f"{label}: not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}.", code="invalid"
            ) from None
        except ValueError as exc:
            raise forms.ValidationError(f"{label}: not valid JSON: {exc}.", code="invalid") from None
        where = nul_path(converted)
        if where is not None:
            raise forms.ValidationError(f"{label}: {where or 'the value'} {NUL_MESSAGE}.", code="invalid")
        return JSONString(converted) if isinstance(converted, str) else converted

    def bound_data(self, data, initial):
        if self.disabled or data is None or not isinstance(data, str):
            return super().bound_data(data, initial)
        try:
            value = loads_json(data)
        except ValueError:
            return InvalidJSONInput(data)
        return InvalidJSONInput(data) if nul_path(value) is not None else value


class ConnectorForm(forms.ModelForm):
    url = ServiceURLField(
        label="URL",
        max_length=500,
        assume_scheme="https",
        help_text="Base URL (an in-cluster service name is fine)",  # with each kind's example: url_help()
    )
    secret = forms.CharField(
        required=False,
        strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Password or token, stored encrypted.",
    )
    secret_reference = forms.CharField(
        required=False,
        help_text="Instead of a stored secret: env:VARIABLE or file:/path/to/token (read on every pull), "
        "as far as the server allows (CONNECTOR_SECRET_ENV, CONNECTOR_SECRET_DIRS).",
    )
    clear_secret = forms.BooleanField(required=False, help_text="Forget the stored secret.")
    # Declared, not derived: a PositiveIntegerField's form field told the browser min="0" (and no
    # max) while the model refuses anything outside 1 minute to a year.
    interval_minutes = forms.IntegerField(
        label="Pull every (minutes)",
        initial=15,
        min_value=1,
        max_value=MAX_INTERVAL_MINUTES,
        help_text=f"From 1 minute to {MAX_INTERVAL_MINUTES} (a year).",
    )

    class Meta:
        model = Connector
        fields = [
            "name",
            "kind",
            "url",
            "cluster",
            "enabled",
            "interval_minutes",
            "metrics_from",
            "auth",
            "username",
            "secret_header",
            "headers",
            "ca_bundle",
            "verify_tls",
            "options",
        ]
        field_classes = {"headers": JSONTextField, "options": JSONTextField}
        widgets = {
            "headers": forms.Textarea(attrs={"rows": 2}),
            "options": forms.Textarea(attrs={"rows": 6}),
        }
        help_texts = {
            "name": "Letters (a-z, A-Z), digits, hyphens (-) and underscores (_) only, no spaces or dots, "
            "e.g. slurm-c1. Pull it by hand with manage.py sync_source and this name.",
        }
        labels = {
            "metrics_from": "Metrics from",
            "auth": "Auth kind",
            "username": "User name",
            "ca_bundle": "CA bundle",
            "verify_tls": "Verify TLS certificates",
        }

    # The form's fields in the groups the page shows them in, each a fieldset with its legend.
    FIELDSETS = (
        ("Platform", ("name", "kind", "url", "cluster", "metrics_from")),
        ("Schedule", ("enabled", "interval_minutes")),
        ("Authentication", ("auth", "username", "secret_header", "secret", "secret_reference", "clear_secret")),
        ("Connection", ("headers", "ca_bundle", "verify_tls")),
        ("Kind-specific options", ("options",)),
    )

    def fieldsets(self) -> list[tuple[str, list]]:
        return [(legend, [self[name] for name in names if name in self.fields]) for legend, names in self.FIELDSETS]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        qs = Connector.objects.filter(kind=Connector.Kind.PROMETHEUS)
        self.stored_url = self.instance.url if self.instance.pk else ""  # where its stored secret was sent
        if self.instance.pk:
            qs = qs.exclude(pk=self.instance.pk)
            self.fields["secret_reference"].initial = self.instance.secret_ref  # a name, not a secret
        self.fields["metrics_from"].queryset = qs
        # Each menu's empty choice in words: Django's is "---------", which says neither "pick one" nor "none".
        self.fields["kind"].choices = [("", "Choose a kind"), *Connector.Kind.choices]
        self.fields["metrics_from"].empty_label = "None"
        # The browser refuses what the server's slug check would (SlugField: ASCII letters, digits, - and _).
        self.fields["name"].widget.attrs.update(pattern=SLUG_PATTERN, title="Letters, digits, hyphens, underscores")
        # The clusters jobs already came from, offered as the field is typed in (a new one is fine):
        # a near miss ("Alpha" for "alpha") would split one cluster's jobs in two on every page.
        self.known_clusters = list(Cluster.objects.order_by("name").values_list("name", flat=True))
        self.fields["cluster"].widget.attrs["list"] = "known-clusters"
        self.fields["url"].help_text = url_help(self._chosen_kind())
        if self.instance.pk and self.instance.has_secret:
            self.fields["secret"].help_text += " Leave blank to keep the stored one."
        else:
            del self.fields["clear_secret"]  # nothing stored to keep or to forget

    def _chosen_kind(self) -> str:
        """The kind the form is for: as posted, else the connector's, else none yet."""
        if self.is_bound:
            return self.data.get(self.add_prefix("kind")) or ""
        return self.instance.kind if self.instance.pk else ""

    def clean_secret_reference(self) -> str:
        value = self.cleaned_data["secret_reference"].strip()
        if value and not SECRET_REFERENCE.match(value):
            raise forms.ValidationError("Use env:VARIABLE_NAME or file:/absolute/path.")
        problem = value and secrets.reference_problem(value)
        if problem:
            raise forms.ValidationError(
                f"{problem[0].upper()}{problem[1:]}: on this server a secret reference may name "
                f"{secrets.allowed_references()}, which the server's administrator sets."
            )
        return value

    def clean_headers(self):
        headers = self.cleaned_data["headers"] or {}
        if not isinstance(headers, dict) or not all(isinstance(v, str) for v in headers.values()):
            raise forms.ValidationError('A JSON object of header names to text values, e.g. {"X-Scope-OrgID": "gpu"}.')
        for name, value in headers.items():
            _refuse(header_problem(name, value, what=f"the header {name[:100]!r}"))
        return headers

    def clean_username(self) -> str:
        username = self.cleaned_data["username"]
        _refuse(header_problem("Authorization", username, what="the user name"))
        return username

    def clean_secret_header(self) -> str:
        name = self.cleaned_data["secret_header"]
        if name:
            _refuse(header_problem(name, "", what=""))
        return name

    def clean_secret(self) -> str:
        secret = self.cleaned_data["secret"]
        _refuse(header_problem("Authorization", secret, what="the secret"))  # names the secret, never quotes it
        return secret

    def clean_options(self):
        options = self.cleaned_data["options"] or {}
        if not isinstance(options, dict):
            raise forms.ValidationError("A JSON object (see docs/connectors.md for each kind's options).")
        return options

    def clean(self):
        data = super().clean()
        auth = data.get("auth")
        has_new = bool(data.get("secret") or data.get("secret_reference"))
        keeps_old = self.instance.pk and self.instance.has_secret and not data.get("clear_secret")
        if auth and auth != Connector.Auth.NONE and not (has_new or keeps_old):
            self.add_error("secret", "This auth kind needs a secret (or a reference to one).")
        if self._secret_would_move(data):
            self.add_error(
                "secret",
                f"The URL now points at another server ({_server(self.stored_url)} before): enter the secret again,"
                " or clear it. A stored secret is only sent to the server it was entered for.",
            )
        if auth == Connector.Auth.BASIC and not data.get("username"):
            self.add_error("username", "Basic auth needs a user name.")
        if auth == Connector.Auth.HEADER and not data.get("secret_header"):
            self.add_error("secret_header", "Name the header that carries the secret, e.g. X-SLURM-USER-TOKEN.")
        # Only once a kind is chosen (a missing kind is its own error): a Prometheus connector needs none.
        if data.get("kind") and data["kind"] != Connector.Kind.PROMETHEUS and not data.get("cluster"):
            self.add_error("cluster", "Jobs need a cluster name.")
        if "options" in data and data.get("kind") in kinds():
            cls = kinds()[data["kind"]]
            problems = self._option_problems(cls, data["options"])
            for problem in problems:
                self.add_error("options", problem)
            if problems and cls.options_example != "{}":  # the whole object to type, not only the one value
                self.add_error("options", f"For {_short(cls.label)}, type e.g. {cls.options_example}")
        return data

    def _secret_would_move(self, data) -> bool:
        """Whether the stored secret would be kept for a URL on another server. Secrets are write-only,
        and a redirect elsewhere never gets them (fleet.connectors.http); a URL edited to another
        server must not either, or whoever edits a connector reads its token at a server of their
        own. Asked whatever the auth kind, which could be set back on once the URL has moved. A
        reference (env:, file:) is a name shown on this form: it is entered again with it."""
        url = data.get("url")
        kept = not (data.get("secret") or data.get("secret_reference") or data.get("clear_secret"))
        return bool(self.instance.secret_encrypted and kept and url and not same_origin(self.stored_url, url))

    @staticmethod
    def _option_problems(cls, options: dict) -> list[str]:
        """Options the kind does not know or of the wrong type, by its declaration; then what the kind
        itself says when it is built with them (a value out of range, a required option missing)."""
        problems = option_problems(cls.label or cls.kind, cls.options_schema, options)
        if problems:
            return problems
        try:
            cls(ConnectorSettings(name="form", kind=cls.kind, url="http://form.invalid", options=options), http=None)
        except ConfigError as exc:
            text = str(exc)
            return [text[0].upper() + text[1:] + ("" if text.endswith(".") else ".")]
        return []

    def save(self, commit: bool = True) -> Connector:
        connector = super().save(commit=False)
        data = self.cleaned_data
        if data.get("clear_secret"):
            connector.secret_ref = connector.secret_encrypted = ""
        if data.get("secret"):
            connector.set_secret(data["secret"])
        elif data.get("secret_reference"):
            connector.set_secret_reference(data["secret_reference"])
        elif "secret_reference" in self.changed_data and not data.get("secret_reference"):
            connector.secret_ref = ""
        if commit:
            connector.save()
        return connector


def _short(label: str) -> str:
    """A kind's label without its parenthesis: "Slurm" for "Slurm (slurmrestd)"."""
    return label.split(" (")[0]


def url_help(kind: str) -> str:
    """The URL field's help: the chosen kind's example, or each kind's when none is chosen yet."""
    chosen = kinds().get(kind)
    if chosen and chosen.url_example:
        what = chosen.url_what or f"the {_short(chosen.label)} server"
        return f"Base URL of {what}, e.g. {chosen.url_example} (an in-cluster service name is fine)."
    examples = "; ".join(f"{_short(cls.label)}: {cls.url_example}" for cls in kinds().values() if cls.url_example)
    return f"Base URL of the kind's server (an in-cluster service name is fine), e.g. {examples}."


def _server(url: str) -> str:
    """A URL's server as the form's message names it: its host, and its port when one is written."""
    parts = urlsplit(url)
    return f"{parts.hostname or ''}{f':{parts.port}' if parts.port else ''}"


def _refuse(problem: str | None) -> None:
    """A `header_problem` as the form's error: a sentence."""
    if problem:
        raise forms.ValidationError(problem[0].upper() + problem[1:] + ".")
