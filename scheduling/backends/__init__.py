"""Cluster backends: how a committed placement becomes running pods.

A backend implements :class:`ClusterBackend`. ``simulated`` runs pods in the database (they
"run" for the job's ``duration_s``); ``kubernetes`` creates Pods / ResourceClaims through the
official client (``scheduling.kube``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING

from django.db import transaction

from scheduling.backends.base import ClusterBackend, SubmissionError
from scheduling.backends.kubernetes import KubernetesBackend
from scheduling.backends.simulated import SimulatedBackend
from scheduling.choices import Backend

if TYPE_CHECKING:
    from scheduling.models import Placement

__all__ = ["ClusterBackend", "SubmissionError", "delete_pods_on_commit", "get_backend"]

logger = logging.getLogger(__name__)


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


def delete_pods_on_commit(placements: Iterable[Placement]) -> None:
    """Delete the pods of ``placements`` through their cluster backends once the caller's
    transaction commits (at once when no transaction is open).

    Cluster API calls never run inside a transaction: a rolled-back release must not have
    deleted a pod, and a slow API server must not hold row locks (the kube-scheduler /
    Kueue order: commit the decision, then act on the cluster). ``placements`` need
    ``node__cluster`` loaded. A failed delete is logged and the next placement is still
    deleted; the Kubernetes reconcile deletes console pods whose placement is no longer
    booked (:mod:`scheduling.services.kube_reconcile`).
    """
    todo = list(placements)
    if not todo:
        return

    def delete_all() -> None:
        for placement in todo:
            try:
                get_backend(placement.node.cluster.backend).delete(placement)
            except Exception:  # noqa: BLE001 - one failure must not keep the others' pods
                logger.exception("placement %s: deleting its pod failed", placement.pk)

    transaction.on_commit(delete_all)
