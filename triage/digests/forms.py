"""The operators' idle alert settings form."""

from __future__ import annotations

from django import forms

from .models import AlertSettings


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
