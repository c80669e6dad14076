"""Audit log service: every state-changing action records one :class:`AuditEntry`.

Call :func:`record` from the service (or API write) that changes state, inside its
transaction, so the entry commits or rolls back with the change. Example::

    before = snapshot(quota, ["nominal", "borrowing_limit", "lending_limit"])
    quota.nominal = 4000; quota.save()
    record("quota.update", quota, actor=user, before=before,
           after=snapshot(quota, [...]), tenant_id=quota.tenant_id)
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from django.core.serializers.json import DjangoJSONEncoder
from django.db import models
from django.forms.models import model_to_dict
from django.utils import timezone

from core.models import AuditEntry


def _json_safe(value):
    """``value`` with dates, decimals and UUIDs turned into JSON strings."""
    return json.loads(json.dumps(value, cls=DjangoJSONEncoder))


def snapshot(obj: models.Model, fields: Iterable[str] | None = None) -> dict:
    """JSON-safe ``{field: value}`` of a model instance (foreign keys as ids).

    Args:
        obj: the instance.
        fields: field names to keep (default: every concrete editable field).
    """
    data = model_to_dict(obj, fields=list(fields) if fields is not None else None)
    if fields is not None:
        for name in fields:
            if name not in data and hasattr(obj, name):
                data[name] = getattr(obj, name)
    return _json_safe(data)


def record(action: str, obj: models.Model | None = None, **kwargs) -> AuditEntry:
    """Append one audit entry: :func:`entry` saved (same arguments)."""
    made = entry(action, obj, **kwargs)
    made.save()
    return made


def entry(
    action: str,
    obj: models.Model | None = None,
    *,
    actor=None,
    before: dict | None = None,
    after: dict | None = None,
    tenant_id: int | None = None,
    object_type: str | None = None,
    object_id: str | int | None = None,
    object_repr: str | None = None,
    source: str = "api",
) -> AuditEntry:
    """One audit entry, not yet saved (save it, or ``AuditEntry.objects.bulk_create`` many
    written in one transaction: a batch submission).

    Args:
        action: dotted verb, ``"<object>.<verb>"`` (``"job.submit"``, ``"quota.update"``).
        obj: the changed instance (gives type, id and repr unless passed explicitly).
        actor: the user who acted (``None`` or anonymous = the system).
        before / after: JSON-able snapshots (see :func:`snapshot`); ``None`` on create / delete.
        tenant_id: the tenant the object belongs to (``None`` = platform-level object).
        source: ``"api"``, ``"ui"``, ``"admin"`` or ``"system"``.

    Returns:
        The entry (unsaved).
    """
    if obj is not None:
        object_type = object_type or obj._meta.label_lower
        object_id = obj.pk if object_id is None else object_id
        object_repr = object_repr if object_repr is not None else str(obj)
    user = actor if actor is not None and getattr(actor, "is_authenticated", False) else None
    return AuditEntry(
        time=timezone.now(),
        actor=user,
        actor_name=user.get_username() if user is not None else "",
        action=action,
        object_type=object_type or "",
        object_id="" if object_id is None else str(object_id),
        object_repr=(object_repr or "")[:200],
        tenant_id=tenant_id,
        before=_json_safe(before) if before is not None else None,
        after=_json_safe(after) if after is not None else None,
        source=source,
    )
