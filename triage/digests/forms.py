"""The operators' idle alert settings form, and a team's chat webhook form."""

from __future__ import annotations

from django import forms
from django.core.validators import URLValidator

from fleet.connectors.models import ServiceURLValidator

from . import webhooks
from .models import AlertSettings, TeamWebhook


class AlertSettingsForm(forms.ModelForm):
    class Meta:
        model = AlertSettings
        fields = ["enabled", "idle_minutes"]
        labels = {"enabled": "Send idle alerts", "idle_minutes": "Idle for at least (minutes)"}
        error_messages = {
            "idle_minutes": {
                "required": "Idle for at least: give a number of minutes, from 5 to 10080 (a week).",
                "invalid": "Idle for at least: give a whole number of minutes, from 5 to 10080 (a week).",
                "min_value": "Idle for at least: at least 5 minutes.",
                "max_value": "Idle for at least: at most 10080 minutes (a week).",
            }
        }
        widgets = {"idle_minutes": forms.NumberInput(attrs={"min": 5, "max": 10080, "step": 1})}


class WebhookURLValidator(ServiceURLValidator):
    """The connectors' URL check (a bare service name is a host too), user:password in the URL allowed:
    the whole URL is the secret here, kept encrypted."""

    message = "Webhook URL: enter an http(s) URL with a host, e.g. https://hooks.slack.com/services/…"

    def __call__(self, value):
        URLValidator.__call__(self, value)


validate_webhook_url = WebhookURLValidator()


class TeamWebhookForm(forms.ModelForm):
    """A team's chat webhook. The URL is write-only: never rendered back, not even into the form that
    comes back with an error; blank keeps the stored one, and changing it means entering it whole."""

    url = forms.CharField(
        label="Webhook URL",
        required=False,
        max_length=2000,
        widget=forms.PasswordInput(
            render_value=False, attrs={"autocomplete": "off", "spellcheck": "false", "autocapitalize": "off"}
        ),
        error_messages={"max_length": "Webhook URL: at most 2000 characters."},
    )

    class Meta:
        model = TeamWebhook
        fields = ["url", "format", "enabled"]
        labels = {"format": "Format", "enabled": "Post idle alerts to this webhook"}
        help_texts = {
            "enabled": "Untick to stop posting for a while: the URL stays stored, and the team's idle alerts "
            "still go by email."
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.url_encrypted:
            self.fields["url"].help_text = (
                f"A URL at {self.instance.host} is stored (encrypted, never shown). Leave this blank to keep it; "
                "to change it, enter the whole new URL."
            )
        else:
            self.fields["url"].help_text = (
                "The incoming webhook's URL the chat service gave you, e.g. https://hooks.slack.com/services/…; "
                "stored encrypted and never shown again."
            )

    def clean_url(self) -> str:
        url = self.cleaned_data["url"].strip()
        if not url:
            if not self.instance.url_encrypted:
                raise forms.ValidationError("Webhook URL: enter the URL the chat service gave for the webhook.")
            return ""
        validate_webhook_url(url)
        problem = webhooks.url_problem(url)
        if problem:
            raise forms.ValidationError(f"Webhook URL: {problem}.")
        problem = webhooks.destination_problem(url)
        if problem:
            raise forms.ValidationError(f"Webhook URL: {problem}; {webhooks.INTERNAL_ADVICE}.")
        return url

    def save(self, commit: bool = True) -> TeamWebhook:
        webhook = super().save(commit=False)
        if self.cleaned_data.get("url"):
            webhook.set_url(self.cleaned_data["url"])
        if commit:
            webhook.save()
        return webhook
