"""The simulated cluster: pods start as soon as they are submitted and succeed after the job's
``duration_s`` (see :func:`scheduling.services.cluster_submission.reconcile_simulated`); inference
replicas and notebooks run until stopped."""

from __future__ import annotations

from django.db.models import CharField, F, Value
from django.db.models.functions import Cast, Concat


class SimulatedBackend:
    """In-database cluster used by the embedded demo, trace replay and what-if runs."""

    def submit(self, placement) -> str:
        """Start the pod at once: the placement becomes ``running`` and ready."""
        placement.backend_ref = f"sim-{placement.job_id}-{placement.pod_index}-{placement.pk}"
        placement.ready = True
        return "running"

    def submit_reserved(self, placements, now) -> int:
        """:meth:`submit` for every ``reserved`` placement of the queryset ``placements`` in one
        conditional UPDATE (same ``backend_ref``, state ``running``, submitted/started
        ``now``); returns the number moved. The caller holds the jobs' locks."""
        ref = Concat(
            Value("sim-"),
            Cast(F("job_id"), CharField()),
            Value("-"),
            Cast(F("pod_index"), CharField()),
            Value("-"),
            Cast(F("pk"), CharField()),
        )
        return placements.filter(state="reserved").update(
            state="running", submitted_at=now, started_at=now, backend_ref=ref, updated=now
        )

    def delete(self, placement) -> None:
        """Nothing to delete outside the database."""
