"""Fraction-correct charges from placement grants (charges_for)."""

import pytest

from scheduling.admission import AdmissionInputError, charges_for, device_milli
from scheduling.placement.types import (
    ContainerAssignment,
    Decision,
    DeviceGrant,
    DeviceUsage,
    PodAssignment,
)
from tests.admission.admission_builders import A100, A100_MIB, CORES, DEV, MEM, T4, T4_MIB, group

DEVICES = {
    "a0": DeviceUsage(
        uuid="a0", node="n1", index=0, type=A100, vendor="NVIDIA", memory_mib=A100_MIB
    ),
    "a1": DeviceUsage(
        uuid="a1", node="n1", index=1, type=A100, vendor="NVIDIA", memory_mib=A100_MIB
    ),
    "t0": DeviceUsage(uuid="t0", node="n2", index=0, type=T4, vendor="NVIDIA", memory_mib=T4_MIB),
    "x0": DeviceUsage(
        uuid="x0", node="n2", index=1, type="MLU370-X8", vendor="MLU", memory_mib=24576
    ),
}


def grant(uuid: str, memory_mib: int, cores: int) -> DeviceGrant:
    return DeviceGrant(uuid=uuid, type="NVIDIA", memory_mib=memory_mib, cores_percent=cores)


def decision(*pods: tuple[tuple[str, bool, tuple[DeviceGrant, ...]], ...]) -> Decision:
    return Decision(
        schedulable=True,
        pods=tuple(
            PodAssignment(
                pod=f"p{i}",
                node="n1",
                containers=tuple(
                    ContainerAssignment(name=name, devices=grants, init=init)
                    for name, init, grants in containers
                ),
            )
            for i, containers in enumerate(pods)
        ),
    )


def test_memory_percentage_is_charged_in_mib_of_the_device_it_landed_on():
    # 50 % of an 80 GiB A100 resolved by placement to 40960 MiB, 30 % cores.
    d = decision((("main", False, (grant("a0", 40960, 30),)),))
    assert charges_for(d, DEVICES, group()) == {
        ("a100", DEV): 500,
        ("a100", MEM): 40960,
        ("a100", CORES): 30,
    }


def test_whole_device_is_one_device_full_memory_and_100_cores():
    d = decision((("main", False, (grant("a0", A100_MIB, 100),)),))
    assert charges_for(d, DEVICES, group()) == {
        ("a100", DEV): 1000,
        ("a100", MEM): 81920,
        ("a100", CORES): 100,
    }


def test_two_devices_at_20_percent_cores_charge_40_cores_percent():
    # per device: max(20 % -> 200 milli, ceil(10000*1000/81920)=123) = 200 milli
    d = decision((("main", False, (grant("a0", 10000, 20), grant("a1", 10000, 20))),))
    assert charges_for(d, DEVICES, group()) == {
        ("a100", DEV): 400,
        ("a100", MEM): 20000,
        ("a100", CORES): 40,
    }


def test_init_containers_are_collapsed_to_their_true_peak():
    # init 30000 MiB/50 %; two app containers 10000 MiB/20 % each on the same device:
    # memory max(30000, 20000) = 30000, cores max(50, 40) = 50,
    # devices max(500, ceil(30000*1000/81920) = 367) = 500.
    d = decision(
        (
            ("init", True, (grant("a0", 30000, 50),)),
            ("app1", False, (grant("a0", 10000, 20),)),
            ("app2", False, (grant("a0", 10000, 20),)),
        )
    )
    assert charges_for(d, DEVICES, group()) == {
        ("a100", DEV): 500,
        ("a100", MEM): 30000,
        ("a100", CORES): 50,
    }


def test_app_containers_above_init_peak_are_summed():
    d = decision(
        (
            ("init", True, (grant("a0", 5000, 10),)),
            ("app1", False, (grant("a0", 30000, 40),)),
            ("app2", False, (grant("a0", 20000, 30),)),
        )
    )
    assert charges_for(d, DEVICES, group()) == {
        ("a100", DEV): 700,
        ("a100", MEM): 50000,
        ("a100", CORES): 70,
    }


def test_memory_only_share_is_charged_by_its_memory_fraction_and_pods_add_up():
    # T4 15360 MiB: 4096 MiB, 0 cores -> ceil(4096000/15360) = 267 milli per pod.
    d = decision(
        (("main", False, (grant("t0", 4096, 0),)),), (("main", False, (grant("t0", 4096, 0),)),)
    )
    assert charges_for(d, DEVICES, group()) == {
        ("t4", DEV): 534,
        ("t4", MEM): 8192,
        ("t4", CORES): 0,
    }


def test_device_milli_caps_at_one_device():
    assert device_milli(A100_MIB, 100, DEVICES["a0"]) == 1000
    assert device_milli(A100_MIB + 100, 100, DEVICES["a0"]) == 1000
    assert device_milli(0, 0, DEVICES["a0"]) == 0


def test_unknown_device_and_foreign_model_are_clear_errors():
    with pytest.raises(AdmissionInputError, match="granted device zz is unknown"):
        charges_for(decision((("main", False, (grant("zz", 1, 1),)),)), DEVICES, group())
    with pytest.raises(AdmissionInputError, match="model 'MLU370-X8' is in no flavor"):
        charges_for(decision((("main", False, (grant("x0", 1, 1),)),)), DEVICES, group())
    with pytest.raises(AdmissionInputError, match="unschedulable"):
        charges_for(Decision(schedulable=False), DEVICES, group())
