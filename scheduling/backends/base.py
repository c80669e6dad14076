"""What every cluster backend offers (:class:`ClusterBackend`) and the error it raises."""

from __future__ import annotations

from typing import Protocol

__all__ = ["ClusterBackend", "SubmissionError"]


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
