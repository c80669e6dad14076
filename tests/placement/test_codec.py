"""Round trips of the stored JSON forms (``scheduling.placement.codec``)."""

from __future__ import annotations

import random

import pytest

from scheduling.placement.codec import (
    DRS_SHAPE,
    MIG_SHAPE,
    AssignmentError,
    StoredProfiles,
    assignment_from_json,
    assignment_to_json,
    device_profiles_from_json,
    device_profiles_to_json,
    granted_uuids,
    mig_profiles_from_json,
    mig_profiles_to_json,
    profile_shape,
)
from scheduling.placement.types import (
    ContainerAssignment,
    DeviceGrant,
    MigPlacement,
    MigProfile,
    PodAssignment,
)


def _grant(rng: random.Random, i: int) -> DeviceGrant:
    mig = rng.random() < 0.3
    return DeviceGrant(
        uuid=f"GPU-{i}",
        type=rng.choice(["NVIDIA", "MLU", "Ascend910B3"]),
        memory_mib=rng.randrange(0, 81920),
        cores_percent=rng.randrange(0, 101),
        vendor=rng.choice(["NVIDIA", "Cambricon", "Ascend"]),
        index=rng.randrange(8),
        mig_profile="1g.10gb" if mig else "",
        mig_start=rng.randrange(7) if mig else -1,
        mig_size=1 if mig else 0,
        template=rng.choice(["", "vir02"]),
        model=rng.choice(["", "A100-SXM4-80GB"]),
        counters=tuple((f"c{k}", rng.randrange(1, 9)) for k in range(rng.randrange(3))),
        slices=rng.choice([0, 0, 2]),
    )


@pytest.mark.parametrize("seed", range(50))
def test_an_assignment_reads_back_as_it_was_written(seed):
    rng = random.Random(seed)
    pod = PodAssignment(
        pod=f"p-{seed}",
        node="n1",
        containers=tuple(
            ContainerAssignment(
                f"c{c}",
                tuple(_grant(rng, 10 * c + g) for g in range(rng.randrange(4))),
                init=rng.random() < 0.3,
            )
            for c in range(rng.randrange(1, 4))
        ),
        cpu_milli=4000,
        memory_mib=16384,
    )
    data = assignment_to_json(pod)
    back = assignment_from_json(
        data, pod="unused", node="n1", cpu_milli=4000, memory_mib=16384, vendor_of=lambda _: None
    )
    assert back == pod
    assert granted_uuids(data) == {g.uuid for c in pod.containers for g in c.devices}


def test_a_grant_without_vendor_takes_the_inventory_s_or_is_refused():
    data = {
        "containers": [
            {"name": "m", "devices": [{"uuid": "GPU-x", "memory_mib": 1, "cores_percent": 2}]}
        ]
    }
    pod = assignment_from_json(
        data, pod="j-0", node="n", cpu_milli=0, memory_mib=0, vendor_of={"GPU-x": "NVIDIA"}.get
    )
    assert pod.pod == "j-0" and pod.containers[0].devices[0].vendor == "NVIDIA"
    with pytest.raises(AssignmentError, match="GPU-x"):
        assignment_from_json(data, pod="j", node="n", cpu_milli=0, memory_mib=0, vendor_of={}.get)


def test_mig_profiles_read_back_and_a_malformed_entry_is_skipped():
    profiles = (
        MigProfile("1g.10gb", 9856, 14, 1, (MigPlacement(0, 1), MigPlacement(6, 1))),
        MigProfile("7g.80gb", 80000, 100, 7, (MigPlacement(0, 8),)),
    )
    rows = mig_profiles_to_json(profiles)
    assert mig_profiles_from_json(rows) == profiles
    assert mig_profiles_from_json([*rows, {"name": "bad"}, "junk"]) == profiles
    assert mig_profiles_from_json(None) == ()


def test_each_device_profile_shape_round_trips_in_its_own_shape_only():
    mig = (
        MigProfile("1g.10gb", 9856, 14, 1, (MigPlacement(0, 1), MigPlacement(1, 1))),
        MigProfile("7g.80gb", 81920, 100, 7, (MigPlacement(0, 8),)),
    )
    custom = {"profiles": {"3g.24gb": "pid-3", "1g.8gb": "pid-1"}, "minor": "5"}
    assert profile_shape("EnflameDRS") == DRS_SHAPE
    assert profile_shape("NVIDIA") == MIG_SHAPE
    mig_rows = device_profiles_to_json(MIG_SHAPE, mig=mig, custom=custom, index=2)
    drs_rows = device_profiles_to_json(DRS_SHAPE, mig=mig, custom=custom, index=2)
    assert device_profiles_from_json(mig_rows, MIG_SHAPE, index=2) == StoredProfiles(
        MIG_SHAPE, mig=mig
    )
    assert drs_rows == [
        {"name": "1g.8gb", "profile_id": "pid-1", "slice_count": 1, "minor": "5"},
        {"name": "3g.24gb", "profile_id": "pid-3", "slice_count": 3, "minor": "5"},
    ]
    assert device_profiles_from_json(drs_rows, DRS_SHAPE, index=2) == StoredProfiles(
        DRS_SHAPE,
        drs={
            "profiles": {"1g.8gb": "pid-1", "3g.24gb": "pid-3"},
            "maxSlice": 3,
            "index": "2",
            "minor": "5",
        },
    )
    # each reader skips the other shape's rows rather than misreading them
    assert device_profiles_from_json(drs_rows, MIG_SHAPE).mig == ()
    assert device_profiles_from_json(mig_rows, DRS_SHAPE, index=2).drs == {
        "profiles": {},
        "maxSlice": 0,
        "index": "2",
        "minor": "",
    }
    with pytest.raises(ValueError, match="unknown profile shape"):
        device_profiles_from_json(mig_rows, "vgpu")
    with pytest.raises(ValueError, match="unknown profile shape"):
        device_profiles_to_json("vgpu")
