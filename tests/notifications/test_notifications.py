"""Notifications end to end: events from the services reach webhooks (a real local HTTP
receiver) and e-mail, signed, retried on 5xx with backoff, logged, tenant-isolated."""

from __future__ import annotations

import hashlib
import hmac
import json

import pytest
from django.core import mail
from django.test import override_settings

from notifications import services
from notifications.choices import DeliveryStatus
from notifications.models import Delivery, Subscription
from scheduling.choices import JobState
from scheduling.services.cluster_submission import fail_job, submit_to_cluster
from scheduling.services.cycle import run_admission_cycle
from tests.api.test_api_directory import as_user
from tests.builders import gpu_job, make_user, two_team_cohort

pytestmark = pytest.mark.django_db
WHOLE = {"count": 1, "memory_percent": 100, "cores": 100}
SECRET = "s3cret-signing-key-0123"


@pytest.fixture
def cohort_users(db):
    """team-a and team-b share 4 A100s (2 nominal each); ada admins team-a, alice is a
    member of team-a, bert admins team-b, root is a platform admin."""
    from django.contrib.auth import get_user_model

    group, (a, qa), (b, qb) = two_team_cohort()
    return {
        "group": group,
        "a": a,
        "qa": qa,
        "b": b,
        "qb": qb,
        "ada": make_user("ada", a, "tenant_admin"),
        "alice": make_user("alice", a, "member"),
        "bert": make_user("bert", b, "tenant_admin"),
        "root": get_user_model().objects.create_superuser("root", "r@example.org", "pw"),
    }


def _hook(user, receiver, *, scope="tenant", tenant=None, **extra):
    return services.create_subscription(
        user=user,
        name=f"{user.username}-{scope}",
        scope=scope,
        tenant=tenant,
        channel="webhook",
        url=receiver.url,
        **extra,
    )


@override_settings(NOTIFY_BACKOFF_BASE_S=0.0)
def test_cross_tenant_preemption_reaches_both_tenants_anonymously(
    cohort_users, receiver, eager_tasks, django_capture_on_commit_callbacks
):
    w = cohort_users
    _hook(w["ada"], receiver, tenant=w["a"], secret=SECRET)
    _hook(w["bert"], receiver, tenant=w["b"])
    b_jobs = [gpu_job(w["qb"], f"b-borrower-{i}", **WHOLE) for i in range(4)]
    with django_capture_on_commit_callbacks(execute=True):
        run_admission_cycle(w["group"].pk)
    gpu_job(w["qa"], "a-reclaimer", **WHOLE)
    with django_capture_on_commit_callbacks(execute=True):
        report = run_admission_cycle(w["group"].pk)
    # the reclaimer is admitted once the victim's pods are gone (terminating until then)
    assert len(report.preempted) == 1
    victim_name = next(j.name for j in b_jobs if j.pk == report.preempted[0])
    bodies = {b["tenant"]: b for b in receiver.bodies() if b["kind"] == "job.preempted"}
    assert set(bodies) == {"team-a", "team-b"}
    to_a, to_b = bodies["team-a"], bodies["team-b"]
    assert to_a["payload"]["role"] == "preemptor" and to_a["payload"]["job_name"] == "a-reclaimer"
    assert to_b["payload"]["role"] == "victim" and to_b["payload"]["job_name"] == victim_name
    assert to_b["payload"]["outcome"] == "requeued"
    assert "team-b" not in json.dumps(to_a) and "b-borrower" not in json.dumps(to_a)
    assert "team-a" not in json.dumps(to_b) and "a-reclaimer" not in json.dumps(to_b)
    # the signed one (team-a's) carries a correct HMAC-SHA256 of the exact body
    by_tenant = {
        json.loads(body)["tenant"]: (headers, body)
        for _, headers, body in receiver.requests
        if json.loads(body)["kind"] == "job.preempted"
    }
    headers, body = by_tenant["team-a"]
    expected = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    assert headers["X-Console-Signature-256"] == expected
    assert headers["X-Console-Event"] == "job.preempted"
    assert "X-Console-Signature-256" not in by_tenant["team-b"][0]
    assert (
        Delivery.objects.filter(kind="job.preempted", status=DeliveryStatus.DELIVERED).count() == 2
    )
    # team-b borrowed the whole group: its quota crossed the threshold on the way
    assert {b["tenant"] for b in receiver.bodies() if b["kind"] == "quota.nearly_exhausted"} == {
        "team-b"
    }


@override_settings(NOTIFY_BACKOFF_BASE_S=0.0, NOTIFY_MAX_ATTEMPTS=5)
def test_webhook_retried_on_500_until_it_answers(
    cohort_users, receiver, eager_tasks, django_capture_on_commit_callbacks
):
    w = cohort_users
    _hook(w["alice"], receiver, scope="user")
    receiver.statuses = [500, 503, 200]
    job = gpu_job(w["qa"], "a-fails", **WHOLE)
    job.submitted_by = w["alice"]
    job.save(update_fields=["submitted_by"])
    run_admission_cycle(w["group"].pk)
    with django_capture_on_commit_callbacks(execute=True):
        fail_job(job.pk, "container exited with code 137")
    assert len(receiver.requests) == 3
    assert {b["id"] for b in receiver.bodies()} == {receiver.bodies()[0]["id"]}
    row = Delivery.objects.get()
    assert (row.kind, row.status, row.attempts, row.response_code, row.last_error) == (
        "job.failed",
        DeliveryStatus.DELIVERED,
        3,
        200,
        "",
    )
    assert row.payload["message"] == "container exited with code 137"


