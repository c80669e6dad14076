"""Reads about consolidation moves: the move budget used per resource group and the moves
made for jobs still waiting (:mod:`scheduling.services.consolidation` writes them)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.db.models import Count

from scheduling.choices import ConsolidationPin, PlacementState
from scheduling.models import ConsolidationMove
from tenants.models import CONSOLIDATION_BUDGET_WINDOW as BUDGET_WINDOW


def moves_in_window(group_ids: Iterable[int], now: datetime) -> dict[int, int]:
    """``{group id: moves made in the last hour}`` for the given groups (absent = 0); one
    query whatever the number of groups."""
    rows = (
        ConsolidationMove.objects.filter(
            resource_group_id__in=sorted(set(group_ids)), time__gt=now - BUDGET_WINDOW
        )
        .values("resource_group_id")
        .annotate(n=Count("id"))
    )
    return {row["resource_group_id"]: row["n"] for row in rows}


def waiting_for_moves(job_ids: Iterable[int]) -> set[int]:
    """Ids among ``job_ids`` for which jobs were moved whose old pods still terminate (room
    is being made for them: consolidation must not move more jobs for them)."""
    return set(
        ConsolidationMove.objects.filter(
            for_job_id__in=sorted(set(job_ids)), job__placements__state=PlacementState.TERMINATING
        ).values_list("for_job_id", flat=True)
    )


def pending_pins(job_ids: Iterable[int]) -> dict[int, ConsolidationMove]:
    """``{job id: its latest move whose pin is still pending}`` among ``job_ids`` (moved jobs
    not placed since their move); one query."""
    rows = ConsolidationMove.objects.filter(
        job_id__in=sorted(set(job_ids)), pin=ConsolidationPin.PENDING
    ).order_by("job_id", "time", "id")
    return {row.job_id: row for row in rows}  # the latest move of a job wins
