"""The lock order of scheduling.services.locking, checked deterministically with a second
connection: a writer holding its transaction open (a thread parked on an Event) must hold
exactly the rows it means to lock, and no row of another table through a join.

``SELECT … FOR UPDATE`` over a join (a ``filter`` through a relation or a ``select_related``)
locks the joined rows too unless it names ``of=("self",)``. The usage settlement taking the
*job* rows of released placements before the cycle's job round, and an eviction taking *node*
rows after the cycle's capacity round, deadlocked concurrent cycles
(tests/scheduling/test_concurrency.py); these tests fail on that code at once.
"""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import OperationalError, connection, transaction
from django.utils import timezone

from scheduling.choices import JobState, PlacementState
from scheduling.models import Cluster, Job, Node, Placement, Queue
from scheduling.services.cycle import run_admission_cycle
from scheduling.services.eviction import enforce_max_runtime
from scheduling.services.jobs import cancel_job
from scheduling.services.usage import settle_released_usage
from tests.builders import gpu_job

pytestmark = pytest.mark.django_db(transaction=True)

WAIT_S = 20


def _held_by_a_thread(write) -> tuple[list, threading.Event, threading.Thread]:
    """Run ``write()`` in a thread's transaction and keep that transaction open until the
    returned event is set; returns ``([write's result], event, thread)`` once it holds."""
    holding, done = threading.Event(), threading.Event()
    out: list = []

    def run() -> None:
        try:
            with transaction.atomic():
                out.append(write())
                holding.set()
                done.wait(WAIT_S)
        finally:
            holding.set()
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    assert holding.wait(WAIT_S)
    return out, done, thread


def _lockable(model, pks) -> bool:
    """Whether this connection can lock ``pks`` of ``model`` at once (``NOWAIT``)."""
    try:
        with transaction.atomic():
            list(
                model.objects.select_for_update(nowait=True)
                .filter(pk__in=sorted(pks))
                .values_list("pk", flat=True)
            )
    except OperationalError:
        return False
    return True


def test_usage_settlement_locks_placements_only_not_their_jobs_or_queues(cohort):
    group, (_, qa), _ = cohort
    job = gpu_job(qa, "j", count=1, memory_mib=8192, cores=30)
    assert run_admission_cycle(group.pk).admitted == [job.pk]
    cancel_job(job)  # its placement is released, still charged: the next settlement takes it
    placement = Placement.objects.get(job=job)
    assert placement.state == PlacementState.RELEASED and placement.charged
    out, done, thread = _held_by_a_thread(lambda: settle_released_usage(group.pk))
    try:
        assert out == [1]
        assert not _lockable(Placement, [placement.pk])  # the row it settles is held
        assert _lockable(Job, [job.pk])  # the job comes before placements: never taken here
        assert _lockable(Queue, [qa.pk])
    finally:
        done.set()
        thread.join(WAIT_S)
    placement.refresh_from_db()
    assert not placement.charged


def test_stopping_a_job_locks_its_placements_not_their_nodes_or_cluster(cohort):
    group, (_, qa), _ = cohort
    job = gpu_job(qa, "j", count=1, memory_mib=8192, cores=30)
    assert run_admission_cycle(group.pk).admitted == [job.pk]
    Job.objects.filter(pk=job.pk).update(
        max_runtime_s=1, admitted_at=timezone.now() - timedelta(hours=1)
    )
    placement = Placement.objects.select_related("node").get(job=job)
    out, done, thread = _held_by_a_thread(enforce_max_runtime)
    try:
        assert out == [{group.pk}]
        assert not _lockable(Job, [job.pk])
        assert not _lockable(Placement, [placement.pk])
        # nodes come after placements and are taken by the capacity round only: a cycle
        # holding them must never wait on this writer
        assert _lockable(Node, [placement.node_id])
        assert _lockable(Cluster, [placement.node.cluster_id])
    finally:
        done.set()
        thread.join(WAIT_S)
    job.refresh_from_db()
    placement.refresh_from_db()
    assert (job.state, placement.state) == (JobState.FAILED, PlacementState.TERMINATING)
