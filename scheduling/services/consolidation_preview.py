"""Consolidation preview (issue 31: "show what it would move before it does"): the plan the
admission cycle's step 7 would carry out for one queued job, computed by the same planner
(:func:`scheduling.services.consolidation.plan_moves` after the same pure cycle on the same
snapshot), and written nowhere: the snapshot, the cycle and the plans live in memory, and
the whole run is inside a transaction rolled back at its end (belt and braces: no row, no
event, no ``ConsolidationMove``).

The preview is what the next cycle would do now; a cycle in between (an admission, a move,
a finished job) changes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from scheduling.admission import run_cycle
from scheduling.choices import JobState
from scheduling.models import Job
from scheduling.placement.topology_names import level_word
from scheduling.placement.types import Decision
from scheduling.selectors.access import visible_jobs
from scheduling.selectors.admission import build_admission_snapshot, queued_jobs
from scheduling.selectors.inadmissible import inadmissible_ids
from scheduling.services.consolidation import plan_moves
from scheduling.services.consolidation_pins import pin_moved_jobs
from scheduling.services.cycle import cycle_config

__all__ = [
    "ConsolidationPreview",
    "PreviewMove",
    "ShownPreview",
    "preview_consolidation",
    "preview_for",
    "shown_to",
]


@dataclass(frozen=True)
class PreviewMove:
    """One job the plan moves: ``job_id``, ``from_node`` / ``to_node`` its pods' nodes
    (joined with ``", "`` for a gang, in pod order)."""

    job_id: int
    from_node: str
    to_node: str


@dataclass(frozen=True)
class ConsolidationPreview:
    """The plan for one job: ``plannable`` True with its ``moves`` (in order) when step 7
    would move jobs for it now, else ``reason`` says why not; ``level`` / ``domain`` the
    topology domain the moves empty for a gang under a ``required`` topology (label key and
    ``zone-a/block-0/rack-1``), "" otherwise."""

    plannable: bool
    reason: str = ""
    level: str = ""
    domain: str = ""
    moves: tuple[PreviewMove, ...] = ()


def _nodes(decision: Decision) -> str:
    return ", ".join(pod.node for pod in decision.pods)


def preview_consolidation(job: Job, now: datetime | None = None) -> ConsolidationPreview:
    """The plan step 7 would carry out for ``job`` now (module doc). Writes nothing.

    ``job`` needs ``queue__resource_group`` loaded (one query otherwise). Not plannable when
    the job is not queued, its group has consolidation off, the next cycle would not
    consider it (set aside, beyond ``ADMISSION_BATCH``), admits it, leaves it pending for
    another reason than fragmentation, or the planner finds no plan (its reason).
    """
    if job.state != JobState.QUEUED:
        return ConsolidationPreview(False, "the job is not pending")
    group = job.queue.resource_group
    if not group.consolidation_enabled:
        return ConsolidationPreview(False, f"consolidation is off in resource group {group.name}")
    now = now or timezone.now()
    with transaction.atomic():
        preview = _preview(job, group, now)
        transaction.set_rollback(True)
    return preview


def _preview(job: Job, group, now: datetime) -> ConsolidationPreview:
    if job.pk in inadmissible_ids(group.pk):
        return ConsolidationPreview(False, "set aside until the cluster or the quotas change")
    heads = queued_jobs(group, settings.ADMISSION_BATCH, exclude=inadmissible_ids(group.pk))
    if job.pk not in {h.pk for h in heads}:
        return ConsolidationPreview(False, "not among the jobs the next admission cycle considers")
    ctx = build_admission_snapshot(group, now, pending=heads)
    placer = ctx.placer()
    pin_moved_jobs(ctx, placer)
    result = run_cycle(ctx.snapshot, placer, cycle_config())
    key = str(job.pk)
    if any(a.workload_id == key for a in result.admitted):
        return ConsolidationPreview(False, "the next admission cycle admits it without moves")
    planning = plan_moves(group, ctx, result, now)
    if job.pk in planning.waiting:
        return ConsolidationPreview(False, "moves for it are under way")
    for planned in planning.plans:
        if planned.waiting.id == key:
            plan = planned.plan
            moves = tuple(
                PreviewMove(int(m.job_id), _nodes(m.source), _nodes(m.target)) for m in plan.moves
            )
            return ConsolidationPreview(True, "", plan.level, plan.domain, moves)
    if job.pk in planning.notes:
        return ConsolidationPreview(False, planning.notes[job.pk])
    return ConsolidationPreview(
        False, "it is not waiting for room (its quota or another rule holds it)"
    )


@dataclass(frozen=True)
class ShownMove:
    """A move as one viewer may see it: the moved job's id and name, its nodes."""

    job_id: int
    job_name: str
    from_node: str
    to_node: str


@dataclass(frozen=True)
class ShownPreview:
    """A preview for one viewer: ``moves`` of the jobs they may read, ``other_tenants`` how
    many moved jobs they may not (shown only as a count: never a name, a node or an id)."""

    preview: ConsolidationPreview
    moves: tuple[ShownMove, ...]
    other_tenants: int

    def summary(self) -> str:
        """``"job eval-1 (node-a -> node-b); 2 jobs of other tenants"``; "" without moves."""
        parts = [f"job {m.job_name} ({m.from_node} -> {m.to_node})" for m in self.moves]
        if self.other_tenants:
            n = self.other_tenants
            parts.append(f"{n} job{'s' if n != 1 else ''} of other tenants")
        return "; ".join(parts)

    def sentence(self) -> str:
        """What the job page says: ``"Consolidation would move: job h0 (c1-n0 -> c1-n0) to
        make room in rack zone-a/block-0/rack-1"``, or why it would move nothing."""
        preview = self.preview
        if not preview.plannable:
            return f"Consolidation would move nothing: {preview.reason}"
        room = f" in {level_word(preview.level)} {preview.domain}" if preview.domain else ""
        return f"Consolidation would move: {self.summary()} to make room{room}"


def shown_to(preview: ConsolidationPreview, readable: dict[int, str]) -> ShownPreview:
    """``preview`` as a viewer who may read the jobs ``readable`` (id -> name) sees it
    (tenant isolation: another tenant's job is only counted)."""
    moves = tuple(
        ShownMove(m.job_id, readable[m.job_id], m.from_node, m.to_node)
        for m in preview.moves
        if m.job_id in readable
    )
    return ShownPreview(preview, moves, len(preview.moves) - len(moves))


def preview_for(job: Job, user) -> ShownPreview:
    """:func:`preview_consolidation` of ``job`` as ``user`` sees it (:func:`shown_to` with the
    moved jobs ``user`` may read, :func:`~scheduling.selectors.access.visible_jobs`)."""
    preview = preview_consolidation(job)
    ids = sorted(m.job_id for m in preview.moves)
    readable = dict(visible_jobs(user).filter(pk__in=ids).values_list("pk", "name"))
    return shown_to(preview, readable)
