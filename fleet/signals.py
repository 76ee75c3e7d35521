"""Signals fleet sends so that triage can react without fleet importing triage."""

from django.dispatch import Signal

# Sent after an ingest run stored jobs; kwargs: job_ids (list[int]) of created or changed jobs, run_id.
jobs_ingested = Signal()
