"""A moved job restarts where its consolidation plan put it (admission cycle step 3b).

Consolidation (:mod:`scheduling.services.consolidation`) requeues each moved job and keeps
its planned target on the ``ConsolidationMove`` row (``target_pods``, ``pin`` =
``pending``). The next cycle that considers the job pins its request to that target
(:func:`scheduling.placement.pin.pin_request`: the planned devices as ``uuids_include``, the
equivalent of HAMi's ``nvidia.com/use-gpuuuid`` annotation) when the pinned request still
fits the cycle's cluster snapshot; otherwise the job keeps its normal request and is placed
wherever it fits, and its events say so. The pin is resolved when the job is admitted
(``placed``) or falls back (``fell_back``); a pinned job that a higher head overtakes in the
same cycle stays ``pending`` and is checked again by the next cycle.

Writes happen after the cycle's commit has taken its one job-lock round
(:mod:`scheduling.services.locking`): :func:`pin_moved_jobs` only reads.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from scheduling.admission import PendingWorkload, Placer
from scheduling.choices import ConsolidationPin
from scheduling.models import ConsolidationMove, JobEvent
from scheduling.placement.pin import pin_request, pins_from_json
from scheduling.placement.types import PlacementRequest
from scheduling.selectors.admission import AdmissionContext
from scheduling.selectors.consolidation import pending_pins

__all__ = ["CyclePins", "pin_moved_jobs", "record_pins"]

#: JobEvent kind of the pin's outcome (the move itself is a ``moved`` event).
EVENT_KIND = "consolidation"


@dataclass
class CyclePins:
    """The pins of one cycle.

    Attributes:
        pinned: ``{workload id: move}`` of the heads whose request was pinned.
        fell_back: ``{workload id: (move, why)}`` of the heads left to the normal placement.
    """

    pinned: dict[str, ConsolidationMove] = field(default_factory=dict)
    fell_back: dict[str, tuple[ConsolidationMove, str]] = field(default_factory=dict)


def pin_moved_jobs(ctx: AdmissionContext, placer: Placer) -> CyclePins:
    """Pin the cycle's moved heads to their planned targets where they still fit
    (module docstring): ``ctx.snapshot`` gets the pinned requests. Reads only (one query).

    Args:
        ctx: the cycle's context (its pending heads and cluster snapshot).
        placer: the cycle's placer, before the cycle runs (nothing booked by it yet).
    """
    pins = CyclePins()
    moves = pending_pins(int(job_id) for job_id in ctx.jobs)
    if not moves:
        return pins
    replaced: dict[str, PendingWorkload] = {}
    for workload in ctx.snapshot.pending:
        move = moves.get(int(workload.id))
        if move is None:
            continue
        pinned = _pinned(workload, move, ctx, placer)
        if isinstance(pinned, str):
            pins.fell_back[workload.id] = (move, pinned)
        else:
            replaced[workload.id] = pinned
            pins.pinned[workload.id] = move
    if replaced:
        pending = tuple(replaced.get(p.id, p) for p in ctx.snapshot.pending)
        ctx.snapshot = replace(ctx.snapshot, pending=pending)
    return pins


def _pinned(
    workload: PendingWorkload, move: ConsolidationMove, ctx: AdmissionContext, placer: Placer
) -> PendingWorkload | str:
    """The pinned workload, or why it cannot be pinned."""
    if not isinstance(workload.request, PlacementRequest):
        return "its request cannot be pinned"
    try:
        pod_pins = pins_from_json(move.target_pods)
    except ValueError as exc:
        return f"the planned target could not be read ({exc})"
    request = pin_request(workload.request, pod_pins, ctx.cluster)
    if request is None:
        return "its pods no longer match the planned target"
    pinned = replace(workload, request=request)
    if not placer.try_place(pinned, pinned.pod_count).placed:
        return "the planned target is no longer free"
    return pinned


def record_pins(pins: CyclePins, admitted: Iterable[int]) -> None:
    """After the cycle's commit: the pinned jobs it admitted were placed on their target
    (``placed``), the others fell back (``fell_back``); one event on each such job (its own
    target only: nothing of another tenant). Pinned jobs not admitted stay ``pending``."""
    done = {str(job_id) for job_id in admitted}
    placed = [move for wid, move in sorted(pins.pinned.items()) if wid in done]
    events = [
        JobEvent(
            job_id=move.job_id,
            kind=EVENT_KIND,
            message=f"placed on the target planned by consolidation: {move.target}",
        )
        for move in placed
    ]
    events += [
        JobEvent(
            job_id=move.job_id,
            kind=EVENT_KIND,
            message=f"not placed on the target planned by consolidation ({move.target}): "
            f"{why}; it is placed wherever it fits instead",
        )
        for _wid, (move, why) in sorted(pins.fell_back.items())
    ]
    if placed:
        ConsolidationMove.objects.filter(pk__in=[m.pk for m in placed]).update(
            pin=ConsolidationPin.PLACED
        )
    if pins.fell_back:
        ConsolidationMove.objects.filter(
            pk__in=sorted(m.pk for m, _ in pins.fell_back.values())
        ).update(pin=ConsolidationPin.FELL_BACK)
    if events:
        JobEvent.objects.bulk_create(events)
