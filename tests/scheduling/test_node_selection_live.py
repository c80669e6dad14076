"""The live path with and without the placement core's incremental node selection: the same cycle
admits the same jobs on the same nodes (``PLACEMENT_INCREMENTAL_SELECTOR``)."""

import pytest
from django.test import override_settings

from console.bench_e2e.cycle import run_cycles
from scheduling.selectors.placement_profile import group_framework
from tests.builders import make_group

pytestmark = pytest.mark.django_db


def test_the_setting_switches_the_selector_of_a_groups_framework():
    group = make_group("g-sel")
    assert group_framework(group).selector is not None
    with override_settings(PLACEMENT_INCREMENTAL_SELECTOR=False):
        assert group_framework(group).selector is None


def test_a_mixed_shape_cycle_places_identically_with_and_without_the_selector():
    out = run_cycles(nodes=9, jobs=60)
    assert out["same_placements"] is True
    assert out["selector"]["admitted"] == out["loop"]["admitted"] >= 40
    # what does not fit this small cluster stays queued, the same in both worlds
    assert out["selector"]["queued_after"] == out["loop"]["queued_after"]
