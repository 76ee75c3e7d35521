"""What `docker build` sends into the image (.dockerignore): the code, its docs and static files, and
none of a developer's secrets, data or environment. Docker's own matching (Go's filepath.Match per
path element, `**` for any depth) is followed for the patterns the file uses; a pattern of another
kind fails the test, so the check cannot silently stop matching."""

from __future__ import annotations

import fnmatch
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def patterns() -> list[str]:
    lines = (REPO / ".dockerignore").read_text().splitlines()
    found = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    for pattern in found:
        assert not pattern.startswith("!"), f"{pattern}: exceptions are not followed by this test"
    return found


def left_out(path: str) -> bool:
    """Whether Docker leaves `path` (relative, with /) out of the build context: a pattern matching
    the path or one of its parent folders."""
    parts = path.split("/")
    for pattern in patterns():
        for end in range(1, len(parts) + 1):
            prefix = "/".join(parts[:end])
            if pattern.startswith("**/"):
                if fnmatch.fnmatchcase(parts[end - 1], pattern[3:]):
                    return True
            elif pattern.count("/") == prefix.count("/") and fnmatch.fnmatchcase(prefix, pattern):
                return True
    return False


@pytest.mark.parametrize(
    "path",
    [
        ".env",  # SECRET_KEY, database password of a developer's setup
        ".env.production",
        "data/db.sqlite3",  # the demo database, with the logins make demo printed
        "data/storage/series/ab/cd.parquet",
        ".venv/bin/python",
        "bench/.cache/demo-10000.zip",
        ".git/config",
        "fleet/__pycache__/models.cpython-311.pyc",
    ],
)
def test_secrets_data_and_the_environment_stay_out_of_the_image(path):
    assert left_out(path), f"{path} would be copied into the image"


@pytest.mark.parametrize(
    "path",
    [
        "manage.py",
        "requirements.txt",
        "constraints.txt",
        "config/settings.py",
        "fleet/models.py",
        "templates/base.html",
        "static/css/app.css",
        "docs/archive-format.md",  # the product shows it as a page (/docs/archive-format/)
        "fleet/schemas/job.schema.json",
    ],
)
def test_the_code_docs_and_static_files_go_in(path):
    assert (REPO / path).exists(), path
    assert not left_out(path), f"{path} would be missing from the image"
