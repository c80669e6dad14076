"""What the console refuses to take in from a cluster although the object's queue exists
(:mod:`scheduling.services.intake`): a priority its queue does not give, decided by the rule
the API uses (:mod:`scheduling.services.priorities`).

A refusal here is a :class:`Refused`; the intake records it, says why in a Warning Event and
keeps the object held back (suspended, or still gated), so that a refused object never runs
outside admission.
"""

from __future__ import annotations

from scheduling.kube import workloads as wl
from scheduling.models import PriorityClass, Queue
from scheduling.services.priorities import (
    PriorityRefused,
    priority_class_named,
    resolve_priority_class,
)

__all__ = ["Refused", "priority_class_of"]


class Refused(Exception):
    """An object the intake does not take in.

    Attributes:
        reason: the Event reason (``PriorityRefused``).
        message: why, naming the label or field.
    """

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


_LABEL_OF = {"priority": wl.LABEL_PRIORITY, "priority_class": wl.LABEL_PRIORITY_CLASS}
"""The label a workload sets in place of each field of ``POST /api/jobs/``."""


def priority_class_of(queue: Queue, workload: wl.Workload) -> PriorityClass | None:
    """The priority class a workload's job gets in ``queue``: its
    :data:`~scheduling.kube.workloads.LABEL_PRIORITY_CLASS`, else the queue's default,
    resolved as the API resolves a submission's ``priority_class`` from a member (the
    submitter of a kubectl object is no platform admin: a raw
    :data:`~scheduling.kube.workloads.LABEL_PRIORITY` is refused).

    Raises:
        Refused: ``PriorityRefused``, the message naming the label and the queue's rule.
    """
    try:
        cls = priority_class_named(workload.priority_class) if workload.priority_class else None
        return resolve_priority_class(
            queue, cls, raw_priority=bool(workload.raw_priority), platform_admin=False
        )
    except PriorityRefused as exc:
        raise Refused(
            "PriorityRefused", f"metadata.labels.{_LABEL_OF[exc.field]}: {exc.message}"
        ) from None
