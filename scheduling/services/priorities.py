"""The priority class a new job gets in its queue: one rule for every way a job comes in
(``POST /api/jobs/`` and the dashboard form through the submit serializer, objects taken in
from a cluster through :mod:`scheduling.services.intake`).

Kueue semantics: a job names a ``WorkloadPriorityClass`` (or gets the queue's default) and
copies its value; the console adds that a queue may limit the classes its jobs use
(``Queue.allowed_priority_classes``, empty = any) and that a raw priority value is for
platform admins only (tenants would otherwise give themselves any priority).
"""

from __future__ import annotations

from scheduling.models import PriorityClass, Queue

__all__ = ["PriorityRefused", "resolve_priority_class", "priority_class_named"]


class PriorityRefused(ValueError):
    """The queue refuses the priority asked for.

    Attributes:
        field: what the refusal is about: ``"priority"`` (a raw value) or
            ``"priority_class"``; the API answers 400 with it as the field, the intake names
            the matching label.
        message: why, for a person.
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def priority_class_named(name: str) -> PriorityClass:
    """The priority class called ``name``.

    Raises:
        PriorityRefused: there is none (the API's ``does_not_exist`` wording).
    """
    cls = PriorityClass.objects.filter(name=name).first()
    if cls is None:
        raise PriorityRefused("priority_class", f"No priority class named {name}.")
    return cls


def resolve_priority_class(
    queue: Queue, cls: PriorityClass | None, *, raw_priority: bool, platform_admin: bool
) -> PriorityClass | None:
    """The class a new job in ``queue`` gets.

    Args:
        queue: the job's queue (``default_priority_class`` and ``allowed_priority_classes``
            are read; prefetch them for many jobs).
        cls: the class asked for, or None.
        raw_priority: a raw priority value was given too (allowed to platform admins, for a
            job without a class).
        platform_admin: the submitter is a platform admin.

    Returns:
        ``cls``; without one and without a raw value, the queue's default class; None when
        the job has no class (its priority is the raw value, or 0).

    Raises:
        PriorityRefused: a raw value from anyone but a platform admin; a class the queue does
            not allow; no class where the queue allows some and has no default (platform
            admins excepted); a class and a raw value together.
    """
    if raw_priority and not platform_admin:
        raise PriorityRefused(
            "priority",
            "Set by the priority class: a raw priority is for platform admins; name one of "
            "the queue's allowed classes instead.",
        )
    if cls is None and not raw_priority:
        cls = queue.default_priority_class
    allowed = {c.name for c in queue.allowed_priority_classes.all()}
    if cls is not None and allowed and cls.name not in allowed:
        raise PriorityRefused(
            "priority_class",
            f"{cls.name} is not allowed in queue {queue.name} (allowed: "
            f"{', '.join(sorted(allowed))}).",
        )
    if cls is None and allowed and not platform_admin:
        raise PriorityRefused(
            "priority_class",
            f"Queue {queue.name} needs a priority class (allowed: {', '.join(sorted(allowed))}).",
        )
    if cls is not None and raw_priority:
        raise PriorityRefused("priority", "Give priority_class or priority, not both.")
    return cls