@override_settings(NOTIFY_BACKOFF_BASE_S=10.0, NOTIFY_BACKOFF_MAX_S=25.0, NOTIFY_MAX_ATTEMPTS=4)
def test_backoff_doubles_and_gives_up_after_max_attempts(cohort_users, receiver):
    w = cohort_users
    sub = _hook(w["ada"], receiver, tenant=w["a"])
    receiver.statuses = [500, 502, 500, 500]
    [delivery_id] = services.notify("job.failed", w["a"].pk, {"job": 1, "job_name": "x"})
    waits = [services.attempt_delivery(delivery_id) for _ in range(4)]
    assert waits == [10.0, 20.0, 25.0, None]
    row = Delivery.objects.get(pk=delivery_id)
    assert (row.status, row.attempts, row.response_code) == (DeliveryStatus.FAILED, 4, 500)
    assert row.last_error == "HTTP 500: receiver says no"
    assert services.attempt_delivery(delivery_id) is None  # done: nothing sent again
    assert len(receiver.requests) == 4 and row.subscription == sub


def test_client_error_is_not_retried_and_timeouts_are(cohort_users, receiver):
    w = cohort_users
    _hook(w["ada"], receiver, tenant=w["a"])
    receiver.statuses = [404]
    [first] = services.notify("job.failed", w["a"].pk, {"job_name": "x"})
    assert services.attempt_delivery(first) is None
    assert Delivery.objects.get(pk=first).status == DeliveryStatus.FAILED
    dead = Subscription.objects.create(
        name="dead", scope="tenant", tenant=w["a"], owner=w["ada"], url="http://127.0.0.1:9/none"
    )
    [second] = [
        d
        for d in services.notify("job.failed", w["a"].pk, {"job_name": "y"})
        if Delivery.objects.get(pk=d).subscription == dead
    ]
    assert services.attempt_delivery(second) is not None
    row = Delivery.objects.get(pk=second)
    assert row.status == DeliveryStatus.RETRYING and row.response_code is None
    assert "ConnectionError" in row.last_error


def test_events_only_reach_their_tenant_user_and_platform(cohort_users, receiver):
    w = cohort_users
    subs = {
        "a-tenant": _hook(w["ada"], receiver, tenant=w["a"]),
        "b-tenant": _hook(w["bert"], receiver, tenant=w["b"]),
        "alice": _hook(w["alice"], receiver, scope="user"),
        "platform": _hook(w["root"], receiver, scope="platform"),
        "a-quota-only": _hook(w["ada"], receiver, tenant=w["a"], events=["quota.nearly_exhausted"]),
    }

    def reached(kind, tenant_id, user_id=None):
        ids = services.notify(kind, tenant_id, {"job_name": "j"}, user_id=user_id)
        got = set(Delivery.objects.filter(pk__in=ids).values_list("subscription_id", flat=True))
        return {name for name, s in subs.items() if s.pk in got}

    assert reached("job.failed", w["a"].pk, w["alice"].pk) == {"a-tenant", "alice", "platform"}
    assert reached("job.failed", w["b"].pk, w["alice"].pk) == {"b-tenant", "platform"}
    assert reached("capacity.alert", None) == {"platform"}
    assert reached("quota.nearly_exhausted", w["a"].pk) == {"a-tenant", "a-quota-only", "platform"}


def test_quota_crossing_the_threshold_notifies_once(
    cohort_users, receiver, eager_tasks, django_capture_on_commit_callbacks
):
    w = cohort_users
    _hook(w["ada"], receiver, tenant=w["a"], events=["quota.nearly_exhausted"])
    with override_settings(QUOTA_ALERT_THRESHOLD_PERCENT=75):
        first = gpu_job(w["qa"], "a1", **WHOLE)
        with django_capture_on_commit_callbacks(execute=True):
            run_admission_cycle(w["group"].pk)  # 1000 of 2000: below 75 %
        assert receiver.requests == []
        gpu_job(w["qa"], "a2", **WHOLE)
        with django_capture_on_commit_callbacks(execute=True):
            run_admission_cycle(w["group"].pk)  # 2000 of 2000: crosses
        submit_to_cluster(first.pk)
    [body] = receiver.bodies()
    assert body["payload"]["dimension"] == "devices" and body["payload"]["used_percent"] == 100
    assert body["payload"]["threshold_percent"] == 75 and body["tenant"] == "team-a"
    first.refresh_from_db()
    assert first.state == JobState.RUNNING


