"""Races on real PostgreSQL (separate connections per thread, committed transactions):
cancelling a job twice at once, cancelling while an admission cycle commits, submitting
the same placement twice, and cancelling while a submission talks to the cluster."""

from __future__ import annotations

import threading
from unittest import mock

import pytest
from django.db import connections

from core.exceptions import Conflict
from scheduling import backends
from scheduling.choices import BOOKED_PLACEMENT_STATES
from scheduling.models import Job, JobEvent, Placement
from scheduling.services import cluster_submission, job_life
from scheduling.services import cycle as cycle_service
from scheduling.services.cycle import run_admission_cycle
from scheduling.services.jobs import cancel_job
from scheduling.services.usage import check_usage
from tests.adversarial.helpers import client_for
from tests.builders import gpu_job, make_cluster, make_group, make_tenant, make_user
from tests.waits import lock_waiters, until

pytestmark = pytest.mark.django_db(transaction=True)


def _in_thread(fn, *args):
    """Run ``fn`` in a thread with its own database connection; returns (thread, result)."""
    result: dict = {}

    def target():
        try:
            result["value"] = fn(*args)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            result["error"] = exc
        finally:
            connections.close_all()

    thread = threading.Thread(target=target)
    thread.start()
    return thread, result


def _small_world():
    make_cluster("c1", nodes=1, gpus=2)
    group = make_group("g1")
    tenant, queue = make_tenant("team-a", group, devices_milli=2000)
    user = make_user("alice", tenant, "member")
    return group, queue, user


def _pause_after(real, reached: threading.Event, go_on: threading.Event):
    """Wrap ``real``: once it returns, set ``reached`` and wait (10 s at most) for ``go_on``
    before handing its result back (so the caller's transaction stays open meanwhile)."""

    def wrapper(*args, **kwargs):
        out = real(*args, **kwargs)
        reached.set()
        go_on.wait(10)
        return out

    return wrapper


def _booked(job) -> int:
    return Placement.objects.filter(job=job, state__in=BOOKED_PLACEMENT_STATES).count()


def test_two_concurrent_cancels_of_a_running_job_cancel_it_once():
    group, queue, user = _small_world()
    job = gpu_job(queue, "twice", count=1)
    run_admission_cycle(group.pk)
    cluster_submission.submit_to_cluster(job.pk)
    job.refresh_from_db()
    assert job.state == "running"
    barrier = threading.Barrier(2)

    def cancel_via_api():
        client = client_for(user)
        barrier.wait()
        return client.post(f"/api/jobs/{job.pk}/cancel/").status_code

    runs = [_in_thread(cancel_via_api) for _ in range(2)]
    for thread, _ in runs:
        thread.join(30)
    codes = sorted(result.get("value", result.get("error")) for _, result in runs)
    assert codes == [200, 409]
    job.refresh_from_db()
    assert job.state == "cancelled" and _booked(job) == 0
    assert JobEvent.objects.filter(job=job, kind="cancelled").count() == 1


def test_cancel_while_the_cycle_commits_the_admission_leaves_nothing_booked():
    group, queue, _user = _small_world()
    job = gpu_job(queue, "racing", count=2)
    admitted_uncommitted, go_on = threading.Event(), threading.Event()
    # pauses with the job row updated and placements written, not committed
    slow_commit = _pause_after(cycle_service._commit_admissions, admitted_uncommitted, go_on)

    with mock.patch.object(cycle_service, "_commit_admissions", slow_commit):
        cycle_thread, cycle_result = _in_thread(run_admission_cycle, group.pk)
        assert admitted_uncommitted.wait(10)
        cancel_thread, cancel_result = _in_thread(cancel_job, Job.objects.get(pk=job.pk))
        until(lambda: lock_waiters() >= 1, "the cancel to wait for the cycle's row lock")
        assert cancel_thread.is_alive()
        go_on.set()
        cycle_thread.join(30)
        cancel_thread.join(30)
    assert "error" not in cycle_result and "error" not in cancel_result, (
        cycle_result,
        cancel_result,
    )
    assert cycle_result["value"].admitted == [job.pk]
    job.refresh_from_db()
    assert job.state == "cancelled"
    assert _booked(job) == 0
    assert list(Placement.objects.filter(job=job).values_list("state", flat=True)) == ["released"]
    run_admission_cycle(group.pk)  # settles the released usage
    assert check_usage(group.pk).drift == []


