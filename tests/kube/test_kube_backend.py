"""The kubernetes backend through the official client against the HTTP fake API server:
submission (hami / dra / whole), idempotent retries, error classification, cancel."""

from __future__ import annotations

import pytest
from django.db import transaction

from scheduling.backends import SubmissionError, get_backend
from scheduling.backends.kubernetes import (
    KubernetesBackend,
    check_connection,
    connection_source,
    forget_gateways,
)
from scheduling.choices import JobState, PlacementState
from scheduling.kube.errors import Permanent
from scheduling.models import Cluster, Job, JobContainer, Placement, PlacementDevice
from scheduling.services.cluster_submission import submit_to_cluster
from scheduling.services.cycle import run_admission_cycle
from scheduling.services.inventory import sync_cluster_inventory
from scheduling.services.jobs import ContainerSpec, JobSpec, cancel_job, enqueue_job
from tests.builders import make_group, make_tenant
from tests.kube.fake_apiserver import FakeApiServer
from tests.kube.kube_helpers import make_kube_cluster, nvidia_node

pytestmark = pytest.mark.django_db

A100 = "NVIDIA-A100-SXM4-80GB"


@pytest.fixture(autouse=True)
def _fast_retries(settings):
    settings.KUBE_RETRY_BASE_DELAY_S = 0.0
    settings.KUBE_RETRY_MAX_ATTEMPTS = 4


def _setup(fake, tmp_path, mode="hami"):
    cluster = make_kube_cluster(fake, tmp_path, mode=mode)
    fake.put(nvidia_node("gpu-1"))
    sync_cluster_inventory(cluster.pk)
    group = make_group("g1", models=(A100,))
    _tenant, queue = make_tenant("team-a", group, devices_milli=100_000)
    return cluster, group, queue


def _job(
    queue,
    group,
    *,
    name="train",
    container="main",
    image="nvcr.io/nvidia/pytorch:25.01",
    memory_mib=20000,
    cores=30,
    count=1,
    pods=1,
):
    job = enqueue_job(
        queue,
        JobSpec(
            name=name,
            pod_count=pods,
            cpu_milli=2000,
            host_memory_mib=4096,
            containers=[
                ContainerSpec(
                    name=container,
                    device_count=count,
                    device_memory_mib=memory_mib,
                    cores_percent=cores,
                )
            ],
        ),
        enqueue=False,
    )
    JobContainer.objects.filter(job=job).update(
        image=image, command=["python", "train.py"], env={"EPOCHS": "3"}
    )
    report = run_admission_cycle(group.pk)
    assert report.admitted == [job.pk], report.pending
    return job


def _pod_posts(fake):
    return [p for m, p in fake.requests if m == "POST" and p.endswith("/pods")]


def test_hami_submit_creates_one_pinned_pod(fake, tmp_path):
    _cluster, group, queue = _setup(fake, tmp_path)
    job = _job(queue, group)
    placement = Placement.objects.get(job=job)
    (uuid,) = PlacementDevice.objects.filter(placement=placement).values_list(
        "device__uuid", flat=True
    )
    assert submit_to_cluster(job.pk) == JobState.ADMITTED
    placement.refresh_from_db()
    name = f"p-{placement.pk}-{job.pk}-0"
    assert (placement.state, placement.backend_ref) == (
        PlacementState.SUBMITTED,
        f"tenant-team-a/{name}",
    )
    pod = fake.get("pods", name, "tenant-team-a")
    meta, spec = pod["metadata"], pod["spec"]
    assert meta["labels"]["console.llmops.io/placement"] == str(placement.pk)
    assert meta["labels"]["app.kubernetes.io/managed-by"] == "llmops-console"
    assert meta["annotations"]["nvidia.com/use-gpuuuid"] == uuid
    assert spec["schedulerName"] == "hami-scheduler"
    assert spec["restartPolicy"] == "Never"
    assert spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ][0]["matchFields"][0]["values"] == ["gpu-1"]
    (c,) = spec["containers"]
    assert (c["name"], c["image"], c["command"]) == (
        "main",
        "nvcr.io/nvidia/pytorch:25.01",
        ["python", "train.py"],
    )
    assert c["env"] == [{"name": "EPOCHS", "value": "3"}]
    assert c["resources"]["limits"] == {
        "cpu": "2000m",
        "memory": "4096Mi",
        "nvidia.com/gpu": "1",
        "nvidia.com/gpumem": "20000",
        "nvidia.com/gpucores": "30",
    }


def test_retried_submit_meets_409_and_counts_as_success(fake, tmp_path):
    _cluster, group, queue = _setup(fake, tmp_path)
    job = _job(queue, group)
    placement = Placement.objects.select_related("node__cluster", "job__tenant").get(job=job)
    backend = get_backend("kubernetes")
    assert isinstance(backend, KubernetesBackend)
    assert backend.submit(placement) == "submitted"
    # the worker died before recording it; the task runs again
    assert submit_to_cluster(job.pk) == JobState.ADMITTED
    assert len(_pod_posts(fake)) == 2  # second POST answered 409 AlreadyExists
    assert len(fake.list("pods")) == 1
    assert Placement.objects.get(pk=placement.pk).state == PlacementState.SUBMITTED


