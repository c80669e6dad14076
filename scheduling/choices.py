"""State machines and enumerations of the scheduling app."""

from django.db import models

from scheduling.devices.schema import DeviceModelConfig


class Backend(models.TextChoices):
    """How a cluster is driven: in-process simulation or a real Kubernetes API server."""

    SIMULATED = "simulated", "Simulated"
    KUBERNETES = "kubernetes", "Kubernetes"


class SlicingMode(models.TextChoices):
    """How a device model is shared (DESIGN.md §2)."""

    WHOLE = "whole", "Whole device (count only)"
    FRACTIONAL = "fractional", "Fractional (HAMi-core memory + cores)"
    TEMPLATE = "template", "Templates (MIG / vNPU)"
    UNIT = "unit", "Units (Cambricon sMLU, Hygon vDCU)"


def sharing_mode(cfg: DeviceModelConfig) -> str:
    """The :class:`SlicingMode` a resolved model config amounts to: whole-card slicers and
    models with one task per card -> whole; Ascend/Enflame/Kunlun templates -> template;
    Cambricon sMLU and Hygon vDCU -> unit; everything else fractional."""
    if cfg.slicing == "whole" or cfg.split_count == 1:
        return SlicingMode.WHOLE
    if cfg.slicing in ("template", "drs", "vxpu"):
        return SlicingMode.TEMPLATE
    if cfg.slicing == "smlu" or cfg.vendor == "DCU":
        return SlicingMode.UNIT
    return SlicingMode.FRACTIONAL


class QueueStrategy(models.TextChoices):
    """Kueue queueing strategies."""

    STRICT_FIFO = "StrictFIFO", "StrictFIFO"
    BEST_EFFORT_FIFO = "BestEffortFIFO", "BestEffortFIFO"


class JobState(models.TextChoices):
    """Job lifecycle: queued → admitted → running → succeeded|failed; cancelled from any live
    state. ``admitted`` means placements are reserved and being submitted."""

    QUEUED = "queued", "Queued"
    ADMITTED = "admitted", "Admitted"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


class PreemptionPolicy(models.TextChoices):
    """What happens to a preempted job: back to its queue (keeping its age) or failed."""

    REQUEUE = "requeue", "Requeue"
    FAIL = "fail", "Fail"


LIVE_JOB_STATES = (JobState.QUEUED, JobState.ADMITTED, JobState.RUNNING)

JOB_SOURCE_KUBE = "kube"
"""``Job.source`` of a job taken in from a Kubernetes object a user created (the object, not
the console, creates its pods: ``scheduling.services.intake``)."""


class PlacementState(models.TextChoices):
    """Placement lifecycle (kube-scheduler Reserve → Bind analogue).

    ``reserved`` (committed, devices booked) → ``submitted`` (objects created) → ``running``
    → ``succeeded``|``failed``; ``released`` when the reservation is given back unused.
    """

    RESERVED = "reserved", "Reserved"
    SUBMITTED = "submitted", "Submitted"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    RELEASED = "released", "Released"


BOOKED_PLACEMENT_STATES = (
    PlacementState.RESERVED,
    PlacementState.SUBMITTED,
    PlacementState.RUNNING,
)
