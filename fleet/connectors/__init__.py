"""Live platform connectors: pull job records, metric series and artifacts from what a fleet runs.

- `base` — the small contract every connector implements, and its errors.
- `registry` — connector classes register themselves by kind with a decorator.
- `http` — the one HTTP client: timeouts, retries with backoff and jitter, auth.
- `prometheus`, `slurm`, `kubernetes`, `generic` — one module per kind; each holds PURE
  normalisers (bytes in, canonical records out, no Django) and a thin connector class.
- `native` — the same normalisers applied to native files carried in an archive.
- `models`, `sync`, `tasks`, `views` — the Django side: configuration, the pull service, Celery, UI.

Importing this package imports no Django models, so the archive parser can use the normalisers.
"""
