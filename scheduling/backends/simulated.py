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

    def backend_ref_expression(self) -> Concat:
        """:meth:`submit`'s ``backend_ref`` as an SQL expression over a placement's own
        columns, for a bulk start of many ``reserved`` placements in one conditional UPDATE
        (:func:`scheduling.services.cluster_submission_batch.submit_admitted_jobs`)."""
        return Concat(
            Value("sim-"),
            Cast(F("job_id"), CharField()),
            Value("-"),
            Cast(F("pod_index"), CharField()),
            Value("-"),
            Cast(F("pk"), CharField()),
        )

    def delete(self, placement) -> None:
        """Nothing to delete outside the database."""
