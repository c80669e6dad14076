"""Level names and the synthetic rack layout: one home for the word a reason shows, the short
names a request may give, and the layout of clusters without their own (issue 31)."""

from __future__ import annotations

import pytest

from scheduling.placement import topology_index
from scheduling.placement.topology_names import (
    RACK_LAYOUT_LEVELS,
    level_short_names,
    level_word,
    resolve_level,
    synthetic_rack_labels,
)

LEVELS = list(RACK_LAYOUT_LEVELS)


def test_short_names_and_the_word_shown():
    assert level_short_names(LEVELS[2]) == ("topology-rack", "rack")
    assert level_short_names(LEVELS[3]) == ("hostname",)
    assert level_short_names("nvidia.com/gpu.clique") == ("gpu.clique",)
    # a dash that is not the topology- prefix stays part of the one name (was "level" before)
    assert level_short_names("example.com/pod-level") == ("pod-level",)
    assert [level_word(k) for k in LEVELS] == ["zone", "block", "rack", "hostname"]
    assert level_word("example.com/topology-") == "example.com/topology-"
    # the word a reason shows is always a name the input takes
    for key in [*LEVELS, "nvidia.com/gpu.clique", "example.com/pod-level"]:
        assert level_word(key) in level_short_names(key)
        assert resolve_level([key], level_word(key)) == key
    # the placement core's reasons use this very rule
    assert topology_index.level_word is level_word


def test_resolve_level_by_key_or_short_name():
    assert [resolve_level(LEVELS, n, "dc") for n in ("zone", "topology-block", "rack")] == LEVELS[
        :3
    ]
    assert resolve_level(LEVELS, LEVELS[3], "dc") == LEVELS[3]
    with pytest.raises(ValueError, match=r"'aisle' is not a level of topology dc: its levels"):
        resolve_level(LEVELS, "aisle", "dc")
    two = ["a.example/topology-rack", "b.example/rack"]
    with pytest.raises(ValueError, match=r"'rack' names several levels of topology t \(a\.ex"):
        resolve_level(two, "rack", "t")
    assert resolve_level(two, "topology-rack", "t") == two[0]


def test_synthetic_rack_layout():
    assert synthetic_rack_labels(9, "n9", 4, 2) == {
        LEVELS[0]: "zone-0",
        LEVELS[1]: "block-1",
        LEVELS[2]: "rack-2",
        LEVELS[3]: "n9",
    }
    assert synthetic_rack_labels(7, "n7", 4, 2)[LEVELS[1]] == "block-0"
    with pytest.raises(ValueError, match="at least 1"):
        synthetic_rack_labels(0, "n0", 0, 2)
