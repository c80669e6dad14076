"""Cluster backends: how a committed placement becomes running pods.

A backend implements :class:`ClusterBackend`. ``simulated`` runs pods in the database (they
"run" for the job's ``duration_s``); ``kubernetes`` creates Pods / ResourceClaims through the
official client (``scheduling.kube``).
"""

from __future__ import annotations

from typing import Protocol

from scheduling.choices import Backend


class SubmissionError(Exception):
    """A submission failed. ``retryable`` says whether trying again may succeed."""

    def __init__(self, message: str, *, retryable: bool):
        super().__init__(message)
        self.retryable = retryable


class ClusterBackend(Protocol):
    """What the submission and reconcile services need from a cluster."""

    def submit(self, placement) -> str:
        """Create the objects realising ``placement`` (a ``Placement`` row).

        Idempotent: a retry for the same placement must not create a second pod.

        Returns:
            The placement's new state: ``"submitted"`` (pods created, not yet running) or
            ``"running"``.

        Raises:
            SubmissionError: the cluster refused or could not be reached.
        """

    def delete(self, placement) -> None:
        """Delete the objects of ``placement``; deleting what is already gone is not an error."""


def get_backend(kind: str) -> ClusterBackend:
    """The backend for a cluster's ``backend`` value.

    Raises:
        ValueError: unknown backend.
    """
    if kind == Backend.SIMULATED:
        from scheduling.backends.simulated import SimulatedBackend

        return SimulatedBackend()
    if kind == Backend.KUBERNETES:
        from scheduling.backends.kubernetes import KubernetesBackend

        return KubernetesBackend()
    raise ValueError(f"unknown cluster backend {kind!r}")
