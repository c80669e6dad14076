"""Consolidation: the admission cycle's step 7 (after its commit). A queued job whose verdict
is ``Unschedulable`` (its quota fits, no placement exists) only because free capacity is
fragmented gets room by moving a few running jobs of its resource group elsewhere.

Planning is the pure core's (:func:`scheduling.placement.consolidation.plan_consolidation`,
on the cycle's cluster snapshot with its admissions booked, with the group's placement
profile). Who may move: jobs of the group that opted in (``Job.allow_consolidation``; the
annotation ``console.llmops.io/allow-consolidation: "true"`` on objects taken in from a
cluster), preemptible, admitted or running, past their ``min_runtime_s``, not terminating,
of a priority not above the waiting job's, holding whole grants (no MIG instances, one slot
per device). Budget: the group's ``consolidation_max_moves_per_hour`` over the last hour
(``ConsolidationMove`` rows) and ``consolidation_max_moves`` per waiting job.

A move is committed like a preemption followed by a re-admission (KAI scheduler's
consolidation restarts the relocated pods; Kueue's eviction keeps the quota until the pods
are gone): in its own transaction, with the group's cycle lock and the lock order of
:mod:`scheduling.services.locking` (jobs, then their placements), the moved job's
placements stop (:func:`~scheduling.services.eviction.terminate_placements`: pods deleted
after commit; on a simulated cluster they are released at once, on Kubernetes they book
their devices until the pods are gone), the job goes back to ``queued`` keeping its age, a
``ConsolidationMove`` row and a ``moved`` event record it, and the waiting job becomes a
sticky head (``preempting_since``: the next cycles try it first) so it takes the freed room;
the moved job is admitted again by the next cycle on the target the plan chose, while that
target still fits (the move keeps it: :mod:`scheduling.services.consolidation_pins`). The
next cycle is requested after commit. A group in ``propose`` mode
(``ResourceGroup.consolidation_mode``) plans the same way but moves nothing: the waiting job's
pending reason says a plan awaits approval, and the plan is shown by
:mod:`scheduling.services.consolidation_preview`.

A gang under a ``required`` topology that fits the quota and the free capacity but no single
domain (its verdict carries the core's ``TopologyPlacementFailed`` reason) gets moves out of
one domain (the core's step 5); the waiting job's reason and ``consolidation`` event, and each
moved job's message, name that domain (:func:`target_domain`), the event also every move.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Func, JSONField, Value
from django.db.models.functions import Concat
from django.utils import timezone

from core.locks import ADMISSION_CYCLE, lock_rows, try_xact_lock
from scheduling.admission import CauseKind, CycleResult, PendingCode, PendingWorkload, reason_fields
from scheduling.choices import ACTIVE_PLACEMENT_STATES, Backend, ConsolidationPin, JobState
from scheduling.dispatch import enqueue_admission_cycle
from scheduling.kube.workloads import ANNOTATION_ALLOW_CONSOLIDATION
from scheduling.models import ConsolidationMove, Job, JobEvent, Placement
from scheduling.placement.consolidation import (
    ConsolidationPlan,
    MovableJob,
    Move,
    apply_plan,
    plan_consolidation,
)
from scheduling.placement.pin import pins_of
from scheduling.placement.topology_names import level_word
from scheduling.placement.types import (
    ContainerAssignment,
    Decision,
    DeviceGrant,
    PlacementRequest,
    PodAssignment,
)
from scheduling.selectors.admission import AdmissionContext
from scheduling.selectors.consolidation import moves_in_window, waiting_for_moves
from scheduling.selectors.cycle_gate import clear_blocked
from scheduling.selectors.db_placer import RunningBooking
from scheduling.selectors.inadmissible import release as release_inadmissible
from scheduling.selectors.snapshot import build_placement_request
from scheduling.services import job_life
from scheduling.services.eviction import release_terminated, terminate_placements
from scheduling.services.locking import lock_jobs
from tenants.choices import ConsolidationMode
from tenants.models import ResourceGroup

__all__ = [
    "ALLOW_CONSOLIDATION_ANNOTATION",
    "ANOTHER_TENANT",
    "Planning",
    "blocked_jobs",
    "consolidate",
    "plan_moves",
    "target_domain",
    "where",
]

logger = logging.getLogger(__name__)

#: Annotation of an object taken in from a cluster that opts its job in (value ``"true"``).
ALLOW_CONSOLIDATION_ANNOTATION = ANNOTATION_ALLOW_CONSOLIDATION

#: Waiting jobs of distinct shapes planned per cycle without finding a plan, at most (each
#: plan tries up to ``DEFAULT_MAX_TRIES`` candidate sets; the others wait for a later cycle).
MAX_PLANNED_PER_CYCLE = 8

NOT_TRIED = f"not tried in this cycle (at most {MAX_PLANNED_PER_CYCLE} job shapes per cycle)"

#: Said to a moved job's tenant instead of another tenant's job.
ANOTHER_TENANT = "a job of another tenant"


@dataclass(frozen=True)
class _Planned:
    """A plan for one waiting job (``waiting``: its pending workload)."""

    waiting: PendingWorkload
    plan: ConsolidationPlan


def consolidate(
    group: ResourceGroup, ctx: AdmissionContext, result: CycleResult, now: datetime
) -> list[int]:
    """Step 7 of the admission cycle (module doc): plan and commit moves for the cycle's
    ``Unschedulable`` jobs. Runs after the cycle's transaction committed.

    Returns:
        Ids of the jobs moved (empty when consolidation is off, nothing is blocked by
        fragmentation, the budget is spent, or another cycle of the group holds its lock).
    """
    if not group.consolidation_enabled or not blocked_jobs(ctx, result):
        return []
    with transaction.atomic():
        if not try_xact_lock(ADMISSION_CYCLE, group.pk):
            return []
        planning = plan_moves(group, ctx, result, now)
        waiting, blocked = planning.waiting, planning.blocked
        plans, notes = planning.plans, planning.notes
        # every job row written below, locked in one ascending round before any write
        # (scheduling.services.locking): the waiting, the blocked and every planned move
        lock_jobs(
            waiting
            | {int(w.id) for w in blocked}
            | {int(m.job_id) for planned in plans for m in planned.plan.moves}
        )
        if waiting:  # room is being made for them: they stay sticky heads (the cycle's
            # marks only keep jobs waiting for preemption victims)
            Job.objects.filter(pk__in=sorted(waiting), preempting_since__isnull=True).update(
                preempting_since=now
            )
        if not blocked:
            return []
        if group.consolidation_mode == ConsolidationMode.PROPOSE:  # shown, never carried out
            _explain({**notes, **{int(p.waiting.id): _awaits(p.plan) for p in plans}})
            proposed = bool(plans)
            moved = []
        else:
            proposed = False
            moved = [job_id for planned in plans for job_id in _commit(planned, group, now)]
            _explain(notes)
            if moved:
                enqueue_admission_cycle(group.pk)
    if proposed:  # not set aside: the plan stays current and is carried out once approved
        release_inadmissible(group.pk)
    if moved:  # after commit: the group's set-aside jobs and its blocked mark are stale
        _wake(group.pk)
        logger.info("consolidation group=%s moved %d job(s): %s", group.pk, len(moved), moved)
    return moved


def blocked_jobs(ctx: AdmissionContext, result: CycleResult) -> list[PendingWorkload]:
    """The cycle's ``Unschedulable`` heads (quota fits, no placement), in the cycle's order."""
    pending = {p.id: p for p in ctx.snapshot.pending}
    return [
        pending[v.workload_id]
        for v in result.pending
        if v.code == PendingCode.UNSCHEDULABLE and v.workload_id in pending
    ]


@dataclass(frozen=True)
class Planning:
    """What step 7 would do after a cycle: ``waiting`` the ids of jobs for which moves are
    under way (not planned again), ``blocked`` the heads planned for, ``plans`` their plans
    in order, ``notes`` why there is none (job id -> reason)."""

    waiting: set[int]
    blocked: list[PendingWorkload]
    plans: list[_Planned]
    notes: dict[int, str]


def plan_moves(
    group: ResourceGroup, ctx: AdmissionContext, result: CycleResult, now: datetime
) -> Planning:
    """Plan step 7's moves for the cycle ``result`` (module doc). Reads only: the plans are
    applied to ``ctx.cluster`` (in memory), nothing is written; the cycle carries them out
    (:func:`consolidate`), the preview only shows them
    (:mod:`scheduling.services.consolidation_preview`)."""
    blocked = blocked_jobs(ctx, result)
    used = moves_in_window([group.pk], now).get(group.pk, 0)
    left = group.consolidation_max_moves_per_hour - used
    waiting = waiting_for_moves(int(w.id) for w in blocked)
    blocked = [w for w in blocked if int(w.id) not in waiting]
    movable = _movable(ctx, group, now) if left > 0 and blocked else []
    plans, notes = _plan(group, ctx, blocked, movable, left) if blocked else ([], {})
    return Planning(waiting, blocked, plans, notes)


def _wake(group_id: int) -> None:
    """The moves changed the group: its set-aside jobs and its blocked mark are stale."""
    release_inadmissible(group_id)
    clear_blocked(group_id)


def _movable(ctx: AdmissionContext, group: ResourceGroup, now: datetime) -> list[MovableJob]:
    """The jobs that may move (module doc), as the core's :class:`MovableJob`."""
    running = {
        w.id: w
        for w in ctx.snapshot.running
        if not w.terminating
        and w.preemptible
        and w.started_at + timedelta(seconds=w.min_runtime_s) <= now
    }
    jobs = (
        Job.objects.filter(
            pk__in=sorted(int(i) for i in running),
            state__in=[JobState.ADMITTED, JobState.RUNNING],
            preemptible=True,
            allow_consolidation=True,
        )
        .prefetch_related("containers", "pod_sets")
        .order_by("pk")
    )
    out = []
    for job in jobs:
        workload = running[str(job.pk)]
        request = build_placement_request(job, group)
        booking = _booked_decision(ctx.held.get(str(job.pk)), request.pods, ctx)
        if booking is None:
            continue
        running_s = (now - workload.started_at).total_seconds()
        out.append(MovableJob(str(job.pk), request, booking, workload.priority, running_s))
    return out