def test_name_taken_by_another_placement_is_permanent(fake, tmp_path):
    _cluster, group, queue = _setup(fake, tmp_path)
    job = _job(queue, group)
    placement = Placement.objects.get(job=job)
    name = f"p-{placement.pk}-{job.pk}-0"
    fake.put(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": "tenant-team-a",
                "labels": {"console.llmops.io/placement": "999"},
            },
            "spec": {"containers": [{"name": "x", "image": "busybox"}]},
        }
    )
    assert submit_to_cluster(job.pk) == JobState.FAILED
    job.refresh_from_db()
    assert job.pending_reason == (
        f"submission refused: HTTP 409 AlreadyExists: Pod '{name}' already exists and belongs "
        "to placement '999', not "
        f"'{placement.pk}'"
    )


def test_invalid_object_422_fails_the_job_with_the_server_message_and_releases(fake, tmp_path):
    _cluster, group, queue = _setup(fake, tmp_path)
    job = _job(queue, group, container="Main_1")
    placement = Placement.objects.get(job=job)
    assert submit_to_cluster(job.pk) == JobState.FAILED
    job.refresh_from_db()
    placement.refresh_from_db()
    name = f"p-{placement.pk}-{job.pk}-0"
    assert job.pending_reason.startswith(
        f'submission refused: HTTP 422 Invalid: Pod "{name}" is invalid: '
        "spec.containers[0].name: Invalid value: 'Main_1'"
    )
    assert placement.state == PlacementState.RELEASED
    assert fake.list("pods") == []
    assert list(job.events.values_list("kind", flat=True)) == ["queued", "admitted", "failed"]


@pytest.mark.parametrize("status", [429, 500, 503])
def test_transient_errors_are_retried_with_backoff(fake, tmp_path, status):
    _cluster, group, queue = _setup(fake, tmp_path)
    job = _job(queue, group)
    fake.inject_faults(
        status,
        count=2,
        retry_after=0 if status == 429 else None,
        method="POST",
        path_contains="/pods",
    )
    assert submit_to_cluster(job.pk) == JobState.ADMITTED
    assert len(_pod_posts(fake)) == 3
    assert len(fake.list("pods")) == 1
    assert Placement.objects.get(job=job).state == PlacementState.SUBMITTED


def test_still_failing_after_retries_is_retryable_and_keeps_the_reservation(fake, tmp_path):
    _cluster, group, queue = _setup(fake, tmp_path)
    job = _job(queue, group)
    fake.inject_faults(500, count=4, method="POST", path_contains="/pods")
    with pytest.raises(SubmissionError) as err:
        submit_to_cluster(job.pk)
    assert err.value.retryable is True
    assert str(err.value).startswith("HTTP 500 ")
    assert len(_pod_posts(fake)) == 4  # KUBE_RETRY_MAX_ATTEMPTS
    assert Placement.objects.get(job=job).state == PlacementState.RESERVED
    assert Job.objects.get(pk=job.pk).state == JobState.ADMITTED
    # the task retries later and succeeds
    assert submit_to_cluster(job.pk) == JobState.ADMITTED
    assert len(fake.list("pods")) == 1


def test_dra_submit_creates_claim_before_pod_with_owner_reference(
    fake, tmp_path, django_capture_on_commit_callbacks
):
    cluster, group, queue = _setup(fake, tmp_path, mode="dra")
    job = _job(queue, group)
    placement = Placement.objects.get(job=job)
    (uuid,) = PlacementDevice.objects.filter(placement=placement).values_list(
        "device__uuid", flat=True
    )
    assert submit_to_cluster(job.pk) == JobState.ADMITTED
    name = f"p-{placement.pk}-{job.pk}-0"
    posts = [p.rsplit("/", 1)[-1] for m, p in fake.requests if m == "POST"]
    assert posts == ["namespaces", "resourceclaims", "pods"]  # tenant namespace first
    pod = fake.get("pods", name, "tenant-team-a")
    claim = fake.get("resourceclaims", f"{name}-dev", "tenant-team-a")
    assert claim["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Pod", "name": name, "uid": pod["metadata"]["uid"]}
    ]
    (req,) = claim["spec"]["devices"]["requests"]
    assert req["exactly"]["deviceClassName"] == "hami-core-gpu.project-hami.io"
    assert req["exactly"]["capacity"] == {"requests": {"memory": "20000Mi", "cores": "30"}}
    assert req["exactly"]["selectors"][0]["cel"]["expression"] == (
        'device.driver == "hami-core-gpu.project-hami.io" && '
        f'device.attributes["hami-core-gpu.project-hami.io"].uuid == "{uuid}"'
    )
    assert pod["spec"]["resourceClaims"] == [
        {"name": "devices", "resourceClaimName": f"{name}-dev"}
    ]
    # cancelling deletes the pod (after commit); the claim goes with it (owner reference)
    with django_capture_on_commit_callbacks(execute=True):
        cancel_job(Job.objects.get(pk=job.pk))
    assert fake.list("pods") == [] and fake.list("resourceclaims") == []
    assert cluster.submission_mode == "dra"


