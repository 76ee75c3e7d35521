"""Load run: the app under gunicorn (2 x CPUs + 1 workers) on a ~100k-job database, driven by concurrent
logged-in clients over the main pages while an ingest runs next to it.

    .venv/bin/python bench/load.py [--jobs 100000] [--clients 50] [--duration 45]
    DATABASE_URL=postgres://... .venv/bin/python bench/load.py      # PostgreSQL instead of SQLite

Seeds the jobs with `seed_large_fleet` (reused when already there), builds a demo archive, then:
1. *unloaded*: one client requests each page `--repeats` times (the p50 baseline, same server);
2. *loaded*: `--clients` threads (requests.Session, each with its own login session) request the
   pages in turn for `--duration` s while `manage.py ingest_archive` imports the demo archive.
Writes bench/results/load.json: requests/s, p50/p95/p99 and errors per page, the ratio of each page's
loaded p50 to its unloaded p50, and whether (and how fast) the ingest completed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
RESULTS = REPO / "bench" / "results"
VENV_BIN = Path(sys.executable).parent


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))] if ordered else float("nan")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def setup(jobs: int, archive: Path) -> tuple[dict, list[str], str]:
    """Migrate, seed, create the bench operator; returns pages, session keys, cookie name."""
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.auth.models import Group, User
    from django.contrib.sessions.backends.db import SessionStore
    from django.core.management import call_command

    from fleet.models import Job

    call_command("migrate", verbosity=0)
    if Job.objects.filter(cluster__name__startswith="load-").count() < jobs:
        print(f"seeding {jobs} jobs ...", flush=True)
        call_command("seed_large_fleet", jobs=jobs, verbosity=0, stdout=open(os.devnull, "w"))  # noqa: SIM115
    if not archive.exists():
        call_command("make_demo_fleet", out=str(archive), jobs=300, seed=42, stdout=open(os.devnull, "w"))  # noqa: SIM115
    user, _ = User.objects.get_or_create(username="load-operator")
    user.groups.add(Group.objects.get_or_create(name="operators")[0])
    sessions = []
    for _ in range(64):  # one login session per client, as if each had logged in
        store = SessionStore()
        store[SESSION_KEY] = str(user.pk)
        store[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
        store[HASH_SESSION_KEY] = user.get_session_auth_hash()
        store.create()
        sessions.append(store.session_key)
    detail = list(Job.objects.filter(cluster__name__startswith="load-").order_by("-unused_gpu_hours")[:20])
    pages = {
        "overview": ["/overview/"],
        "teams": ["/teams/?period=30d"],
        "jobs": ["/jobs/", "/jobs/?page=2", "/jobs/?team=load-team-03"],
        "job detail": [f"/jobs/{job.pk}/" for job in detail],
        "api jobs": ["/api/v1/jobs/?low_util=true", "/api/v1/jobs/?team=load-team-03"],
        "api job": [f"/api/v1/jobs/{job.pk}/" for job in detail],
    }
    return pages, sessions, settings.SESSION_COOKIE_NAME


def start_gunicorn(port: int, env: dict, log: Path, workers: int = 2) -> subprocess.Popen:
    command = [str(VENV_BIN / "gunicorn"), "config.wsgi", "--workers", str(workers), "--bind", f"127.0.0.1:{port}"]
    command += ["--timeout", "120", "--log-level", "warning"]
    process = subprocess.Popen(command, cwd=REPO, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT)
    import requests

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if requests.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                return process
        except requests.RequestException:
            pass
        time.sleep(0.3)
    process.terminate()
    raise SystemExit(f"gunicorn did not answer; see {log}")


def drive(base: str, pages: dict, session_key: str, cookie: str, stop: threading.Event, out: list, seed: int):
    import requests

    rng = random.Random(seed)
    http = requests.Session()
    http.cookies.set(cookie, session_key, domain="127.0.0.1")
    names = list(pages)
    while not stop.is_set():
        name = rng.choice(names)
        url = base + rng.choice(pages[name])
        started = time.perf_counter()
        try:
            response = http.get(url, timeout=60, allow_redirects=False)
            ok = response.status_code == 200
            status = response.status_code
        except requests.RequestException as exc:
            ok, status = False, type(exc).__name__
        out.append((name, (time.perf_counter() - started) * 1000, ok, status))


def main() -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of load")
    parser.add_argument(
        "--workers", type=int, default=2 * (os.cpu_count() or 1) + 1, help="gunicorn workers (default 2 x CPUs + 1)"
    )
    parser.add_argument("--repeats", type=int, default=15, help="unloaded requests per page")
    args = parser.parse_args()

    data_dir = Path(os.environ.get("LOAD_DATA_DIR") or tempfile.mkdtemp(prefix="fleet-load-"))
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATA_DIR": str(data_dir),
        "DEBUG": "0",  # served as in production (whitenoise, no debug toolbar or tracebacks)
        "SECRET_KEY": os.environ.get("SECRET_KEY") or "load-bench-key-" + "x" * 40,
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "LOG_LEVEL": "WARNING",
    }
    env.pop("REDIS_URL", None)  # the ingest runs in-process (embedded mode): no worker to start
    os.environ.update(env)
    archive = data_dir / "load-demo-fleet.zip"
    pages, sessions, cookie = setup(args.jobs, archive)
    from django.conf import settings

    from fleet.models import Job

    database = settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]
    job_count = Job.objects.count()
    from django.db import connections

    connections.close_all()

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = start_gunicorn(port, env, data_dir / "gunicorn.log", workers=args.workers)
    try:
        # 1. Unloaded: one client, nothing else running.
        unloaded: list = []
        stop = threading.Event()
        import requests

        http = requests.Session()
        http.cookies.set(cookie, sessions[0], domain="127.0.0.1")
        for name, urls in pages.items():
            for url in urls[:1]:
                http.get(base + url)  # warm
            for index in range(args.repeats):
                url = base + urls[index % len(urls)]
                started = time.perf_counter()
                response = http.get(url, allow_redirects=False)
                unloaded.append((name, (time.perf_counter() - started) * 1000, response.status_code == 200, 200))
        assert all(ok for *_, ok, _ in unloaded), "a page failed before the load started"

        # 2. Loaded: the clients plus an ingest of the demo archive.
        ingest_log = (data_dir / "ingest.log").open("w")
        ingest_started = time.monotonic()
        ingest = subprocess.Popen(
            [sys.executable, "manage.py", "ingest_archive", str(archive)],
            cwd=REPO,
            env=env,
            stdout=ingest_log,
            stderr=subprocess.STDOUT,
        )
        ingest_seconds = None
        loaded: list = []
        threads = [
            threading.Thread(
                target=drive, args=(base, pages, sessions[i % len(sessions)], cookie, stop, loaded, i), daemon=True
            )
            for i in range(args.clients)
        ]
        load_started = time.monotonic()
        for thread in threads:
            thread.start()
        while time.monotonic() - load_started < args.duration:
            if ingest_seconds is None and ingest.poll() is not None:
                ingest_seconds = time.monotonic() - ingest_started
            time.sleep(0.1)
        stop.set()
        for thread in threads:
            thread.join(timeout=120)
        load_seconds = time.monotonic() - load_started
        finished_during_load = ingest_seconds is not None
        ingest_rc = ingest.wait(timeout=3600)
        if ingest_seconds is None:
            ingest_seconds = time.monotonic() - ingest_started
        ingest_log.close()
    finally:
        server.terminate()
        server.wait(timeout=30)

    from fleet.models import IngestRun

    last_run = IngestRun.objects.order_by("-pk").first()
    result = {
        "benchmark": "load",
        "database": database,
        "jobs_in_database": job_count,
        "server": f"gunicorn, {args.workers} sync workers, DEBUG=0",
        "clients": args.clients,
        "duration_s": round(load_seconds, 1),
        "requests": len(loaded),
        "requests_per_s": round(len(loaded) / load_seconds, 1),
        "errors": sum(1 for *_, ok, _ in loaded if not ok),
        "error_statuses": sorted({str(status) for *_, ok, status in loaded if not ok}),
        "pages": {},
        "ingest": {
            "archive": "make_demo_fleet --jobs 300 --seed 42",
            "exit_code": ingest_rc,
            "status": last_run.status if last_run else None,
            "jobs_done": last_run.jobs_done if last_run else None,
            "seconds": round(ingest_seconds, 1),
            "completed_during_load": finished_during_load,
        },
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": " ".join(["bench/load.py", *sys.argv[1:]]),
    }
    for name in pages:
        quiet = [ms for page, ms, *_ in unloaded if page == name]
        busy = [ms for page, ms, ok, _ in loaded if page == name and ok]
        result["pages"][name] = {
            "requests": sum(1 for page, *_ in loaded if page == name),
            "errors": sum(1 for page, _, ok, _ in loaded if page == name and not ok),
            "p50_ms": round(statistics.median(busy), 1) if busy else None,
            "p95_ms": round(percentile(busy, 0.95), 1) if busy else None,
            "p99_ms": round(percentile(busy, 0.99), 1) if busy else None,
            "unloaded_p50_ms": round(statistics.median(quiet), 1),
            "p50_ratio_loaded_to_unloaded": round(statistics.median(busy) / statistics.median(quiet), 2)
            if busy
            else None,
        }
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "load.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    print(f"wrote {out.relative_to(REPO)}")
    if not os.environ.get("LOAD_DATA_DIR"):
        shutil.rmtree(data_dir, ignore_errors=True)
    return result


if __name__ == "__main__":
    main()
