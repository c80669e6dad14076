"""State machines and enumerations of the scheduling app."""

from django.db import models

from scheduling.devices.schema import DeviceModelConfig
from scheduling.devices.vendors import VENDOR_WORDS, vendor_traits

VENDORS = VENDOR_WORDS
"""HAMi's vendor words, as device requests and device models spell them (the device
catalogue's :data:`scheduling.devices.vendors.VENDOR_WORDS`)."""


def canonical_vendor(value: str) -> str | None:
    """``value`` spelled as in :data:`VENDORS`, matched case-insensitively (``nvidia`` ->
    ``NVIDIA``); None when it is no known vendor."""
    lowered = value.strip().lower()
    return next((v for v in VENDORS if v.lower() == lowered), None)


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
    if cfg.slicing == "smlu" or vendor_traits(cfg.vendor).unit_sharing:
        return SlicingMode.UNIT
    return SlicingMode.FRACTIONAL


class QueueStrategy(models.TextChoices):
    """Kueue queueing strategies."""

    STRICT_FIFO = "StrictFIFO", "StrictFIFO"
    BEST_EFFORT_FIFO = "BestEffortFIFO", "BestEffortFIFO"


class JobState(models.TextChoices):
    """Job lifecycle: queued → admitted → running → succeeded|failed; cancelled from any live
    state. ``admitted`` means placements are reserved and being submitted. ``stopped`` is a
    notebook stopped by its user, culled when idle or past its lifetime, or a job taken in
    from a cluster whose user suspended its object: it holds no device and is not queued
    until resumed (→ queued; for the latter, when the user unsuspends the object)."""

    QUEUED = "queued", "Queued"
    ADMITTED = "admitted", "Admitted"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"
    STOPPED = "stopped", "Stopped"


CONTAINER_ROLES = ["", "launcher", "worker"]
"""A training container's role: launcher containers make the launcher pod; worker (or blank)
containers run in every worker pod."""


class JobKind(models.TextChoices):
    """What a job runs (DESIGN.md §1: training, fine-tuning, inference, notebooks).

    ``batch``: N identical pods that run to completion. ``training`` (also fine-tuning):
    N ranked workers (a gang, optional minimum) behind a headless Service, with an optional
    launcher pod. ``inference``: a long-running service of ``replicas`` pods behind a
    Service; each replica is its own single-pod job (``Job.parent`` = the service), admitted
    and placed under the service's quota like any job (Kueue's per-pod admission of
    Deployments). ``notebook``: one interactive pod with a port, stop/resume, idle culling
    and a maximum lifetime.
    """

    BATCH = "batch", "Batch"
    TRAINING = "training", "Training / fine-tuning"
    INFERENCE = "inference", "Inference service"
    NOTEBOOK = "notebook", "Notebook"


LONG_RUNNING_KINDS = (JobKind.INFERENCE, JobKind.NOTEBOOK)
"""Kinds whose pods run until stopped (never finished by ``duration_s`` in simulation)."""


class VictimPolicy(models.TextChoices):
    """What happens to a preempted job, the victim (``Job.on_preemption``): back to its queue
    (keeping its age) or failed. Not Kueue's ``PreemptionPolicy``, which says which candidates
    a preemptor may evict (:class:`PreemptionScope` here,
    :class:`scheduling.admission.policy.PreemptionPolicy` in the core)."""

    REQUEUE = "requeue", "Requeue"
    FAIL = "fail", "Fail"


LIVE_JOB_STATES = (JobState.QUEUED, JobState.ADMITTED, JobState.RUNNING)
FINAL_JOB_STATES = (JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED)
"""States a job never leaves (``stopped`` is not final: a notebook or suspended object can be
resumed)."""

JOB_SOURCE_KUBE = "kube"
"""``Job.source`` of a job taken in from a Kubernetes object a user created (the object, not
the console, creates its pods: ``scheduling.services.intake``)."""


class PlacementState(models.TextChoices):
    """Placement lifecycle (kube-scheduler Reserve → Bind analogue).

    ``reserved`` (committed, devices booked) → ``submitted`` (objects created) → ``running``
    → ``succeeded``|``failed``; ``released`` when the reservation is given back unused.
    ``terminating``: the job was preempted (or ran past its maximum runtime) and its pods
    were deleted with a grace period; the placement keeps its devices and its quota charge
    until the pods are gone (Kueue keeps ``QuotaReserved`` until the job is inactive), then
    the reconcile moves it to ``released``.
    """

    RESERVED = "reserved", "Reserved"
    SUBMITTED = "submitted", "Submitted"
    RUNNING = "running", "Running"
    TERMINATING = "terminating", "Terminating"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    RELEASED = "released", "Released"


BOOKED_PLACEMENT_STATES = (
    PlacementState.RESERVED,
    PlacementState.SUBMITTED,
    PlacementState.RUNNING,
    PlacementState.TERMINATING,
)
"""States in which a placement holds its devices and its quota charge."""

ACTIVE_PLACEMENT_STATES = (
    PlacementState.RESERVED,
    PlacementState.SUBMITTED,
    PlacementState.RUNNING,
)
"""Booked states of a placement whose job still owns it (not being terminated)."""


class PreemptionScope(models.TextChoices):
    """Kueue ``PreemptionPolicy`` values used by a queue's preemption fields."""

    NEVER = "Never", "Never"
    LOWER_PRIORITY = "LowerPriority", "LowerPriority"
    LOWER_OR_NEWER_EQUAL_PRIORITY = "LowerOrNewerEqualPriority", "LowerOrNewerEqualPriority"
    ANY = "Any", "Any"


WITHIN_CLUSTER_QUEUE_CHOICES = [
    (v.value, v.label)
    for v in (
        PreemptionScope.NEVER,
        PreemptionScope.LOWER_PRIORITY,
        PreemptionScope.LOWER_OR_NEWER_EQUAL_PRIORITY,
    )
]
RECLAIM_WITHIN_COHORT_CHOICES = [
    (v.value, v.label)
    for v in (PreemptionScope.NEVER, PreemptionScope.LOWER_PRIORITY, PreemptionScope.ANY)
]
BORROW_WITHIN_COHORT_CHOICES = [
    (v.value, v.label) for v in (PreemptionScope.NEVER, PreemptionScope.LOWER_PRIORITY)
]


class FungibilityPolicy(models.TextChoices):
    """Kueue ``FlavorFungibilityPolicy``."""

    MAY_STOP_SEARCH = "MayStopSearch", "MayStopSearch"
    TRY_NEXT_FLAVOR = "TryNextFlavor", "TryNextFlavor"


class FlavorPreference(models.TextChoices):
    """Kueue ``FlavorFungibilityPreference``."""

    BORROWING_OVER_PREEMPTION = "BorrowingOverPreemption", "BorrowingOverPreemption"
    PREEMPTION_OVER_BORROWING = "PreemptionOverBorrowing", "PreemptionOverBorrowing"


class ConsolidationPin(models.TextChoices):
    """What became of a moved job's pin to the target its consolidation plan chose
    (:mod:`scheduling.placement.pin`): ``pending`` until its next placement, ``placed`` on
    the planned target, ``fell_back`` to the normal placement because the target no longer
    fitted. Moves made before pins existed carry ``""``."""

    NONE = "", "No pin"
    PENDING = "pending", "Pending"
    PLACED = "placed", "Placed on the planned target"
    FELL_BACK = "fell_back", "Fell back to normal placement"
