"""Fleet's part of the JSON API (jobs, ingest runs, archive uploads)."""
