"""Cross-reference and value checks of an admission snapshot (nothing is changed when one
fails)."""

from __future__ import annotations

from datetime import datetime

from scheduling.admission.policy import ALLOWED_STRATEGY_LISTS, policy_problem
from scheduling.admission.types import (
    AdmissionInputError,
    AdmissionSnapshot,
    CohortOptions,
    Dimension,
    PendingWorkload,
    QueueingStrategy,
    RunningWorkload,
)


def validate_snapshot(snapshot: AdmissionSnapshot) -> None:
    """Check cross-references and values of ``snapshot``.

    Raises:
        AdmissionInputError: naive times; unknown or duplicate queue, tenant, flavor, priority
            class or workload ids; a pending job whose tenant differs from its queue's; bad
            pod counts or pod sets; a queue policy Kueue's API would refuse; negative
            charges or runtimes; bad cohort options.
    """
    if snapshot.now.tzinfo is None:
        raise AdmissionInputError("snapshot.now must be timezone-aware")
    _validate_options(snapshot.options)
    classes: set[str] = set()
    for cls in snapshot.priority_classes:
        if cls.name in classes:
            raise AdmissionInputError(f"duplicate priority class {cls.name!r}")
        classes.add(cls.name)
    queue_tenant = _validate_queues(snapshot, classes)
    ids: set[str] = set()
    for entry in snapshot.pending:
        _validate_pending(entry, queue_tenant, ids)
    tenants = {t.name for t in snapshot.tenants}
    flavors = {f.name for f in snapshot.group.flavors}
    for workload in snapshot.running:
        _validate_running(workload, tenants, flavors, ids)


def require_aware(value: datetime | None, where: str, name: str) -> None:
    """Raise :class:`AdmissionInputError` ``"<where>: <name> must be timezone-aware"`` when
    ``value`` is a naive datetime (None passes)."""
    if value is not None and value.tzinfo is None:
        raise AdmissionInputError(f"{where}: {name} must be timezone-aware")


def _validate_options(options: CohortOptions) -> None:
    if tuple(options.preemption_strategies) not in ALLOWED_STRATEGY_LISTS:
        raise AdmissionInputError(
            f"cohort options: preemption_strategies {list(options.preemption_strategies)} is "
            f"not one of the allowed lists"
        )
    if options.max_reservations < 1:
        raise AdmissionInputError("cohort options: max_reservations must be >= 1")
    for name in ("reservation_after_s", "max_reservation_hold_s"):
        value = getattr(options, name)
        if value is not None and value < 0:
            raise AdmissionInputError(f"cohort options: {name} must be >= 0")
    if options.history is not None and options.history.half_life_s <= 0:
        raise AdmissionInputError("cohort options: history half_life_s must be > 0")


def _validate_queues(snapshot: AdmissionSnapshot, classes: set[str]) -> dict[str, str]:
    tenants = {t.name for t in snapshot.tenants}
    flavors = {f.name for f in snapshot.group.flavors}
    queue_tenant: dict[str, str] = {}
    for queue in snapshot.queues:
        where = f"queue {queue.name!r}"
        if queue.name in queue_tenant:
            raise AdmissionInputError(f"duplicate queue {queue.name!r}")
        if queue.tenant not in tenants:
            raise AdmissionInputError(f"{where}: unknown tenant {queue.tenant!r}")
        if queue.strategy not in QueueingStrategy.__members__.values():
            raise AdmissionInputError(f"{where}: unknown strategy {queue.strategy!r}")
        problem = policy_problem(
            queue.within_cluster_queue,
            queue.reclaim_within_cohort,
            queue.borrow_within_cohort,
            queue.fungibility,
        )
        if problem is not None:
            raise AdmissionInputError(f"{where}: {problem}")
        unknown = sorted(set(queue.flavors) - flavors)
        if unknown or len(set(queue.flavors)) != len(queue.flavors):
            raise AdmissionInputError(
                f"{where}: flavors must be distinct flavors of group "
                f"{snapshot.group.name} (unknown: {unknown})"
            )
        unknown = sorted(set(queue.allowed_priority_classes or ()) - classes)
        if unknown:
            raise AdmissionInputError(f"{where}: unknown priority classes {unknown}")
        queue_tenant[queue.name] = queue.tenant
    return queue_tenant


def _validate_pending(entry: PendingWorkload, queue_tenant: dict[str, str], ids: set[str]) -> None:
    where = f"pending workload {entry.id!r}"
    if entry.id in ids:
        raise AdmissionInputError(f"{where}: duplicate id")
    ids.add(entry.id)
    if entry.queue not in queue_tenant:
        raise AdmissionInputError(f"{where}: unknown queue {entry.queue!r}")
    if queue_tenant[entry.queue] != entry.tenant:
        raise AdmissionInputError(
            f"{where}: tenant {entry.tenant!r} differs from queue tenant "
            f"{queue_tenant[entry.queue]!r}"
        )
    require_aware(entry.created_at, where, "created_at")
    require_aware(entry.reserving_since, where, "reserving_since")
    if entry.pod_count < 1:
        raise AdmissionInputError(f"{where}: pod_count must be >= 1")
    if entry.pod_sets:
        if any(ps.count < 1 for ps in entry.pod_sets):
            raise AdmissionInputError(f"{where}: every pod set needs count >= 1")
        if sum(ps.count for ps in entry.pod_sets) != entry.pod_count:
            raise AdmissionInputError(f"{where}: pod_count must equal the pod sets' counts")
        if entry.min_pod_count is not None:
            raise AdmissionInputError(f"{where}: min_pod_count needs a single pod set")
    if entry.min_pod_count is not None and not 1 <= entry.min_pod_count <= entry.pod_count:
        raise AdmissionInputError(f"{where}: min_pod_count must be in [1, pod_count]")
    if entry.max_runtime_s is not None and entry.max_runtime_s < 0:
        raise AdmissionInputError(f"{where}: max_runtime_s must be >= 0")


def _validate_running(
    workload: RunningWorkload, tenants: set[str], flavors: set[str], ids: set[str]
) -> None:
    where = f"running workload {workload.id!r}"
    if workload.id in ids:
        raise AdmissionInputError(f"{where}: duplicate id")
    ids.add(workload.id)
    if workload.tenant not in tenants:
        raise AdmissionInputError(f"{where}: unknown tenant {workload.tenant!r}")
    require_aware(workload.started_at, where, "started_at")
    require_aware(workload.created_at, where, "created_at")
    require_aware(workload.evict_by, where, "evict_by")
    if workload.min_runtime_s < 0:
        raise AdmissionInputError(f"{where}: min_runtime_s must be >= 0")
    if workload.max_runtime_s is not None and workload.max_runtime_s < 0:
        raise AdmissionInputError(f"{where}: max_runtime_s must be >= 0")
    for (flavor, dim), amount in workload.charges.items():
        if flavor not in flavors:
            raise AdmissionInputError(f"{where}: charge on unknown flavor {flavor!r}")
        if dim not in Dimension.__members__.values():
            raise AdmissionInputError(f"{where}: unknown dimension {dim!r}")
        if amount < 0:
            raise AdmissionInputError(f"{where}: negative charge on {flavor}/{dim}")
