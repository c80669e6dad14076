"""Issue 29: the cores limit rule (``scheduling.devices.resources.cores_limit_error``): above
100 % per device is refused in HAMi's words for the vendors whose cores HAMi clamps, and left
to the vendor's own rule where HAMi does not clamp (``VendorTraits.cores_clamped``)."""

import pytest

from scheduling.devices.resources import cores_limit_error
from scheduling.devices.vendors import VENDOR_WORDS, vendor_traits


def test_nvidia_above_100_in_hamis_words_and_100_allowed():
    assert cores_limit_error(100, "NVIDIA", "nvidia.com/gpucores") == ""
    assert (
        cores_limit_error(101, "NVIDIA", "nvidia.com/gpucores")
        == "nvidia.com/gpucores 101: core limit can't exceed 100"
    )


@pytest.mark.parametrize("vendor", ["MetaxSGPU", "EnflameDRS", "AWSNeuron", "Vastai", "Biren"])
def test_vendors_hami_does_not_clamp_keep_their_own_rule(vendor):
    assert not vendor_traits(vendor).cores_clamped
    assert cores_limit_error(150, vendor) == ""


def test_every_other_vendor_and_an_unknown_one_are_clamped_so_refused():
    clamped = [w for w in VENDOR_WORDS if vendor_traits(w).cores_clamped] + ["NewVendor"]
    assert {"NVIDIA", "MLU", "DCU", "Ascend", "Iluvatar", "AMD"} <= set(clamped)
    assert all(cores_limit_error(150, w) == "150: core limit can't exceed 100" for w in clamped)
