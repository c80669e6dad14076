"""HAMi filter reason names (``pkg/device/common/common.go``) and the reason formatter."""

from __future__ import annotations

CARD_TYPE_MISMATCH = "CardTypeMismatch"
CARD_UUID_MISMATCH = "CardUuidMismatch"
CARD_TIME_SLICING_EXHAUSTED = "CardTimeSlicingExhausted"
CARD_COMPUTE_UNITS_EXHAUSTED = "CardComputeUnitsExhausted"
CARD_INSUFFICIENT_MEMORY = "CardInsufficientMemory"
CARD_INSUFFICIENT_CORE = "CardInsufficientCore"
CARD_NOT_HEALTH = "CardNotHealth"
CARD_CORDONED = "CardCordoned"
NUMA_NOT_FIT = "NumaNotFit"
EXCLUSIVE_DEVICE_ALLOCATE_CONFLICT = "ExclusiveDeviceAllocateConflict"
CARD_NOT_FOUND_CUSTOM_FILTER_RULE = "CardNotFoundCustomFilterRule"
CARD_MIG_TOPOLOGY_INFEASIBLE = "CardMigTopologyInfeasible"
NODE_INSUFFICIENT_DEVICE = "NodeInsufficientDevice"
ALLOCATED_CARDS_INSUFFICIENT_REQUEST = "AllocatedCardsInsufficientRequest"
RESOURCE_QUOTA_NOT_FIT = "ResourceQuotaNotFit"
MODE_NOT_FIT = "ModeNotFit"
# Our own, for checks HAMi leaves to kube-scheduler or to its webhook:
CARD_TEMPLATE_NOT_FIT = "CardTemplateNotFit"
INVALID_REQUEST = "InvalidDeviceRequest"
DEVICE_MODEL_INVALID = "DeviceModelInvalid"
"""The device's model configuration does not resolve (``Device.error``)."""
CARD_SHARED_COUNTERS_EXHAUSTED = "CardSharedCountersExhausted"
"""A template partition needs more of a card's DRA shared counters than are left."""
CARD_TYPE_UNKNOWN = "CardTypeUnknown"
"""The device's model cannot be read and the request excludes models: it cannot be verified."""
NODE_BOOKINGS_UNMATCHED = "NodeBookingsUnmatched"
"""Bookings hold devices the node no longer registers: its capacity is uncertain."""


def gen_reason(counts: dict[str, int], total: int) -> str:
    """HAMi ``GenReason``: ``"<n>/<total> <Reason>"`` per reason, sorted, joined by ", ".

    Args:
        counts: ``{reason: number of devices that failed it}`` (zero counts are dropped).
        total: number of devices considered.
    """
    return ", ".join(sorted(f"{n}/{total} {r}" for r, n in counts.items() if n))
