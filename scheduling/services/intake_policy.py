"""What the console refuses to take in from a cluster although the object's queue exists
(:mod:`scheduling.services.intake`): a priority its queue does not give, decided by the rule
the API uses (:mod:`scheduling.services.priorities`), and pod templates the tenant namespace's
Pod Security level forbids (:mod:`scheduling.kube.pod_security`).

A refusal here is a :class:`Refused`; the intake records it, says why in a Warning Event and
keeps the object held back (suspended, or still gated), so that a refused object never runs
outside admission.
"""

from __future__ import annotations

from django.conf import settings

from scheduling.kube import workloads as wl
from scheduling.kube.pod_security import baseline_violations
from scheduling.models import PriorityClass, Queue
from scheduling.services.priorities import (
    PriorityRefused,
    priority_class_named,
    resolve_priority_class,
)

__all__ = ["Refused", "priority_class_of", "check_pod_security"]


class Refused(Exception):
    """An object the intake does not take in.

    Attributes:
        reason: the Event reason (``PriorityRefused``, ``PodSecurityRefused``).
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


def check_pod_security(obj: dict, workload: wl.Workload) -> None:
    """Refuse a workload whose pod templates break the ``baseline`` controls of
    :func:`~scheduling.kube.pod_security.baseline_violations` when the tenant namespaces
    enforce ``baseline`` or ``restricted`` (``TENANT_POD_SECURITY_LEVEL``): Pod Security
    Admission would refuse its pods only after the console admitted it and booked devices.

    Raises:
        Refused: ``PodSecurityRefused``, the message listing each field and value.
    """
    level = settings.TENANT_POD_SECURITY_LEVEL
    if level == "privileged":
        return
    found = [
        v for where, spec in wl.pod_specs(obj, workload) for v in baseline_violations(spec, where)
    ]
    if found:
        raise Refused(
            "PodSecurityRefused",
            f"the tenant namespace's Pod Security level {level} forbids {'; '.join(found)}",
        )