def test_email_channel_uses_django_mail(
    cohort_users, eager_tasks, django_capture_on_commit_callbacks
):
    w = cohort_users
    services.create_subscription(
        user=w["alice"], name="mail", scope="user", channel="email", email="alice@example.org"
    )
    with django_capture_on_commit_callbacks(execute=True):
        services.notify(
            "job.idle",
            w["a"].pk,
            {
                "job_name": "notebook",
                "idle_since": "t",
                "used_cores_percent": 0.5,
                "allocated_cores_percent": 100,
            },
            user_id=w["alice"].pk,
        )
    [message] = mail.outbox
    assert message.to == ["alice@example.org"]
    assert "job notebook is idle" in message.subject
    assert Delivery.objects.get().status == DeliveryStatus.DELIVERED


def test_api_scopes_secrets_and_delivery_log(api, cohort_users, receiver):
    w = cohort_users
    created = as_user(api, w["ada"]).post(
        "/api/notifications/subscriptions/",
        {
            "name": "ops",
            "scope": "tenant",
            "tenant": "team-a",
            "url": receiver.url,
            "secret": SECRET,
            "events": ["job.failed"],
        },
        format="json",
    )
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["signed"] is True and "secret" not in body and body["tenant"] == "team-a"
    sub = Subscription.objects.get(pk=body["id"])
    assert SECRET not in sub.secret_encrypted and sub.secret_encrypted
    # a member cannot subscribe to the tenant's events
    denied = as_user(api, w["alice"]).post(
        "/api/notifications/subscriptions/",
        {"name": "x", "scope": "tenant", "tenant": "team-a", "url": receiver.url},
        format="json",
    )
    assert denied.status_code == 400 and "team-a" in denied.content.decode()
    # another tenant's name reads exactly like one that does not exist
    ada = as_user(api, w["ada"])
    answers = [
        ada.post(
            "/api/notifications/subscriptions/",
            {"name": "x", "scope": "tenant", "tenant": name, "url": receiver.url},
            format="json",
        )
        for name in ("team-b", "no-such-team")
    ]
    assert [a.status_code for a in answers] == [400, 400]
    assert answers[0].json()["error"]["fields"]["tenant"] == [
        "Object with name=team-b does not exist."
    ]
    platform = ada.post(
        "/api/notifications/subscriptions/",
        {"name": "x", "scope": "platform", "url": receiver.url},
        format="json",
    )
    assert platform.status_code == 403
    bad = ada.post(
        "/api/notifications/subscriptions/",
        {
            "name": "x",
            "scope": "tenant",
            "tenant": "team-a",
            "url": "ftp://x",
            "events": ["capacity.alert"],
        },
        format="json",
    )
    assert bad.status_code == 400 and set(bad.json()["error"]["fields"]) <= {"url", "events"}
    # the delivery log: visible to ada, not to bert (404 for the subscription too)
    [delivery_id] = services.notify("job.failed", w["a"].pk, {"job_name": "j"})
    services.attempt_delivery(delivery_id)
    log = as_user(api, w["ada"]).get("/api/notifications/deliveries/").json()["results"]
    assert [(d["kind"], d["status"], d["attempts"], d["response_code"]) for d in log] == [
        ("job.failed", "delivered", 1, 200)
    ]
    bert = as_user(api, w["bert"])
    assert bert.get("/api/notifications/deliveries/").json()["results"] == []
    assert bert.get(f"/api/notifications/subscriptions/{sub.pk}/").status_code == 404
    test = as_user(api, w["ada"]).post(f"/api/notifications/subscriptions/{sub.pk}/test/")
    assert test.status_code == 202 and test.json()["kind"] == "test"


def test_notifications_page_adds_lists_and_logs(client, cohort_users, receiver):
    w = cohort_users
    client.force_login(w["ada"])
    response = client.post(
        "/notifications/",
        {
            "name": "team-hook",
            "scope": "tenant",
            "tenant": "team-a",
            "channel": "webhook",
            "url": receiver.url,
            "events": ["job.failed", "job.preempted"],
        },
    )
    assert response.status_code == 302
    sub = Subscription.objects.get(name="team-hook")
    assert (sub.tenant, sub.events) == (w["a"], ["job.failed", "job.preempted"])
    [delivery_id] = services.notify("job.failed", w["a"].pk, {"job_name": "j"})
    receiver.statuses = [503]
    services.attempt_delivery(delivery_id)
    page = client.get("/notifications/").content.decode()
    assert "team-hook" in page and "HTTP 503: receiver says no" in page and "Retrying" in page
    refused = client.post(
        "/notifications/",
        {
            "name": "b-hook",
            "scope": "tenant",
            "tenant": "team-b",
            "channel": "webhook",
            "url": receiver.url,
        },
    )
    assert refused.status_code == 200 and not Subscription.objects.filter(name="b-hook").exists()
    client.force_login(w["bert"])
    other = client.get("/notifications/").content.decode()
    assert "team-hook" not in other and "receiver says no" not in other
    assert client.post(f"/notifications/{sub.pk}/", {"action": "delete"}).status_code == 404
    assert Subscription.objects.filter(pk=sub.pk).exists()
