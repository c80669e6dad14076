"""Enumerations of the tenants app (Kueue vocabulary where one exists)."""

from django.db import models


class Role(models.TextChoices):
    """A member's role in a tenant (platform admins are Django superusers)."""

    TENANT_ADMIN = "tenant_admin", "Tenant admin"
    MEMBER = "member", "Member"
    VIEWER = "viewer", "Viewer"


class GroupKind(models.TextChoices):
    """How a resource group's quota may be shared within its cohort.

    ``exclusive``: guaranteed, never lent (lending limit 0, borrowing limit 0).
    ``shared``: unused nominal quota is lent to the cohort.
    ``elastic``: runs on borrowed capacity and is preemptible.
    """

    EXCLUSIVE = "exclusive", "Exclusive"
    SHARED = "shared", "Shared"
    ELASTIC = "elastic", "Elastic"


class Dimension(models.TextChoices):
    """A quota dimension with its unit in the name."""

    DEVICES = "devices", "devices (milli-devices)"
    MEMORY_MIB = "memory_mib", "device memory (MiB)"
    CORES_PERCENT = "cores_percent", "device cores (percent of one device)"


class NodePolicy(models.TextChoices):
    """HAMi node scheduler policy (``--node-scheduler-policy``; the pod annotation
    ``hami.io/node-scheduler-policy``): ``binpack`` fills busy nodes first, ``spread`` the
    idlest (HAMi ``pkg/scheduler/policy/node_policy.go``)."""

    BINPACK = "binpack", "binpack"
    SPREAD = "spread", "spread"


class DevicePolicy(models.TextChoices):
    """HAMi GPU scheduler policy (``--gpu-scheduler-policy``; the pod annotation
    ``hami.io/gpu-scheduler-policy``; HAMi ``pkg/scheduler/policy/gpu_policy.go``)."""

    BINPACK = "binpack", "binpack"
    SPREAD = "spread", "spread"
    TOPOLOGY_AWARE = "topology-aware", "topology-aware"


class FragmentationPolicy(models.TextChoices):
    """Node scoring beyond HAMi's: ``none`` keeps HAMi's node score; ``FragGuard`` (ours) and
    ``FGD`` (Weng et al., USENIX ATC'23) score nodes by the fragmentation a placement causes
    against the group's target workload (shared/docs/fgd.md)."""

    NONE = "none", "none (HAMi node score)"
    FRAGGUARD = "FragGuard", "FragGuard"
    FGD = "FGD", "FGD"


class ConsolidationMode(models.TextChoices):
    """What the admission cycle does with a consolidation plan (issue 31): ``auto`` carries
    it out at once; ``propose`` only shows it (the job page, ``GET
    /api/jobs/<id>/consolidation-plan/``) and the waiting job's pending reason says a plan
    awaits approval: an operator approves by switching the group to ``auto``."""

    AUTO = "auto", "auto (carry plans out)"
    PROPOSE = "propose", "propose (only show plans)"


FAIR_SHARING_STRATEGIES = ("LessThanOrEqualToFinalShare", "LessThanInitialShare")
"""Kueue fair-sharing preemption strategies (KEP-1714 S2-a and S2-b)."""

ALLOWED_STRATEGY_LISTS = (
    list(FAIR_SHARING_STRATEGIES),
    [FAIR_SHARING_STRATEGIES[0]],
    [FAIR_SHARING_STRATEGIES[1]],
)
"""The strategy lists Kueue's configuration accepts (the first is the default)."""


def default_strategies() -> list[str]:
    """Kueue's default strategy list (a new list each time, for a JSONField default)."""
    return list(FAIR_SHARING_STRATEGIES)


class BudgetPeriod(models.TextChoices):
    """The period a budget is spent over: each calendar month (UTC), or one configured
    window (``window_start`` to ``window_end``)."""

    MONTH = "month", "each month"
    WINDOW = "window", "a configured window"


class BudgetAction(models.TextChoices):
    """What happens once a budget is spent (the same words as the admission core's
    ``scheduling.admission.limits.BudgetAction``): stop admitting new jobs, admit them only
    as preemptible (they may borrow and are preempted first), or notify only."""

    STOP = "stop", "stop admitting new jobs"
    PREEMPTIBLE = "preemptible", "admit only as preemptible"
    NOTIFY = "notify", "notify only"


#: A budget counted in device-hours (GPU-hours) rather than money.
GPU_HOURS = "GPU-hours"