def _booked_decision(booking: RunningBooking | None, pods, ctx: AdmissionContext):
    """A job's booking as a Decision the core can unbook exactly (one grant per device
    booking), or None when it cannot be expressed so (MIG instances, several slots on one
    device, a partial gang, a device outside the snapshot)."""
    if booking is None or booking.migs or len(booking.pods) != len(pods):
        return None
    assignments = []
    for pod, (node, cpu, mem, grants) in zip(pods, booking.pods, strict=True):
        devices = []
        for uuid, dev_mem, cores, slots in grants:
            device = ctx.devices.get(uuid)
            if device is None or slots != 1:
                return None
            devices.append(
                DeviceGrant(
                    uuid,
                    device.vendor,
                    dev_mem,
                    cores,
                    device.vendor,
                    device.index,
                    model=device.type,
                )
            )
        containers = (ContainerAssignment("booked", tuple(devices)),)
        assignments.append(PodAssignment(pod.name, node, containers, cpu, mem))
    return Decision(True, tuple(assignments))


def _plan(
    group: ResourceGroup,
    ctx: AdmissionContext,
    blocked: list[PendingWorkload],
    movable: list[MovableJob],
    left: int,
) -> tuple[list[_Planned], dict[int, str]]:
    """Plans for the blocked jobs in the cycle's order, each applied to the snapshot before
    the next is planned; a job moved once is not moved again in this cycle. Also returns
    why there is no plan, per blocked job without one."""
    budget = f"the move budget ({group.consolidation_max_moves_per_hour} per hour) is spent"
    if left <= 0 or not movable:
        reason = budget if left <= 0 else "no running job may be moved"
        return [], {int(w.id): reason for w in blocked}
    framework = ctx.placer().framework
    plans: list[_Planned] = []
    notes: dict[int, str] = {}
    taken: set[str] = set()
    failed: dict[tuple, str] = {}  # shapes without a plan on the snapshot as it is now
    for waiting in blocked:
        if left <= 0:
            notes[int(waiting.id)] = budget
            continue
        if not isinstance(waiting.request, PlacementRequest):
            continue
        key = _shape(waiting, waiting.request)
        if key in failed or len(failed) >= MAX_PLANNED_PER_CYCLE:
            notes[int(waiting.id)] = failed.get(key, NOT_TRIED)
            continue
        candidates = [m for m in movable if m.id not in taken and m.priority <= waiting.priority]
        try:
            result = plan_consolidation(
                ctx.cluster,
                waiting.request,
                candidates,
                max_moves=min(left, group.consolidation_max_moves),
                profile=framework,
            )
        except ValueError:  # a booking read from the database does not match the snapshot
            logger.exception("consolidation group=%s: planning stopped", group.pk)
            break
        if result.plan is None:
            notes[int(waiting.id)] = failed[key] = result.reason
            continue
        failed.clear()  # the snapshot changes: shapes without a plan may have one now
        apply_plan(ctx.cluster, result.plan)
        taken |= {m.job_id for m in result.plan.moves}
        left -= len(result.plan.moves)
        plans.append(_Planned(waiting, result.plan))
    return plans, notes