def test_dra_on_a_cluster_without_dra_api_is_refused(tmp_path):
    with FakeApiServer(namespaces=("tenant-team-a",), resource_versions=()) as server:
        try:
            _cluster, group, queue = _setup(server, tmp_path, mode="dra")
            job = _job(queue, group)
            assert submit_to_cluster(job.pk) == JobState.FAILED
            assert Job.objects.get(pk=job.pk).pending_reason == (
                "submission refused: NoDRA: cluster 'k1' serves no resource.k8s.io version; "
                "use submission mode hami or whole"
            )
        finally:
            forget_gateways()


def test_whole_mode_refuses_a_shared_device_and_accepts_a_whole_one(fake, tmp_path):
    _cluster, group, queue = _setup(fake, tmp_path, mode="whole")
    shared = _job(queue, group, name="shared")
    assert submit_to_cluster(shared.pk) == JobState.FAILED
    assert "whole mode needs whole devices" in Job.objects.get(pk=shared.pk).pending_reason
    whole = _job(queue, group, name="whole", memory_mib=0, cores=100, count=2)
    assert submit_to_cluster(whole.pk) == JobState.ADMITTED
    (pod,) = fake.list("pods")
    assert pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "2"
    assert "schedulerName" not in pod["spec"] or pod["spec"]["schedulerName"] == "default-scheduler"


def test_connection_sources_and_test_connection(fake, tmp_path, monkeypatch):
    cluster = make_kube_cluster(fake, tmp_path)
    assert connection_source(cluster) == {"kubeconfig": cluster.kubeconfig_path, "context": "fake"}
    info = check_connection(cluster)
    assert (info.git_version, info.resource_versions, info.dra_version) == (
        "v1.34.0",
        ("v1", "v1beta2", "v1beta1"),
        "v1",
    )
    cluster.refresh_from_db()
    assert (cluster.server_version, cluster.resource_versions) == (
        "v1.34.0",
        ["v1", "v1beta2", "v1beta1"],
    )
    env_cluster = Cluster.objects.create(name="prod-a", backend="kubernetes")
    with pytest.raises(Permanent) as err:
        connection_source(env_cluster, environ={})
    assert err.value.message == (
        "cluster 'prod-a' has no connection: set 'in cluster', a kubeconfig path, or the "
        "environment variable CLUSTER_PROD_A_KUBECONFIG"
    )
    monkeypatch.setenv("CLUSTER_PROD_A_KUBECONFIG", cluster.kubeconfig_path)
    assert check_connection(env_cluster).git_version == "v1.34.0"
    missing = Cluster.objects.create(
        name="gone", backend="kubernetes", kubeconfig_path=str(tmp_path / "nope")
    )
    with pytest.raises(Permanent) as err:
        check_connection(missing)
    assert "does not exist" in err.value.message
    assert Cluster.objects.create(
        name="ic", backend="kubernetes", in_cluster=True
    ) and connection_source(Cluster.objects.get(name="ic")) == {"in_cluster": True}


def test_cancel_deletes_the_pod_only_after_commit(
    fake, tmp_path, django_capture_on_commit_callbacks
):
    """No Kubernetes call inside the transaction: a rolled-back cancel leaves the pod, a
    committed one deletes it once the rows are written."""
    _cluster, group, queue = _setup(fake, tmp_path)
    job = _job(queue, group)
    assert submit_to_cluster(job.pk) == JobState.ADMITTED
    (pod,) = fake.list("pods")

    class Rollback(Exception):
        pass

    def cancel_then_roll_back():
        with transaction.atomic():
            cancel_job(Job.objects.get(pk=job.pk))
            assert [m for m, _p in fake.requests].count("DELETE") == 0  # not inside the block
            raise Rollback

    with django_capture_on_commit_callbacks(execute=True) as callbacks, pytest.raises(Rollback):
        cancel_then_roll_back()
    assert callbacks == [] and fake.list("pods") == [pod]
    assert Job.objects.get(pk=job.pk).state == JobState.ADMITTED

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        cancel_job(Job.objects.get(pk=job.pk))
        assert fake.list("pods") == [pod]  # the transaction has not committed yet
    assert callbacks and fake.list("pods") == []
    assert Placement.objects.get(job=job).state == PlacementState.RELEASED
