"""Cluster backends: how a committed placement becomes running pods.

A backend implements :class:`ClusterBackend`. ``simulated`` runs pods in the database (they
"run" for the job's ``duration_s``); ``kubernetes`` creates Pods / ResourceClaims through the
official client (``scheduling.kube``).
"""

from __future__ import annotations

from scheduling.backends.base import ClusterBackend, SubmissionError
from scheduling.backends.kubernetes import KubernetesBackend
from scheduling.backends.simulated import SimulatedBackend
from scheduling.choices import Backend

__all__ = ["ClusterBackend", "SubmissionError", "get_backend"]


def get_backend(kind: str) -> ClusterBackend:
    """The backend for a cluster's ``backend`` value.

    Raises:
        ValueError: unknown backend.
    """
    if kind == Backend.SIMULATED:
        return SimulatedBackend()
    if kind == Backend.KUBERNETES:
        return KubernetesBackend()
    raise ValueError(f"unknown cluster backend {kind!r}")
