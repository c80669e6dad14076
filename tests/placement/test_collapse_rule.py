"""HAMi's init-container collapse rule has one home, ``scheduling.placement.booking.collapse``:
a property test over random pods checks the rule itself (max over init containers, sum over
app containers, per device) and that admission's charges read the same numbers."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest

from scheduling.admission.charges import charges_for_pods
from scheduling.admission.types import Dimension, Flavor, GroupKind, GroupSpec
from scheduling.placement.booking import DeviceBooking, collapse
from scheduling.placement.types import ContainerAssignment, DeviceGrant, PodAssignment

UUIDS = ("GPU-a", "GPU-b", "GPU-c")


@dataclass(frozen=True)
class _Device:
    type: str
    memory_mib: int
    cores_percent: int


def _pod(rng: random.Random) -> PodAssignment:
    containers = []
    for i in range(rng.randint(1, 5)):
        grants = tuple(
            DeviceGrant(uuid, "NVIDIA", rng.randrange(0, 20000, 1024), rng.randrange(0, 60, 5))
            for uuid in rng.sample(UUIDS, rng.randint(1, 3))
        )
        containers.append(ContainerAssignment(f"c{i}", grants, init=rng.random() < 0.4))
    return PodAssignment("p", "n", tuple(containers))


def _expected(pod: PodAssignment) -> dict[str, DeviceBooking]:
    """The rule written out the slow way."""
    out = {}
    for uuid in UUIDS:
        init = [
            [(1, g.memory_mib, g.cores_percent) for g in c.devices if g.uuid == uuid]
            for c in pod.containers
            if c.init
        ]
        app = [
            (1, g.memory_mib, g.cores_percent)
            for c in pod.containers
            if not c.init
            for g in c.devices
            if g.uuid == uuid
        ]
        init_rows = [tuple(map(sum, zip(*rows, strict=True))) for rows in init if rows]
        if not init_rows and not app:
            continue
        i = [max(col) for col in zip(*init_rows, strict=True)] if init_rows else [0, 0, 0]
        a = [sum(col) for col in zip(*app, strict=True)] if app else [0, 0, 0]
        out[uuid] = DeviceBooking(max(a[0], i[0]), max(a[1], i[1]), max(a[2], i[2]))
    return out


@pytest.mark.parametrize("seed", range(200))
def test_collapse_is_max_over_init_and_sum_over_app_containers(seed):
    pod = _pod(random.Random(seed))
    assert collapse(pod) == _expected(pod)


def test_admission_charges_the_collapsed_memory_and_cores():
    rng = random.Random(7)
    pods = [_pod(rng) for _ in range(50)]
    devices = {u: _Device("A100", 81920, 100) for u in UUIDS}
    group = GroupSpec(name="g", kind=GroupKind.SHARED, flavors=(Flavor("*", ("A100",)),))
    charges = charges_for_pods(pods, devices, group)
    booked = [b for pod in pods for b in collapse(pod).values()]
    assert charges[("*", Dimension.MEMORY_MIB)] == sum(b.memory_mib for b in booked)
    assert charges[("*", Dimension.CORES_PERCENT)] == sum(b.cores_percent for b in booked)
