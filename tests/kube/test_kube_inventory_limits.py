"""Bounds and schemas of the inventory readers (pure): legacy and JSON registrations, JSON
depth, ResourceSlices."""

from __future__ import annotations

import json

import pytest

from scheduling.devices.defaults import default_device_configs
from scheduling.kube.hami.nodes import parse_node_devices
from scheduling.kube.limits import InventoryLimits, load_json
from scheduling.kube.slices import slices_to_inventory

DCU = next(c for c in default_device_configs() if c.vendor == "DCU")
NVIDIA = next(c for c in default_device_configs() if c.vendor == "NVIDIA")


def test_legacy_entries_are_checked_field_by_field():
    with pytest.raises(
        ValueError,
        match=r"hami.io/node-dcu-register entry 1 .*devmem: Input "
        r"should be greater than or equal to 0",
    ):
        parse_node_devices("DCU-0,4,100,100,Z100,0,true:DCU-1,4,-7,100,Z100,0,true:", "n", DCU)
    with pytest.raises(ValueError, match="health: Input should be a valid boolean"):
        parse_node_devices("DCU-0,4,100,100,Z100,0,maybe:", "n", DCU)
    small = InventoryLimits(max_devices_per_node=1)
    with pytest.raises(ValueError, match="2 devices exceed the bound of 1 per node"):
        parse_node_devices("DCU-0,4,1,100,Z,0,true:DCU-1,4,1,100,Z,0,true:", "n", DCU, small)


def test_json_entries_name_the_field_and_keep_unknown_keys_ignored():
    ok = parse_node_devices(
        json.dumps(
            [{"id": "GPU-a", "devmem": 10, "future": {"x": 1}, "custominfo": {"NetworkID": 1}}]
        ),
        "n",
        NVIDIA,
    )
    assert (ok[0].uuid, ok[0].memory_mib, ok[0].network_id) == ("GPU-a", 10, 1)
    with pytest.raises(ValueError, match=r"\[0\].custominfo: NetworkID 'x' is not an integer"):
        parse_node_devices(
            json.dumps([{"id": "GPU-a", "custominfo": {"NetworkID": "x"}}]), "n", NVIDIA
        )
    with pytest.raises(ValueError, match=r"\[0\].id: Input should be a valid string"):
        parse_node_devices(json.dumps([{"id": 5}]), "n", NVIDIA)
    many = [{"name": f"p{i}", "placements": [{"start": 0, "size": 1}] * 3} for i in range(3)]
    with pytest.raises(
        ValueError,
        match=r"migProfiles: .*less than or equal to 2 \(setting "
        r"INVENTORY_MAX_MIG_PROFILES\)",
    ):
        parse_node_devices(
            json.dumps([{"id": "GPU-a", "migProfiles": many}]),
            "n",
            NVIDIA,
            InventoryLimits(max_mig_profiles=2),
        )


def test_json_depth_and_size_are_bounded_before_parsing():
    assert load_json('{"a": "[[[[[[[["}', "x", InventoryLimits(max_json_depth=1)) == {
        "a": "[[[[[[[["
    }
    with pytest.raises(ValueError, match=r"x: JSON nested deeper than 2 \(setting "):
        load_json("[[[1]]]", "x", InventoryLimits(max_json_depth=2))
    with pytest.raises(ValueError, match="x: 12 bytes exceed the bound of 8"):
        load_json('"0123456789"', "x", InventoryLimits(max_annotation_bytes=8))


def test_a_slice_over_the_device_bound_is_refused_with_its_pool():
    devices = [{"name": f"d{i}", "attributes": {"uuid": {"string": f"U{i}"}}} for i in range(3)]
    inv = slices_to_inventory(
        [
            {
                "metadata": {"name": "big"},
                "spec": {
                    "driver": "d.example.com",
                    "pool": {"name": "p"},
                    "nodeName": "n",
                    "devices": devices,
                },
            }
        ],
        InventoryLimits(max_slice_devices=2),
    )
    assert inv.devices == ()
    assert inv.errors == (
        "ResourceSlice big: spec.devices: 3 devices exceed the bound of 2 "
        "(setting INVENTORY_MAX_SLICE_DEVICES) per slice",
    )
    assert inv.broken_pools == {("d.example.com", "p"): inv.errors[0]}


def test_the_depth_scan_stops_at_the_bound_and_skips_strings():
    from scheduling.kube.limits import _depth

    assert _depth('[[1, {"a": "[[[[[["}], []]') == 3  # brackets inside strings do not count
    assert _depth('"[[["') == 0
    assert _depth("[" * 100_000, stop_above=32) == 33  # ends at the first level over 32
    with pytest.raises(ValueError, match="deeper than 32"):
        load_json("[" * (1 << 20), "x", InventoryLimits(max_annotation_bytes=2 << 20))
