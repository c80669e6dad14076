"""Pins of a planned target (scheduling.placement.pin): stored as JSON, applied to a request
as uuids_include per container (HAMi's use-gpuuuid) and a hostname node selector for pods
without devices; the placement core then lands exactly there or nowhere."""

from __future__ import annotations

import pytest
from placement_builders import gpu, node, nv, one, snap

from scheduling.placement import place
from scheduling.placement.pin import HOSTNAME_LABEL, PodPin, pin_request, pins_from_json, pins_of
from scheduling.placement.types import (
    ContainerAssignment,
    ContainerRequest,
    Decision,
    DeviceGrant,
    PlacementRequest,
    PodAssignment,
    PodRequest,
)


def _cluster():
    return snap(
        node("n1", [gpu("a1", index=0), gpu("a2", index=1)], labels={HOSTNAME_LABEL: "n1"}),
        node("n2", [gpu("b1", index=0)], labels={HOSTNAME_LABEL: "n2"}),
    )


def _grant(uuid):
    return DeviceGrant(uuid, "NVIDIA", 40960, 50)


def test_pins_round_trip_through_json():
    decision = Decision(
        True,
        (
            PodAssignment("p-0", "n1", (ContainerAssignment("c", (_grant("a2"),)),)),
            PodAssignment("p-1", "n2", (ContainerAssignment("c", ()),)),
        ),
    )
    pins = pins_of(decision)
    assert pins == (PodPin("n1", (("c", ("a2",)),)), PodPin("n2", ()))
    stored = [p.to_json() for p in pins]
    assert stored == [{"node": "n1", "devices": {"c": ["a2"]}}, {"node": "n2", "devices": {}}]
    assert pins_from_json(stored) == pins


@pytest.mark.parametrize(
    "data",
    [
        {"node": "n1"},
        [{"devices": {}}],
        [{"node": "", "devices": {}}],
        [{"node": "n1", "devices": {"c": "a1"}}],
        [{"node": "n1", "devices": {"c": [1]}}],
        ["n1"],
    ],
)
def test_a_malformed_pin_is_refused(data):
    with pytest.raises(ValueError, match="pin|pod 0"):
        pins_from_json(data)


def test_the_pinned_request_lands_on_the_planned_device_or_nowhere():
    cluster = _cluster()
    request = one(nv(cores_percent=50, memory_percent=50))
    free = place(cluster, request)
    assert free.schedulable
    planned = "b1" if free.pods[0].containers[0].devices[0].uuid != "b1" else "a2"
    node_name = "n2" if planned == "b1" else "n1"
    pinned = pin_request(request, (PodPin(node_name, (("c", (planned,)),)),), cluster)
    assert pinned is not None
    assert pinned.pods[0].containers[0].devices[0].uuids_include == (planned,)
    decision = place(cluster, pinned)
    assert decision.schedulable
    assert [g.uuid for g in decision.pods[0].containers[0].devices] == [planned]
    assert decision.pods[0].node == node_name

    # the planned device is taken: the pinned request does not place at all
    target = next(d for n in cluster.nodes.values() for d in n.devices if d.uuid == planned)
    target.used_cores_percent, target.used_slots = 80, 1
    cluster.touch(node_name)
    assert not place(cluster, pinned).schedulable
    assert place(cluster, request).schedulable  # the normal request still does


def test_a_pod_without_devices_is_pinned_by_its_hostname_label():
    cluster = _cluster()
    request = PlacementRequest("r", (PodRequest("r-0", 1000, 0, (ContainerRequest("c"),)),))
    pinned = pin_request(request, (PodPin("n2"),), cluster)
    assert pinned is not None
    assert pinned.pods[0].node_selector == {HOSTNAME_LABEL: "n2"}
    assert place(cluster, pinned).pods[0].node == "n2"


def test_pins_that_do_not_describe_the_request_give_none():
    cluster = _cluster()
    request = one(nv(cores_percent=50))
    assert pin_request(request, (), cluster) is None  # another pod count
    assert pin_request(request, (PodPin("n9", (("c", ("a1",)),)),), cluster) is None
    assert pin_request(request, (PodPin("n1", (("other", ("a1",)),)),), cluster) is None
    assert pin_request(request, (PodPin("n1"),), cluster) is None  # devices not planned
