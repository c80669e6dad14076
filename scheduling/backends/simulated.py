"""The simulated cluster: pods start as soon as they are submitted and succeed after the job's
``duration_s`` (see :func:`scheduling.services.submissions.reconcile_simulated`); inference
replicas and notebooks run until stopped."""

from __future__ import annotations


class SimulatedBackend:
    """In-database cluster used by the embedded demo, trace replay and what-if runs."""

    def submit(self, placement) -> str:
        """Start the pod at once: the placement becomes ``running`` and ready."""
        placement.backend_ref = f"sim-{placement.job_id}-{placement.pod_index}-{placement.pk}"
        placement.ready = True
        return "running"

    def delete(self, placement) -> None:
        """Nothing to delete outside the database."""
