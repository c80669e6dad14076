"""Limits below the tenant (issue 33): per-user limits and budget gates, checked by the
admission cycle before and after flavor assignment (pure: no Django).

**Per-user limits** (YuniKorn ``limits`` with ``users``: ``maxapplications`` and
``maxresources``; Slurm ``MaxJobsPerUser`` / ``MaxTRESPerUser``): a user of a tenant may hold
at most ``max_running_jobs`` admitted jobs and ``max_devices`` milli-devices (1000 = one
device-equivalent, the unit quota uses) at once. The usage before the cycle
(``running_jobs``, ``used_devices``) is counted by the Django side over every resource group
of the tenant; the cycle adds what it admits. A limit below the current usage is legal: it
refuses new admissions only (nothing running is stopped).

**Budget gates**: a tenant's (or one user's) GPU-hour or money budget whose hard limit is
spent, with the action its admin chose: ``stop`` refuses new admissions (the pending reason
names the budget), ``preemptible`` admits jobs only as preemptible (they may borrow and are
the first victims, like an elastic group's jobs), ``notify`` changes nothing here. Spending
is measured by the Django side from the usage ledger and the price table
(``telemetry.services.budgets``); the core only sees the gate.

Pending reasons (whole lines, code ``UserLimitExceeded`` / ``BudgetExhausted``)::

    user alice: 8 of 8 running jobs
    user alice: 7.5 of 8 devices, needs 1
    user alice: 4 of 4 devices NVIDIA-A100-SXM4-80GB, needs 1
    budget team-a monthly: 1012.5 of 1000 GPU-hours spent (hard action stop)
"""

from __future__ import annotations

from scheduling.admission.outcomes import PendingCode
from scheduling.admission.types import (
    BudgetAction,
    BudgetGateSpec,
    Charges,
    Dimension,
    PendingWorkload,
    UserLimitSpec,
)

__all__ = ["UserLimits", "devices_text"]


def devices_text(milli: int) -> str:
    """Milli-devices as devices: ``8000 -> "8"``, ``7500 -> "7.5"``."""
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli / 1000:g}"


class UserLimits:
    """The per-user limits and budget gates of one cycle, with what the cycle admitted.

    Args:
        limits: the snapshot's :class:`UserLimitSpec` rows (one per tenant and user).
        gates: the snapshot's :class:`BudgetGateSpec` rows.
    """

    def __init__(
        self, limits: tuple[UserLimitSpec, ...], gates: tuple[BudgetGateSpec, ...]
    ) -> None:
        self.limits = {(limit.tenant, limit.user): limit for limit in limits}
        self.gates = gates
        self.jobs: dict[tuple[str, str], int] = {}
        self.devices: dict[tuple[str, str], int] = {}

    def _gates(self, entry: PendingWorkload, action: BudgetAction) -> list[BudgetGateSpec]:
        return [
            g
            for g in self.gates
            if g.action == action
            and g.tenant == entry.tenant
            and (g.user is None or g.user == entry.user)
        ]

    def stopped_by(self, entry: PendingWorkload) -> str | None:
        """The reason line of the first ``stop`` budget covering ``entry``, or None."""
        gates = self._gates(entry, BudgetAction.STOP)
        return gates[0].label if gates else None

    def only_preemptible(self, entry: PendingWorkload) -> bool:
        """True when a spent ``preemptible`` budget covers ``entry``."""
        return bool(self._gates(entry, BudgetAction.PREEMPTIBLE))

    def _devices(self, limit: UserLimitSpec, charges: Charges) -> int:
        return sum(
            amount
            for (flavor, dimension), amount in charges.items()
            if dimension == Dimension.DEVICES and (limit.flavors is None or flavor in limit.flavors)
        )

    def refusal(self, entry: PendingWorkload, charges: Charges | None = None) -> str | None:
        """Why ``entry``'s user may not get one more job (and ``charges``, when known), or
        None. The running-jobs limit is checked first."""
        if entry.user is None:
            return None
        key = (entry.tenant, entry.user)
        limit = self.limits.get(key)
        if limit is None:
            return None
        if limit.max_running_jobs is not None:
            jobs = limit.running_jobs + self.jobs.get(key, 0)
            if jobs + 1 > limit.max_running_jobs:
                return f"user {entry.user}: {jobs} of {limit.max_running_jobs} running jobs"
        if limit.max_devices is None or charges is None:
            return None
        needed = self._devices(limit, charges)
        used = limit.used_devices + self.devices.get(key, 0)
        if needed and used + needed > limit.max_devices:
            model = f" {limit.device_model}" if limit.device_model else ""
            return (
                f"user {entry.user}: {devices_text(used)} of {devices_text(limit.max_devices)} "
                f"devices{model}, needs {devices_text(needed)}"
            )
        return None

    def blocked(
        self, entry: PendingWorkload, charges: Charges | None = None
    ) -> tuple[PendingCode, str] | None:
        """``(code, reason)`` when ``entry`` may not be admitted: before flavor assignment
        (``charges`` None) a ``stop`` budget or the running-jobs limit, after it (the
        charges of the chosen flavors) the devices limit; None when it may."""
        if charges is None and (stopped := self.stopped_by(entry)) is not None:
            return PendingCode.BUDGET_EXHAUSTED, stopped
        refusal = self.refusal(entry, charges)
        return None if refusal is None else (PendingCode.USER_LIMIT_EXCEEDED, refusal)

    def admitted(self, entry: PendingWorkload, charges: Charges) -> None:
        """Count an admission of the cycle toward its user's limits."""
        if entry.user is None:
            return
        key = (entry.tenant, entry.user)
        limit = self.limits.get(key)
        if limit is None:
            return
        self.jobs[key] = self.jobs.get(key, 0) + 1
        self.devices[key] = self.devices.get(key, 0) + self._devices(limit, charges)
