"""The property tests (hypothesis: the archive and connector fuzzing, the series codec, the API
contract) draw the same examples on every CI run, so that a rare crash they have not met yet turns up
in a deliberate deeper hunt (FUZZ_EXAMPLES), not in the CI run of an unrelated change; a developer's
run and a deeper hunt still draw new ones each time."""

from __future__ import annotations

import os

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import hypothesis_profile
from tests.test_archive_fuzz import FUZZ as ARCHIVE_FUZZ
from tests.test_connector_fuzz import FUZZ as CONNECTOR_FUZZ


def test_ci_draws_fixed_examples_and_a_deeper_hunt_or_a_developer_new_ones():
    assert hypothesis_profile({"CI": "true"}) == "ci"
    assert hypothesis_profile({"CI": "true", "FUZZ_EXAMPLES": "5000"}) == "hunt"
    assert hypothesis_profile({"FUZZ_EXAMPLES": "5000"}) == "hunt"
    assert hypothesis_profile({}) == "dev"
    assert hypothesis_profile({"CI": "true", "HYPOTHESIS_PROFILE": "dev"}) == "dev"  # asked for by name
    ci, hunt, dev = (settings.get_profile(name) for name in ("ci", "hunt", "dev"))
    assert ci.derandomize and ci.database is None
    assert not hunt.derandomize and not dev.derandomize


def test_the_fuzz_tests_follow_the_profile_this_run_loaded():
    """conftest loads the profile before the test modules build their settings from it (CI sets CI)."""
    derandomized = hypothesis_profile(os.environ) == "ci"
    assert settings.default.derandomize is derandomized
    assert ARCHIVE_FUZZ.derandomize is derandomized and CONNECTOR_FUZZ.derandomize is derandomized
    # Each keeps its own number of examples (FUZZ_EXAMPLES, else 40 and 150).
    assert ARCHIVE_FUZZ.max_examples == int(os.environ.get("FUZZ_EXAMPLES", "40"))
    assert CONNECTOR_FUZZ.max_examples == int(os.environ.get("FUZZ_EXAMPLES", "150"))


def test_under_the_ci_profile_two_runs_of_a_property_draw_the_same_examples():
    drawn: list[bytes] = []

    @settings(settings.get_profile("ci"), max_examples=30)
    @given(st.binary(max_size=64))
    def property_of(data):
        drawn.append(data)

    property_of()
    first, drawn[:] = list(drawn), []
    property_of()
    assert drawn == first and len(set(first)) > 5