def _shape(waiting: PendingWorkload, request: PlacementRequest) -> tuple:
    """What decides a plan besides the snapshot: the pods' requests (not their names), their
    topology requests and the priority (which jobs may move)."""
    return (
        waiting.priority,
        request.topology,
        tuple(
            (
                p.cpu_milli,
                p.memory_mib,
                p.containers,
                tuple(sorted(p.node_selector.items())),
                p.node_policy,
                p.device_policy,
            )
            for p in request.pods
        ),
    )


def _explain(notes: dict[int, str]) -> None:
    """Add ``consolidation: <why not>`` to the pending reason of the blocked jobs left
    without a plan (still queued)."""
    for job_id, reason in sorted(notes.items()):
        Job.objects.filter(pk=job_id, state=JobState.QUEUED).exclude(
            pending_reason__contains="\nconsolidation: "
        ).update(
            pending_reason=Concat(F("pending_reason"), Value(f"\nconsolidation: {reason}")),
            pending_causes=Func(  # jsonb || jsonb: the line's cause appended
                F("pending_causes"),
                Value(
                    reason_fields(CauseKind.CAPACITY, f"consolidation: {reason}")["pending_causes"],
                    output_field=JSONField(),
                ),
                template="%(expressions)s",
                arg_joiner=" || ",
                output_field=JSONField(),
            ),
        )


