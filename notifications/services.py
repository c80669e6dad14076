"""Write side of notifications: subscriptions, fanning an event out to deliveries, and one
delivery attempt with its retry decision.

Events arrive through :data:`core.events.domain_event` (:func:`on_domain_event`); each
matching subscription gets a :class:`~notifications.models.Delivery` row, sent by
``deliver_notification_task`` after commit. An attempt that fails transiently is retried
with exponential backoff: ``NOTIFY_BACKOFF_BASE_S`` × 2^(attempt-1) seconds, at most
``NOTIFY_BACKOFF_MAX_S``, until ``NOTIFY_MAX_ATTEMPTS`` attempts.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlparse

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.core.validators import EmailValidator
from django.db import transaction
from django.utils import timezone

from core.audit import record, snapshot
from core.events import EVENT_KINDS
from core.exceptions import Forbidden, InvalidRequest
from notifications import transport
from notifications.choices import SCOPE_KINDS, Channel, DeliveryStatus, Scope
from notifications.dispatch import enqueue_delivery
from notifications.models import Delivery, Subscription
from notifications.selectors import admin_tenant_ids, subscriptions_for_event
from notifications.signing import encrypt_secret, resolve_secret
from tenants.models import Tenant

logger = logging.getLogger(__name__)

AUDIT_FIELDS = [
    "name",
    "scope",
    "tenant",
    "owner",
    "events",
    "channel",
    "url",
    "email",
    "secret_env",
    "enabled",
]
OPEN_STATUSES = (DeliveryStatus.PENDING, DeliveryStatus.RETRYING)


# -- subscriptions --------------------------------------------------------------------------


def check_may_manage(user, scope: str, tenant: Tenant | None) -> None:
    """Platform admins manage every subscription; tenant admins those of their tenants;
    anyone their own "my jobs" subscriptions.

    Raises:
        Forbidden: otherwise.
    """
    if user.is_superuser:
        return
    if scope == Scope.PLATFORM:
        raise Forbidden("only platform admins subscribe to platform events", field="scope")
    if scope == Scope.TENANT and (tenant is None or tenant.pk not in admin_tenant_ids(user)):
        raise Forbidden(
            "only a tenant admin of the tenant subscribes to its events", field="tenant"
        )


def _validate(
    scope: str,
    tenant: Tenant | None,
    channel: str,
    url: str,
    email: str,
    events: list[str],
    secret_env: str,
) -> None:
    if scope not in Scope.values:
        raise InvalidRequest(f"scope must be one of {', '.join(Scope.values)}", field="scope")
    if (scope == Scope.TENANT) != (tenant is not None):
        raise InvalidRequest(
            "a tenant subscription names its tenant; others name none", field="tenant"
        )
    allowed = SCOPE_KINDS[Scope(scope)]
    unknown = [k for k in events if k not in allowed]
    if unknown:
        raise InvalidRequest(
            f"{', '.join(unknown)} not received by {scope} subscriptions "
            f"(valid: {', '.join(allowed)})",
            field="events",
        )
    if channel == Channel.WEBHOOK:
        parsed = urlparse(url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise InvalidRequest("url must be an http(s) URL with a host", field="url")
    elif channel == Channel.EMAIL:
        try:
            EmailValidator()(email)
        except Exception as exc:
            raise InvalidRequest("email must be an e-mail address", field="email") from exc
    else:
        raise InvalidRequest(f"channel must be one of {', '.join(Channel.values)}", field="channel")
    if secret_env and not secret_env.replace("_", "").isalnum():
        raise InvalidRequest("secret_env must be an environment variable name", field="secret_env")


def create_subscription(
    *,
    user,
    name: str,
    scope: str,
    channel: str,
    tenant: Tenant | None = None,
    url: str = "",
    email: str = "",
    events: Iterable[str] = (),
    secret: str = "",
    secret_env: str = "",
    enabled: bool = True,
) -> Subscription:
    """Create a subscription owned by ``user`` (see :func:`check_may_manage`).

    Raises:
        Forbidden: ``user`` may not subscribe to that scope or tenant.
        InvalidRequest: a bad scope/channel/url/e-mail/event kind (``field`` names it).
    """
    events = sorted(set(events))
    _validate(scope, tenant, channel, url, email, events, secret_env)
    check_may_manage(user, scope, tenant)
    with transaction.atomic():
        sub = Subscription.objects.create(
            name=name,
            scope=scope,
            tenant=tenant,
            owner=user,
            events=events,
            channel=channel,
            url=url if channel == Channel.WEBHOOK else "",
            email=email if channel == Channel.EMAIL else "",
            secret_encrypted=encrypt_secret(secret) if channel == Channel.WEBHOOK else "",
            secret_env=secret_env if channel == Channel.WEBHOOK else "",
            enabled=enabled,
        )
        record(
            "subscription.create",
            sub,
            actor=user,
            after=snapshot(sub, AUDIT_FIELDS),
            tenant_id=sub.tenant_id,
        )
    return sub


def update_subscription(sub: Subscription, *, user, changes: dict[str, Any]) -> Subscription:
    """Change ``name``, ``events``, ``url``, ``email``, ``secret`` ("" clears it),
    ``secret_env`` or ``enabled`` of ``sub`` (scope, tenant and channel are fixed).

    Raises:
        Forbidden, InvalidRequest: as :func:`create_subscription`.
    """
    check_may_manage(user, sub.scope, sub.tenant)
    values = {
        f: changes.get(f, getattr(sub, f))
        for f in ("name", "events", "url", "email", "secret_env", "enabled")
    }
    values["events"] = sorted(set(values["events"]))
    _validate(
        sub.scope,
        sub.tenant,
        sub.channel,
        values["url"],
        values["email"],
        values["events"],
        values["secret_env"],
    )
    with transaction.atomic():
        before = snapshot(sub, AUDIT_FIELDS)
        for field, value in values.items():
            setattr(sub, field, value)
        if "secret" in changes:
            sub.secret_encrypted = encrypt_secret(changes["secret"])
        sub.save()
        record(
            "subscription.update",
            sub,
            actor=user,
            before=before,
            after=snapshot(sub, AUDIT_FIELDS),
            tenant_id=sub.tenant_id,
        )
    return sub


def delete_subscription(sub: Subscription, *, user) -> None:
    """Delete ``sub`` and its delivery log. Raises Forbidden as :func:`check_may_manage`."""
    check_may_manage(user, sub.scope, sub.tenant)
    with transaction.atomic():
        record(
            "subscription.delete",
            sub,
            actor=user,
            before=snapshot(sub, AUDIT_FIELDS),
            tenant_id=sub.tenant_id,
        )
        sub.delete()


# -- events -> deliveries ---------------------------------------------------------------------


def notify(
    kind: str, tenant_id: int | None, payload: dict[str, Any], *, user_id: int | None = None
) -> list[int]:
    """Fan event ``kind`` about ``tenant_id`` out to every matching subscription
    (:func:`notifications.selectors.subscriptions_for_event`) and send each after commit.

    Returns:
        The new delivery ids.

    Raises:
        ValueError: an unknown kind.
    """
    if kind not in EVENT_KINDS:
        raise ValueError(f"unknown event kind {kind!r}")
    subs = subscriptions_for_event(kind, tenant_id, user_id)
    if not subs:
        return []
    safe = json.loads(json.dumps(payload, cls=DjangoJSONEncoder))
    event_id = uuid.uuid4()
    with transaction.atomic():
        rows = Delivery.objects.bulk_create(
            Delivery(subscription=s, event_id=event_id, kind=kind, payload=safe) for s in subs
        )
        for row in rows:
            enqueue_delivery(row.pk)
    return [r.pk for r in rows]


def on_domain_event(
    sender=None,
    *,
    kind: str,
    tenant_id: int | None,
    payload: dict,
    user_id: int | None = None,
    **_kwargs,
) -> None:
    """Receiver of :data:`core.events.domain_event`."""
    notify(kind, tenant_id, payload, user_id=user_id)


def send_test(sub: Subscription, *, user) -> Delivery:
    """Queue a ``test`` delivery to ``sub`` (its owner or manager checks the endpoint)."""
    check_may_manage(user, sub.scope, sub.tenant)
    with transaction.atomic():
        row = Delivery.objects.create(
            subscription=sub,
            kind="test",
            payload={"message": f"test notification for {sub.name}, requested by {user.username}"},
        )
        enqueue_delivery(row.pk)
    return row


# -- one attempt --------------------------------------------------------------------------------


def summary(kind: str, payload: dict[str, Any]) -> str:
    """A one-line text for e-mail subjects and the log."""
    p = payload
    texts = {
        "job.preempted": lambda: (
            f"job {p.get('job_name')} was preempted ({p.get('reason')}, {p.get('outcome')})"
            if p.get("role") == "victim"
            else f"job {p.get('job_name')} preempted a job of {p.get('other')}"
        ),
        "job.failed": lambda: f"job {p.get('job_name')} failed: {p.get('message', '')[:200]}",
        "job.idle": lambda: (
            f"job {p.get('job_name')} is idle since {p.get('idle_since')} "
            f"({p.get('used_cores_percent')} % of "
            f"{p.get('allocated_cores_percent')} % cores used)"
        ),
        "capacity.alert": lambda: str(p.get("message", "")),
        "quota.nearly_exhausted": lambda: (
            f"{p.get('dimension')} quota of {p.get('flavor')} in {p.get('resource_group')} "
            f"is {p.get('used_percent')} % used (threshold {p.get('threshold_percent')} %)"
        ),
    }
    return texts[kind]() if kind in texts else str(p.get("message", kind))


def delivery_body(row: Delivery) -> bytes:
    """The JSON body of a webhook delivery (also the e-mail's attachment-free text)."""
    sub = row.subscription
    body = {
        "id": str(row.event_id),
        "delivery": row.pk,
        "kind": row.kind,
        "time": row.created.isoformat(),
        "scope": sub.scope,
        "tenant": sub.tenant.name if sub.tenant_id else None,
        "summary": summary(row.kind, row.payload),
        "payload": row.payload,
    }
    return json.dumps(body, sort_keys=True, cls=DjangoJSONEncoder).encode()


def _backoff_s(attempts: int) -> float:
    base = settings.NOTIFY_BACKOFF_BASE_S * 2 ** max(0, attempts - 1)
    return min(base, settings.NOTIFY_BACKOFF_MAX_S)


def _send(row: Delivery) -> transport.Outcome:
    sub = row.subscription
    if sub.channel == Channel.EMAIL:
        text = (
            f"{summary(row.kind, row.payload)}\n\n"
            f"{json.dumps(row.payload, indent=2, sort_keys=True)}\n"
        )
        return transport.send_email(
            sub.email, f"[LLMOps Console] {row.kind}: {summary(row.kind, row.payload)[:120]}", text
        )
    try:
        secret = resolve_secret(sub.secret_encrypted, sub.secret_env)
    except ValueError as exc:
        return transport.Outcome(False, error=str(exc))
    return transport.post_webhook(
        sub.url,
        delivery_body(row),
        event=row.kind,
        delivery=str(row.pk),
        secret=secret,
        timeout_s=settings.NOTIFY_TIMEOUT_S,
    )


def attempt_delivery(delivery_id: int, *, now: datetime | None = None) -> float | None:
    """Make one attempt at delivery ``delivery_id`` and record it (status, attempts,
    response code, last error).

    At least once: a worker lost mid-attempt (late acknowledgement) sends again; receivers
    deduplicate on ``X-Console-Delivery``.

    Returns:
        Seconds until the next attempt when it should be retried, else None (delivered,
        failed for good, already done, or unknown id).
    """
    row = (
        Delivery.objects.select_related("subscription__tenant")
        .filter(pk=delivery_id, status__in=OPEN_STATUSES)
        .first()
    )
    if row is None:
        return None
    outcome = _send(row)
    now = now or timezone.now()
    attempts = row.attempts + 1
    fields = {
        "attempts": attempts,
        "last_attempt_at": now,
        "response_code": outcome.status,
        "last_error": outcome.error,
        "next_attempt_at": None,
    }
    retry_in = None
    if outcome.ok:
        fields.update(status=DeliveryStatus.DELIVERED, delivered_at=now)
    elif outcome.retry and attempts < settings.NOTIFY_MAX_ATTEMPTS:
        retry_in = _backoff_s(attempts)
        fields.update(
            status=DeliveryStatus.RETRYING, next_attempt_at=now + timedelta(seconds=retry_in)
        )
    else:
        fields.update(status=DeliveryStatus.FAILED)
        logger.warning(
            "notification %s to subscription %s failed after %d attempt(s): %s",
            row.pk,
            row.subscription_id,
            attempts,
            outcome.error,
        )
    Delivery.objects.filter(pk=row.pk, status__in=OPEN_STATUSES).update(**fields)
    return retry_in