def test_cancel_before_the_cycle_commits_keeps_the_job_out_of_the_cluster():
    group, queue, _user = _small_world()
    job = gpu_job(queue, "racing", count=2)
    cancelled_uncommitted, go_on = threading.Event(), threading.Event()
    # pauses with the job row cancelled and locked, not committed (after the cancel's audit
    # entry, which the move of scheduling.services.job_life writes)
    slow_audit = _pause_after(job_life.audit_record, cancelled_uncommitted, go_on)

    with mock.patch.object(job_life, "audit_record", slow_audit):
        cancel_thread, cancel_result = _in_thread(cancel_job, Job.objects.get(pk=job.pk))
        assert cancelled_uncommitted.wait(10)
        cycle_thread, cycle_result = _in_thread(run_admission_cycle, group.pk)
        until(lambda: lock_waiters() >= 1, "the cycle to wait for the cancel's row lock")
        go_on.set()
        cancel_thread.join(30)
        cycle_thread.join(30)
    assert "error" not in cycle_result and "error" not in cancel_result, (
        cycle_result,
        cancel_result,
    )
    report = cycle_result["value"]
    assert report.admitted == []
    job.refresh_from_db()
    assert job.state == "cancelled"
    assert not Placement.objects.filter(job=job).exists()
    assert check_usage(group.pk).drift == []


class _RecordingBackend:
    """A cluster that records what it is asked to create and delete."""

    def __init__(self, on_submit=None):
        self.calls: list[tuple[str, int]] = []
        self.on_submit = on_submit
        self.lock = threading.Lock()

    def submit(self, placement):
        if self.on_submit is not None:
            self.on_submit(placement)
        with self.lock:
            self.calls.append(("submit", placement.pk))
        placement.backend_ref = f"rec-{placement.pk}"
        return "running"

    def delete(self, placement):
        with self.lock:
            self.calls.append(("delete", placement.pk))


def test_double_submission_of_one_placement_runs_it_once():
    group, queue, _user = _small_world()
    job = gpu_job(queue, "double", count=1)
    run_admission_cycle(group.pk)
    barrier = threading.Barrier(2)
    backend = _RecordingBackend(on_submit=lambda p: barrier.wait(10))
    with mock.patch.object(cluster_submission, "get_backend", return_value=backend):
        runs = [_in_thread(cluster_submission.submit_to_cluster, job.pk) for _ in range(2)]
        for thread, _ in runs:
            thread.join(30)
    assert [r.get("value") for _, r in runs] == ["running", "running"]
    placement = Placement.objects.get(job=job)
    assert placement.state == "running" and placement.backend_ref == f"rec-{placement.pk}"
    job.refresh_from_db()
    assert job.state == "running"
    assert JobEvent.objects.filter(job=job, kind="running").count() == 1
    # both created the (same, idempotent) pod; neither deleted it
    assert backend.calls == [("submit", placement.pk)] * 2


def test_cancel_during_submission_deletes_what_the_submission_created():
    """The submission read the placement as reserved, the job is cancelled (its pods deleted,
    none exist yet) while the backend creates the pod: the submission must delete what it
    just created, or the pod runs on devices the console counts as free."""
    group, queue, _user = _small_world()
    job = gpu_job(queue, "orphan", count=1)
    run_admission_cycle(group.pk)

    def cancel_meanwhile(placement):
        thread, result = _in_thread(cancel_job, Job.objects.get(pk=placement.job_id))
        thread.join(30)
        assert "error" not in result, result

    backend = _RecordingBackend(on_submit=cancel_meanwhile)
    # cancel deletes pods after its commit, through scheduling.backends.delete_pods_on_commit
    with (
        mock.patch.object(cluster_submission, "get_backend", return_value=backend),
        mock.patch.object(backends, "get_backend", return_value=backend),
    ):
        state = cluster_submission.submit_to_cluster(job.pk)
    placement = Placement.objects.get(job=job)
    assert state == "cancelled" and placement.state == "released"
    # cancel deleted (nothing yet), the pod was created, then deleted again
    assert backend.calls == [
        ("delete", placement.pk),
        ("submit", placement.pk),
        ("delete", placement.pk),
    ]


def test_cancelling_a_finished_job_is_a_conflict_and_changes_nothing():
    group, queue, _user = _small_world()
    job = gpu_job(queue, "done", count=1)
    cancel_job(job)
    with pytest.raises(Conflict):
        cancel_job(Job.objects.get(pk=job.pk))
    assert JobEvent.objects.filter(job=job, kind="cancelled").count() == 1
