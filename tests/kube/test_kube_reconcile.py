"""Reconcile against the HTTP fake API server: job state follows pod phases (list and watch),
410 relist, pods lost outside the console (deleted, evicted, node gone) per restart policy,
orphan and unknown console pods, lost submissions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from scheduling.choices import JobState, PlacementState
from scheduling.models import Cluster, Job, JobContainer, Placement
from scheduling.services.cluster_submission import submit_to_cluster
from scheduling.services.cycle import run_admission_cycle
from scheduling.services.inventory import sync_cluster_inventory
from scheduling.services.jobs import ContainerSpec, JobSpec, enqueue_job
from scheduling.services.kube_reconcile import reconcile_cluster, resync
from tests.builders import make_group, make_tenant
from tests.kube.kube_helpers import (
    evicted_status,
    failed_status,
    make_kube_cluster,
    nvidia_node,
    running_status,
    succeeded_status,
)

pytestmark = pytest.mark.django_db

A100 = "NVIDIA-A100-SXM4-80GB"


@pytest.fixture
def kube(fake, tmp_path, settings):
    settings.KUBE_RETRY_BASE_DELAY_S = 0.0
    cluster = make_kube_cluster(fake, tmp_path)
    fake.put(nvidia_node("gpu-1", ("GPU-aaaa", "GPU-bbbb")))
    fake.put(nvidia_node("gpu-2", ("GPU-cccc", "GPU-dddd")))
    sync_cluster_inventory(cluster.pk, now=datetime(2025, 6, 1, 12, 0, tzinfo=UTC))
    group = make_group("g1", models=(A100,))
    _tenant, queue = make_tenant("team-a", group, devices_milli=100_000)
    return cluster, group, queue


def _job(kube, *, name="train", pods=1, count=1, restart="Never", submit=True):
    cluster, group, queue = kube
    job = enqueue_job(
        queue,
        JobSpec(
            name=name,
            pod_count=pods,
            cpu_milli=1000,
            host_memory_mib=1024,
            containers=[
                ContainerSpec(
                    device_count=count, device_memory_mib=0, memory_percent=100, cores_percent=100
                )
            ],
        ),
        enqueue=False,
    )
    Job.objects.filter(pk=job.pk).update(restart_policy=restart)
    JobContainer.objects.filter(job=job).update(image="busybox:1.37")
    assert run_admission_cycle(group.pk).admitted == [job.pk]
    if submit:
        submit_to_cluster(job.pk)
    return job


def _pod_names(job):
    return [
        p.backend_ref.split("/")[1] for p in Placement.objects.filter(job=job).order_by("pod_index")
    ]


def _states(job):
    job.refresh_from_db()
    return job.state, list(
        Placement.objects.filter(job=job)
        .order_by("pod_index", "id")
        .values_list("state", flat=True)
    )


def test_job_state_follows_pod_phases_by_list_and_watch(fake, kube):
    cluster = kube[0]
    job = _job(kube)
    (name,) = _pod_names(job)
    fake.set_pod_status(
        "tenant-team-a",
        name,
        {
            "phase": "Pending",
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": "0/2 nodes are available: 2 Insufficient nvidia.com/gpu.",
                }
            ],
        },
    )
    report = reconcile_cluster(cluster.pk, watch_s=0)
    assert report.relisted and report.changed == []
    assert _states(job) == (JobState.ADMITTED, [PlacementState.SUBMITTED])
    assert (
        Placement.objects.get(job=job).message
        == "Unschedulable: 0/2 nodes are available: 2 Insufficient nvidia.com/gpu."
    )
    # now the watch (resync not due) sees the pod start, run and finish
    fake.set_pod_status(
        "tenant-team-a",
        name,
        {
            "phase": "Pending",
            "containerStatuses": [
                {"name": "main", "state": {"waiting": {"reason": "ContainerCreating"}}}
            ],
        },
    )
    fake.set_pod_status("tenant-team-a", name, running_status("gpu-1"))
    report = reconcile_cluster(cluster.pk, watch_s=1)
    assert not report.relisted and report.events == 2
    assert _states(job) == (JobState.RUNNING, [PlacementState.RUNNING])
    fake.set_pod_status("tenant-team-a", name, succeeded_status())
    report = reconcile_cluster(cluster.pk, watch_s=1)
    assert report.groups == {kube[1].pk}
    assert _states(job) == (JobState.SUCCEEDED, [PlacementState.SUCCEEDED])
    assert list(job.events.values_list("kind", flat=True)) == [
        "queued",
        "admitted",
        "running",
        "succeeded",
    ]


def test_gang_job_runs_when_every_pod_runs_and_fails_when_one_fails(
    fake, kube, django_capture_on_commit_callbacks
):
    cluster = kube[0]
    job = _job(kube, pods=2, count=2)
    first, second = _pod_names(job)
    fake.set_pod_status("tenant-team-a", first, running_status("gpu-1"))
    resync(cluster)
    assert _states(job) == (JobState.ADMITTED, [PlacementState.RUNNING, PlacementState.SUBMITTED])
    fake.set_pod_status("tenant-team-a", second, running_status("gpu-2"))
    resync(cluster)
    assert _states(job) == (JobState.RUNNING, [PlacementState.RUNNING, PlacementState.RUNNING])
    fake.set_pod_status("tenant-team-a", second, failed_status(137, "OOMKilled"))
    with django_capture_on_commit_callbacks(execute=True):  # pods are deleted after commit
        resync(cluster)
    job.refresh_from_db()
    assert _states(job) == (JobState.FAILED, [PlacementState.FAILED, PlacementState.FAILED])
    assert job.pending_reason == (
        f"pod tenant-team-a/{second} failed: OOMKilled: container main exited with code 137"
    )
    assert [p["metadata"]["name"] for p in fake.list("pods")] == [second]  # first deleted


@pytest.mark.parametrize(
    ("restart", "job_state"), [("Never", JobState.FAILED), ("OnFailure", JobState.QUEUED)]
)
def test_evicted_pod_fails_or_requeues_per_restart_policy(fake, kube, restart, job_state):
    cluster = kube[0]
    job = _job(kube, restart=restart)
    (name,) = _pod_names(job)
    fake.set_pod_status("tenant-team-a", name, running_status("gpu-1"))
    resync(cluster)
    fake.set_pod_status("tenant-team-a", name, evicted_status())
    report = resync(cluster)
    assert report.groups == {kube[1].pk}
    job.refresh_from_db()
    assert _states(job) == (job_state, [PlacementState.FAILED])
    assert job.requeue_count == (1 if restart == "OnFailure" else 0)
    reason = f"pod tenant-team-a/{name} lost: Evicted: The node was low on resource: memory."
    assert job.pending_reason == (f"requeued: {reason}" if restart == "OnFailure" else reason)
    if restart == "OnFailure":  # admitted again on the next cycle, a new placement and pod
        assert run_admission_cycle(kube[1].pk).admitted == [job.pk]
        submit_to_cluster(job.pk)
        assert _states(job)[1] == [PlacementState.FAILED, PlacementState.SUBMITTED]
        assert job.pod_count == 1 and len(fake.list("pods")) == 2


def test_pod_deleted_outside_the_console_releases_its_devices(fake, kube):
    cluster = kube[0]
    job = _job(kube, restart="Never")
    (name,) = _pod_names(job)
    fake.set_pod_status("tenant-team-a", name, running_status("gpu-1"))
    reconcile_cluster(cluster.pk, watch_s=0)
    from kubernetes import client as k8s

    from tests.kube.conftest import api_client_for

    api = api_client_for(fake)
    k8s.CoreV1Api(api).delete_namespaced_pod(name, "tenant-team-a")  # kubectl delete pod
    api.close()
    report = reconcile_cluster(cluster.pk, watch_s=1)
    assert report.lost == [Placement.objects.get(job=job).pk]
    job.refresh_from_db()
    assert _states(job) == (JobState.FAILED, [PlacementState.FAILED])
    assert job.pending_reason == f"pod tenant-team-a/{name} was deleted outside the console"


def test_watch_from_an_expired_resource_version_relists(fake, kube):
    cluster = kube[0]
    job = _job(kube)
    (name,) = _pod_names(job)
    reconcile_cluster(cluster.pk, watch_s=0)
    fake.set_pod_status("tenant-team-a", name, running_status("gpu-1"))
    fake.compact()  # the resume point is now older than the server's history
    report = reconcile_cluster(cluster.pk, watch_s=1)
    assert report.relisted
    assert _states(job) == (JobState.RUNNING, [PlacementState.RUNNING])
    cluster.refresh_from_db()
    assert int(cluster.watch_resource_version) == fake.resource_version


def test_missing_pods_found_by_resync_and_deleted_pods_while_not_watching(fake, kube):
    cluster = kube[0]
    job = _job(kube, restart="OnFailure")
    (name,) = _pod_names(job)
    with fake._lock:  # gone while no one watched (e.g. the node's pods were force-deleted)
        fake._store["pods"].pop(("tenant-team-a", name))
    report = resync(cluster)
    assert report.lost == [Placement.objects.get(job=job).pk]
    assert _states(job) == (JobState.QUEUED, [PlacementState.FAILED])


def test_orphan_pod_of_a_released_placement_is_deleted_unknown_pod_only_reported(
    fake, kube, django_capture_on_commit_callbacks
):
    cluster = kube[0]
    job = _job(kube)
    (name,) = _pod_names(job)
    placement = Placement.objects.get(job=job)
    # the reservation was given back while the pod survived (e.g. a delete that failed)
    Placement.objects.filter(pk=placement.pk).update(state=PlacementState.RELEASED)
    Job.objects.filter(pk=job.pk).update(state=JobState.CANCELLED)
    stranger = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "p-99999-1-0",
            "namespace": "tenant-team-a",
            "labels": {
                "app.kubernetes.io/managed-by": "llmops-console",
                "console.llmops.io/placement": "99999",
            },
        },
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }
    fake.put(stranger)
    with django_capture_on_commit_callbacks(execute=True):  # pods are deleted after commit
        report = resync(cluster)
    assert report.orphans_deleted == [f"tenant-team-a/{name}"]
    assert report.unknown == ["tenant-team-a/p-99999-1-0"]
    assert [p["metadata"]["name"] for p in fake.list("pods")] == ["p-99999-1-0"]
    cluster.refresh_from_db()
    assert cluster.unknown_pods == ["tenant-team-a/p-99999-1-0"]
    # never adopted, never booked: no placement appeared for it
    assert not Placement.objects.filter(pk=99999).exists()


@pytest.mark.parametrize(
    ("restart", "job_state"), [("Never", JobState.FAILED), ("OnFailure", JobState.QUEUED)]
)
def test_vanished_node_removes_devices_and_fails_or_requeues_jobs(
    fake, kube, restart, job_state, django_capture_on_commit_callbacks
):
    cluster = kube[0]
    job = _job(kube, restart=restart)
    placement = Placement.objects.get(job=job)
    node = placement.node.name
    fake.set_pod_status("tenant-team-a", _pod_names(job)[0], running_status(node))
    resync(cluster)
    with fake._lock:
        fake._store["nodes"].pop(("", node))
    with django_capture_on_commit_callbacks(execute=True):  # pods are deleted after commit
        report = sync_cluster_inventory(cluster.pk)
    assert report.nodes_removed == [node]
    assert report.lost_groups == {kube[1].pk}
    job.refresh_from_db()
    assert _states(job) == (job_state, [PlacementState.FAILED])
    reason = f"node {node} vanished from cluster k1"
    assert job.pending_reason == (f"requeued: {reason}" if restart == "OnFailure" else reason)
    assert set(placement.node.devices.values_list("removed_at", flat=True)) != {None}
    assert fake.list("pods") == []  # nothing left behind for the lost pod's job


def test_lost_submission_is_finished_by_the_reconciler(fake, kube, settings):
    cluster = kube[0]
    settings.KUBE_SUBMIT_GRACE_S = 60
    job = _job(kube, submit=False)
    placement = Placement.objects.get(job=job)
    report = resync(cluster)
    assert report.resubmitted == []  # within the grace period the submit task owns it
    later = timezone.now() + timedelta(seconds=61)
    report = resync(cluster, now=later)
    assert report.resubmitted == [placement.pk]
    assert len(fake.list("pods")) == 1
    assert _states(job) == (JobState.ADMITTED, [PlacementState.SUBMITTED])
    assert list(job.events.values_list("kind", flat=True))[-1] == "resubmitted"


def test_reserved_placement_whose_pod_exists_is_adopted(fake, kube):
    cluster = kube[0]
    job = _job(kube)
    placement = Placement.objects.get(job=job)
    Placement.objects.filter(pk=placement.pk).update(state=PlacementState.RESERVED)
    report = resync(cluster)
    assert report.adopted == [placement.pk]
    assert len(fake.list("pods")) == 1
    assert _states(job) == (JobState.ADMITTED, [PlacementState.SUBMITTED])


def test_reconcile_is_single_flight_and_refuses_simulated(fake, kube):
    from django.db import connection

    from scheduling.services.kube_reconcile import KUBE_RECONCILE_LOCK

    cluster = kube[0]
    with pytest.raises(ValueError):
        reconcile_cluster(Cluster.objects.create(name="sim").pk)
    import psycopg

    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    with psycopg.connect(**params) as other:
        other.execute("SELECT pg_advisory_lock(%s, %s)", [KUBE_RECONCILE_LOCK, cluster.pk])
        assert reconcile_cluster(cluster.pk, watch_s=0).locked_out is True
        # Unlock explicitly: closing the connection releases the lock only once the server
        # backend has exited, which can lag behind the next query under load.
        other.execute("SELECT pg_advisory_unlock(%s, %s)", [KUBE_RECONCILE_LOCK, cluster.pk])
    assert reconcile_cluster(cluster.pk, watch_s=0).locked_out is False


def test_preempted_pod_keeps_its_devices_until_the_reconcile_sees_it_gone(
    fake, kube, django_capture_on_commit_callbacks
):
    from tenants.models import Quota

    cluster, group, queue = kube
    Quota.objects.filter(tenant=queue.tenant).update(nominal=2000, borrowing_limit=0)
    low = [_job(kube, name=f"low{i}") for i in range(2)]
    for job in low:
        (name,) = _pod_names(job)
        fake.set_pod_status("tenant-team-a", name, running_status("gpu-1"))
    reconcile_cluster(cluster.pk, watch_s=0)
    Job.objects.filter(pk=low[1].pk).update(priority=1)
    Job.objects.filter(pk=low[0].pk).update(priority=5)
    high = enqueue_job(
        queue,
        JobSpec(
            name="high",
            priority=10,
            cpu_milli=1000,
            host_memory_mib=1024,
            containers=[ContainerSpec(device_count=1, memory_percent=100, cores_percent=100)],
        ),
        enqueue=False,
    )
    JobContainer.objects.filter(job=high).update(image="busybox:1.37")
    with django_capture_on_commit_callbacks(execute=True):  # pods are deleted after commit
        report = run_admission_cycle(group.pk)
    assert (report.admitted, report.preempted) == ([], [low[1].pk])
    # the pod was deleted; until the reconcile sees it gone, its devices stay booked
    assert _states(low[1]) == (JobState.QUEUED, [PlacementState.TERMINATING])
    assert fake.get("pods", _pod_names(low[1])[0], "tenant-team-a") is None
    assert run_admission_cycle(group.pk).admitted == []
    report = reconcile_cluster(cluster.pk, watch_s=1)  # the watch brings the DELETED event
    assert report.groups == {group.pk}
    assert _states(low[1]) == (JobState.QUEUED, [PlacementState.RELEASED])
    assert run_admission_cycle(group.pk).admitted == [high.pk]