def _awaits(plan: ConsolidationPlan) -> str:
    """The pending reason's line for a plan in ``propose`` mode (tenants.choices
    ConsolidationMode): ``"a plan moving 1 job(s) to make room awaits approval"``."""
    room = target_domain(plan)
    return f"a plan moving {len(plan.moves)} job(s) to make room{room} awaits approval"


def target_domain(plan: ConsolidationPlan) -> str:
    """``" in rack zone-a/block-0/rack-1"``: the domain a plan empties for a gang under a
    ``required`` topology (:attr:`~scheduling.placement.consolidation.ConsolidationPlan.domain`,
    the level's word as reasons say it), "" for a plan without one."""
    return f" in {level_word(plan.level)} {plan.domain}" if plan.domain else ""


def where(decision: Decision) -> str:
    """``"node-1 (GPU-a, GPU-b)"`` per pod of ``decision``, joined with "; "."""
    parts = []
    for pod in decision.pods:
        uuids = sorted({g.uuid for c in pod.containers for g in c.devices})
        parts.append(f"{pod.node} ({', '.join(uuids)})" if uuids else pod.node)
    return "; ".join(parts)


def _commit(planned: _Planned, group: ResourceGroup, now: datetime) -> list[int]:
    """Carry out one plan (module doc); nothing when a job changed state since the snapshot.
    Lock order: the caller locked every job of every plan in one round (pk order); here the
    moved jobs' placements."""
    moved_ids = [int(m.job_id) for m in planned.plan.moves]
    waiting_id = int(planned.waiting.id)
    rows = {
        j.pk: j
        for j in Job.objects.filter(pk__in=sorted([*moved_ids, waiting_id]))
        .select_related("tenant")
        .order_by("pk")
    }
    waiting = rows.get(waiting_id)
    if waiting is None or waiting.state != JobState.QUEUED:
        return []
    if any(rows.get(i) is None or rows[i].state not in _MOVABLE_STATES for i in moved_ids):
        return []
    for move in planned.plan.moves:
        _move(rows[int(move.job_id)], waiting, move, group, now, target_domain(planned.plan))
    count = len(moved_ids)
    room = target_domain(planned.plan)
    Job.objects.filter(pk=waiting_id).update(
        preempting_since=now,
        **reason_fields(
            CauseKind.CAPACITY,
            f"waiting for {count} job(s) moved by consolidation to make room{room}",
        ),
    )
    moves = "; ".join(f"{where(m.source)} -> {where(m.target)}" for m in planned.plan.moves)
    JobEvent.objects.create(
        job=waiting,
        kind="consolidation",
        message=f"consolidation moved {count} job(s) to make room{room} on "
        f"{where(planned.plan.placement)}" + (f" (moves: {moves})" if room else ""),
    )
    return moved_ids


