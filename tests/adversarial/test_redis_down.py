"""Redis or the broker down (issue 15): API writes and the HTML submit keep working, the
write throttle degrades to a per-process count, a job is committed exactly once, and the work
whose enqueue was lost is picked up by the beat ticks (admission tick, sweeper) once the
broker is back.

"Down" is real: the cache and the Celery broker are pointed at a Unix socket that does not
exist, so every connection attempt fails as it does when Redis is stopped."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from scheduling.models import Job, JobEvent, Placement
from scheduling.services.cycle import run_admission_cycle
from tests.adversarial.helpers import client_for
from tests.builders import gpu_job, submit_form

DEAD_SOCKET = "/nonexistent/redis.sock"


@pytest.fixture
def cache_down(settings):
    settings.CACHES = {
        **settings.CACHES,
        "default": {**settings.CACHES["default"], "LOCATION": f"unix://{DEAD_SOCKET}"},
    }


@pytest.fixture
def broker_down():
    """The Celery app publishes to a dead socket (its connection pools are rebuilt)."""
    from console.celery import app

    def reset():
        app._pool = None
        app.amqp._producer_pool = None

    old = app.conf.broker_url
    app.conf.broker_url = f"redis+socket://{DEAD_SOCKET}"
    reset()
    yield
    app.conf.broker_url = old
    reset()


@pytest.fixture
def eager_celery():
    from console.celery import app

    old = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = old


def _submit(client, queue):
    return client.post(
        "/api/jobs/",
        {
            "queue": queue.pk,
            "name": "api-job",
            "containers": [{"device_count": 1, "device_memory_mib": 1024}],
        },
        format="json",
    )


@pytest.mark.django_db
def test_api_writes_work_and_are_still_throttled_per_process_when_the_cache_is_down(
    world, cache_down, monkeypatch, caplog
):
    from django.core.cache import caches

    from core.api.throttling import WriteRateThrottle

    monkeypatch.setattr(WriteRateThrottle, "rate", "3/min", raising=False)  # read at import

    caches["local"].clear()
    alice = client_for(world["alice"])
    with caplog.at_level(logging.WARNING):
        answers = [_submit(alice, world["queue_a"]).status_code for _ in range(4)]
    assert answers == [201, 201, 201, 429]
    assert Job.objects.filter(name="api-job").count() == 3
    assert "shared cache unavailable" in caplog.text
    # reads are never throttled
    assert alice.get("/api/jobs/").status_code == 200


@pytest.mark.django_db
def test_an_admission_cycle_and_the_tick_run_while_the_cache_is_down(world, cache_down):
    from scheduling.tasks import admission_tick_task

    job = gpu_job(world["queue_b"], "b-small", count=1, memory_mib=1024)
    report = run_admission_cycle(world["group"].pk)
    assert job.pk in report.admitted
    gpu_job(world["queue_b"], "b-huge", count=8)
    run_admission_cycle(world["group"].pk)  # leaves it pending: marks the group (best effort)
    assert admission_tick_task() == 1  # the gate fails open


@pytest.mark.django_db(transaction=True)
def test_html_submit_redirects_once_when_the_broker_is_down(world, broker_down, caplog):
    client = Client(raise_request_exception=False)
    client.force_login(world["alice"])
    with caplog.at_level(logging.WARNING):
        response = client.post("/jobs/new/", submit_form(world["queue_a"], priority=0))
    job = Job.objects.get(name="from-ui")
    assert response.status_code == 302 and response["Location"] == f"/jobs/{job.pk}/"
    assert job.state == "queued"
    assert "could not enqueue scheduling.tasks.admission_cycle_task" in caplog.text
    assert Job.objects.filter(name="from-ui").count() == 1


@pytest.mark.django_db(transaction=True)
def test_api_submit_and_cancel_answer_normally_when_the_broker_is_down(world, broker_down):
    alice = client_for(world["alice"])
    created = _submit(alice, world["queue_a"])
    assert created.status_code == 201, created.content[:300]
    cancelled = alice.post(f"/api/jobs/{world['a_train'].pk}/cancel/")
    assert cancelled.status_code == 200 and cancelled.json()["state"] == "cancelled"


@pytest.mark.django_db(transaction=True)
def test_the_tick_admits_a_job_whose_enqueue_was_lost(world, broker_down, eager_celery):
    from scheduling.tasks import admission_tick_task

    client = Client(raise_request_exception=False)
    client.force_login(world["bob"])
    # eager: a publish would run the cycle at once; the dead broker is never reached
    response = client.post("/jobs/new/", submit_form(world["queue_b"], priority=0))
    assert response.status_code == 302
    job = Job.objects.get(name="from-ui")
    assert admission_tick_task() == 1
    job.refresh_from_db()
    assert job.state == "running"
    assert Placement.objects.filter(job=job).count() == 1


@pytest.mark.django_db
def test_the_sweeper_submits_reservations_whose_task_was_lost_exactly_once(
    world, eager_celery, settings
):
    from scheduling.services.sweeper import overdue_reservations
    from scheduling.tasks import sweep_task

    settings.SUBMIT_SWEEP_GRACE_S = 60.0
    settings.ADMISSION_TERMINATION_GRACE_S = 0.0
    job = gpu_job(world["queue_b"], "b-lost", count=1, memory_mib=1024)
    # the cycle commits the reservation; its after-commit submission never runs (test
    # transaction), as when the broker was down at that moment
    run_admission_cycle(world["group"].pk)
    job.refresh_from_db()
    assert job.state == "admitted"
    placement = Placement.objects.get(job=job)
    assert placement.state == "reserved"
    assert overdue_reservations() == []  # within the grace: the task may still come
    Placement.objects.filter(pk=placement.pk).update(created=timezone.now() - timedelta(seconds=61))
    assert overdue_reservations() == [job.pk]
    assert sweep_task() == {"resubmitted": 1}
    job.refresh_from_db()
    placement.refresh_from_db()
    assert (job.state, placement.state) == ("running", "running")
    # idempotent: a second sweep and a late duplicate of the lost task change nothing
    from scheduling.services.cluster_submission import submit_to_cluster

    events = JobEvent.objects.filter(job=job).count()
    assert sweep_task() == {"resubmitted": 0}
    assert submit_to_cluster(job.pk) == "running"
    assert Placement.objects.filter(job=job).count() == 1
    assert JobEvent.objects.filter(job=job).count() == events
