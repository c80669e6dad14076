"""Fraction-correct charges and HAMi's per-device collapse of multi-container pods."""

from scheduling.accounting import booking_charges, collapse_pod_bookings
from scheduling.placement.types import ContainerAssignment, DeviceGrant, PodAssignment


def test_fractional_booking_is_charged_its_largest_share():
    # 20 % cores and 8 GiB of an 80 GiB card: memory share 0.1, cores share 0.2 → 200 milli
    assert booking_charges("A100", 81920, 100, 8192, 20) == {
        ("A100", "devices"): 200,
        ("A100", "memory_mib"): 8192,
        ("A100", "cores_percent"): 20,
    }


def test_whole_device_is_one_thousand_milli():
    charges = booking_charges("T4", 15360, 100, 15360, 100)
    assert charges[("T4", "devices")] == 1000


def test_share_rounds_up_to_the_next_milli():
    # 1 MiB of 3 MiB = 0.3333 → 334 milli (never undercharge)
    assert booking_charges("x", 3, 100, 1, 0)[("x", "devices")] == 334


def test_collapse_takes_peak_of_init_and_sum_of_app_containers():
    g = lambda uuid, mem, cores: DeviceGrant(  # noqa: E731
        uuid=uuid,
        type="NVIDIA",
        memory_mib=mem,  # noqa: E731
        cores_percent=cores,
    )
    pod = PodAssignment(
        pod="p",
        node="n",
        containers=(
            ContainerAssignment("init", (g("A", 30000, 60),), init=True),
            ContainerAssignment("a", (g("A", 10000, 20), g("B", 5000, 10))),
            ContainerAssignment("b", (g("A", 12000, 30),)),
        ),
    )
    assert collapse_pod_bookings(pod) == {
        "A": (30000, 60, 2),  # max(init 30000/60, app 22000/50), slots max(1, 2)
        "B": (5000, 10, 1),
    }
