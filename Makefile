# Fleet Triage. `make demo` runs the product on its embedded defaults; `make test` runs the suite.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
DEMO_ARCHIVE := data/demo-fleet.zip
DEMO_JOBS ?= 300
# Where `make demo` / `make serve` listen: `make demo PORT=8080` when 8000 is taken.
PORT ?= 8000
# The links in mails (digests) and the run page an import prints lead to that port, unless
# PUBLIC_BASE_URL is set: its default is 127.0.0.1:8000, whatever PORT is.
DEMO_ENV := DEBUG=1 PUBLIC_BASE_URL=$${PUBLIC_BASE_URL:-http://127.0.0.1:$(PORT)}
# The server itself runs with DEBUG off: a demo user who mistypes an address or opens another team's job
# gets the product's 404 page, not Django's technical one listing every URL pattern. What DEBUG=1 gave the
# demo, it is given here: the SECRET_KEY the commands above keep in data/secret_key (made first when there
# is none), webhooks on http. The CSS comes from WhiteNoise as without DEBUG; cookies stay http-friendly
# (they are Secure only with HTTPS=1).
SERVE_ENV := DEBUG=0 ALERT_WEBHOOK_ALLOW_HTTP=$${ALERT_WEBHOOK_ALLOW_HTTP:-1} \
	SECRET_KEY="$${SECRET_KEY:-$$(cat "$${DATA_DIR:-data}/secret_key")}" \
	PUBLIC_BASE_URL=$${PUBLIC_BASE_URL:-http://127.0.0.1:$(PORT)}

.PHONY: install demo demo-data serve test lint bench worker clean-demo constraints audit

$(VENV)/.installed: requirements.txt requirements-dev.txt constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt -c constraints.txt
	touch $@

install: $(VENV)/.installed

## demo: install, migrate, build and import the demo fleet, print logins, serve at 127.0.0.1:$(PORT) (8000)
demo: demo-data serve

demo-data: install
	$(DEMO_ENV) $(PY) manage.py migrate --noinput
	$(DEMO_ENV) $(PY) manage.py make_demo_fleet --out $(DEMO_ARCHIVE) --jobs $(DEMO_JOBS) --seed 42
	$(DEMO_ENV) $(PY) manage.py ingest_archive $(DEMO_ARCHIVE)
	$(DEMO_ENV) $(PY) manage.py setup_demo

serve: install
	@echo "Fleet Triage at http://127.0.0.1:$(PORT)/ (log in with a login printed above; Ctrl-C stops)"
	@$(DEMO_ENV) $(PY) manage.py shell -c "" # makes data/secret_key when there is none yet
	$(SERVE_ENV) $(PY) manage.py runserver 127.0.0.1:$(PORT)

## test: the whole suite; uses DATABASE_URL / REDIS_URL when set (CI sets both), SQLite otherwise.
## TEST_WORKERS processes share the tests a file at a time (pytest-xdist; each has its own database);
## the 20 slowest tests are listed at the end.
## Three on two cores: many tests wait on a browser, a server or a worker, and a third keeps the CPUs busy
## (the suite's test time added up was 2.8 times its run time with three, 2.0 with two; CI, 2026-12-07).
TEST_WORKERS ?= 3
test: install
	SECRET_KEY=$${SECRET_KEY:-insecure-key-for-tests-only} $(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile --durations=20 $(PYTEST_ARGS)

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

## constraints: re-pin constraints.txt from the venv (after upgrading a package and running the tests)
constraints: install
	{ sed -n '1,2p' constraints.txt; $(PY) -m pip freeze --exclude-editable | grep -vi '^fleet-triage'; } > constraints.txt.new
	mv constraints.txt.new constraints.txt

## audit: known vulnerabilities in the pinned dependencies (warns, does not fail, when offline)
audit: install
	.ci/audit-deps

## bench: benchmarks under bench/, results in bench/results/*.json (file_page.py: a page of a large log, and a search; ingest_steps.py: an import's cost per step; ingest_without.py: the import without its blob files, log scan and GC, beside the floor; ingest_lean.py: the least any importer of this shape can take, beside the floor; blob_files.py: one blob file on the data folder against tmpfs; ingest_split.py: an archive whole against its halves side by side, on PostgreSQL; series_encodings.py: one job's series blob in each candidate format, CPU and size; compare_ingest.py DIR...: checkouts' imports side by side; triage_instructions.py DIR...: instructions per triaged job, with valgrind; load.py: gunicorn + 50 clients + an ingest; DATABASE_URL for PostgreSQL)
bench: install
	$(DEMO_ENV) $(PY) bench/run.py
	$(DEMO_ENV) $(PY) bench/ingest_steps.py
	$(DEMO_ENV) $(PY) bench/dashboard.py 100000
	$(PY) bench/file_page.py
	if command -v valgrind >/dev/null; then $(PY) bench/triage_instructions.py; else echo "valgrind not installed: skipping bench/triage_instructions.py"; fi
	$(PY) bench/load.py --jobs 100000 --clients 50 --duration 60

## worker: a Celery worker for REDIS_URL (the embedded mode needs none)
worker: install
	$(VENV)/bin/celery -A config worker --loglevel=info --concurrency=2

clean-demo:
	rm -rf data/fleet-triage.sqlite3* data/storage $(DEMO_ARCHIVE) data/demo-fleet.truth.json
