"""Triage rules: one small pure function per category, all registered in `registry.RULES`."""

from triage.rules import data, job, library, model  # noqa: F401  (registers the rules)
from triage.rules.registry import RULES, THRESHOLDS, Finding, Status, TriageResult, default_thresholds, triage

__all__ = ["RULES", "THRESHOLDS", "Finding", "Status", "TriageResult", "default_thresholds", "triage"]
