"""README's first walk through the demo (and docs/labeling.md's demo study) name what `make demo` makes:
its logins, the study's name, size and demo raters, and the fleet it is drawn from (300 jobs, seed 42).
A constant changed in the code (a study of 30 jobs, a renamed rater, another seed in the Makefile)
fails here rather than leaving a new user looking for what the README promised. The figures that need
the whole 300-job demo built (its last week ending 2026-11-22, the demo raters' kappa 0.894) were checked
by hand on 2026-12-07; tests/test_demo_ingest.py holds the same on a small demo fleet."""

from __future__ import annotations

import re

from tests.conftest import REPO
from triage.demo import study as demo_study

README = (REPO / "README.md").read_text(encoding="utf-8")
LABELING = (REPO / "docs" / "labeling.md").read_text(encoding="utf-8")
MAKEFILE = (REPO / "Makefile").read_text(encoding="utf-8")


def walk() -> str:
    start = README.index("A first walk through the demo")
    return re.sub(r"\s+", " ", README[start : README.index("\n\n", start)])


def test_the_walk_names_the_demo_study_its_size_and_raters_as_setup_demo_makes_them():
    text = walk()
    assert f"*{demo_study.DEMO_STUDY_NAME}*" in text
    assert f"{demo_study.DEMO_STUDY_SIZE} of the demo's low-utilization jobs" in text
    assert f"labelled all {demo_study.DEMO_STUDY_SIZE} and submitted" in text
    assert f"on those {demo_study.DEMO_STUDY_SIZE} jobs are hidden" in text
    first, second = demo_study.DEMO_RATERS
    assert f"(`{first}` and `{second}`," in text
    labeling = re.sub(r"\s+", " ", LABELING)
    assert f"*{demo_study.DEMO_STUDY_NAME}*, {demo_study.DEMO_STUDY_SIZE} low-utilization jobs" in labeling
    assert f"stratified by team (seed {demo_study.DEMO_STUDY_SEED})" in labeling


def test_the_walk_and_the_figures_quoted_are_of_the_makefiles_demo_fleet():
    """0.894 and 2026-11-22 are figures of the demo `make demo` builds: 300 jobs, seed 42."""
    assert "DEMO_JOBS ?= 300" in MAKEFILE
    assert re.search(r"make_demo_fleet --out \$\(DEMO_ARCHIVE\) --jobs \$\(DEMO_JOBS\) --seed 42\n", MAKEFILE)
    assert "300-job demo fleet" in README and "(`make demo`: 300 jobs, seed 42)" in re.sub(r"\s+", " ", LABELING)


def test_the_walk_names_the_three_logins_setup_demo_prints():
    from triage.management.commands import setup_demo

    source = (REPO / "triage" / "management" / "commands" / "setup_demo.py").read_text(encoding="utf-8")
    logins = re.findall(r'\("(\w+)", f?"(?:Operator|Researcher|Member)', source)
    assert logins == ["operator", "researcher", "alice"], setup_demo.__file__
    text = walk()
    assert "logged in as `operator`" in text and "`alice` sees the same pages" in text
    assert "`researcher` finds one study under **Studies**" in text