_MOVABLE_STATES = (JobState.ADMITTED, JobState.RUNNING)


def _move(
    job: Job, waiting: Job, move: Move, group: ResourceGroup, now: datetime, room: str = ""
) -> None:
    """Stop ``job``'s pods, requeue it and record the move with its planned target, to
    which its next placement is pinned (:mod:`scheduling.services.consolidation_pins`);
    what its tenant sees never names another tenant or its job. ``room``: the domain emptied
    (:func:`target_domain`), "" for none."""
    source, target = where(move.source), where(move.target)
    same = job.tenant_id == waiting.tenant_id
    whom = f"job {waiting.name} of your tenant {job.tenant.name}" if same else ANOTHER_TENANT
    message = f"moved by consolidation from {source} to {target} to make room{room} for {whom}"
    placements = list(
        lock_rows(Placement)
        .filter(job=job, state__in=ACTIVE_PLACEMENT_STATES)
        .select_related("node__cluster")
        .order_by("pk")
    )
    simulated = all(p.node.cluster.backend == Backend.SIMULATED for p in placements)
    grace = 0.0 if simulated else float(settings.ADMISSION_TERMINATION_GRACE_S)
    terminate_placements(
        job, placements, now=now, evict_by=now + timedelta(seconds=grace), message=message
    )
    if simulated:  # simulated pods stop at once: the job restarts in the next cycle
        release_terminated([p.pk for p in placements], now=now, reason=message)
    job_life.requeue_jobs(
        job,
        **reason_fields(CauseKind.CAPACITY, message),
        preempting_since=None,
        reserving_since=None,
        updated=timezone.now(),
    )
    ConsolidationMove.objects.create(
        job=job,
        for_job=waiting,
        resource_group=group,
        job_tenant=job.tenant.name,
        for_tenant=waiting.tenant.name,
        source=source,
        target=target,
        time=now,
        target_pods=[pin.to_json() for pin in pins_of(move.target)],
        pin=ConsolidationPin.PENDING,
    )
    JobEvent.objects.create(job=job, kind="moved", message=message)
