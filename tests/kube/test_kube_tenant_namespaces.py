"""Tenant namespaces in a Kubernetes cluster, through the official client against the HTTP
fake API server: each tenant's pods and claims go to its own namespace, which the console
creates and labels (validated with kubernetes-validate), adopts when an operator made it
first, refuses when it is another tenant's, and re-creates when it vanished."""

from __future__ import annotations

import kubernetes_validate
import pytest

from scheduling.choices import JobState, PlacementState
from scheduling.models import JobContainer, Placement
from scheduling.services.cluster_submission import submit_to_cluster
from scheduling.services.cycle import run_admission_cycle
from scheduling.services.inventory import sync_cluster_inventory
from scheduling.services.jobs import ContainerSpec, JobSpec, enqueue_job
from tenants.models import TenantNamespace
from tenants.selectors import tenant_for_namespace, tenant_namespace
from tests.builders import make_group, make_tenant
from tests.kube.kube_helpers import make_kube_cluster, nvidia_node

pytestmark = pytest.mark.django_db

A100 = "NVIDIA-A100-SXM4-80GB"
K8S = "1.34.0"


@pytest.fixture(autouse=True)
def _fast_retries(settings):
    settings.KUBE_RETRY_BASE_DELAY_S = 0.0
    settings.KUBE_RETRY_MAX_ATTEMPTS = 3


@pytest.fixture
def world(fake, tmp_path):
    cluster = make_kube_cluster(fake, tmp_path, mode="dra")
    fake.put(nvidia_node("gpu-1"))
    sync_cluster_inventory(cluster.pk)
    group = make_group("g1", models=(A100,))
    a = make_tenant("team-a", group, devices_milli=100_000)
    b = make_tenant("team-b", group, devices_milli=100_000)
    return cluster, group, a, b


def _admitted(queue, group, name="train"):
    job = enqueue_job(
        queue,
        JobSpec(
            name=name,
            cpu_milli=1000,
            host_memory_mib=2048,
            containers=[ContainerSpec(device_count=1, device_memory_mib=10000, cores_percent=20)],
        ),
        enqueue=False,
    )
    JobContainer.objects.filter(job=job).update(image="nvcr.io/nvidia/pytorch:25.01")
    assert run_admission_cycle(group.pk).admitted == [job.pk]
    return job


def test_each_tenant_gets_its_own_labelled_namespace(fake, world):
    cluster, group, (team_a, queue_a), (team_b, queue_b) = world
    job_a, job_b = _admitted(queue_a, group, "a"), _admitted(queue_b, group, "b")
    assert submit_to_cluster(job_a.pk) == JobState.ADMITTED
    assert submit_to_cluster(job_b.pk) == JobState.ADMITTED
    for tenant, job in ((team_a, job_a), (team_b, job_b)):
        ns = tenant_namespace(tenant, cluster)
        assert ns == f"tenant-{tenant.name}"
        namespace = fake.get("namespaces", ns)
        assert namespace["metadata"]["labels"] == {
            "app.kubernetes.io/managed-by": "llmops-console",
            "console.llmops.io/tenant": tenant.name,
            # issue 29: Pod Security Admission enforces TENANT_POD_SECURITY_LEVEL there
            "pod-security.kubernetes.io/enforce": "baseline",
        }
        body = {k: v for k, v in namespace.items() if k != "status"}
        body["metadata"] = {k: namespace["metadata"][k] for k in ("name", "labels", "annotations")}
        kubernetes_validate.validate(body, K8S, strict=True)
        placement = Placement.objects.get(job=job)
        pod_ns, pod_name = placement.backend_ref.split("/")
        assert pod_ns == ns
        assert fake.get("pods", pod_name, ns) is not None
        assert fake.get("resourceclaims", f"{pod_name}-dev", ns) is not None
        assert TenantNamespace.objects.get(tenant=tenant, cluster_id=cluster.pk).name == ns
        assert tenant_for_namespace(cluster, ns) == tenant
    # one POST per namespace: the second submission of a tenant finds it in the cache
    job_a2 = _admitted(queue_a, group, "a2")
    submit_to_cluster(job_a2.pk)
    assert [p for m, p in fake.requests if m == "POST" and p == "/api/v1/namespaces"] == [
        "/api/v1/namespaces"
    ] * 2


def test_operator_made_namespace_is_adopted_and_labelled(fake, world):
    _cluster, group, (_team_a, queue_a), _b = world
    fake.put(
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "tenant-team-a", "labels": {"owner": "platform"}},
        }
    )
    job = _admitted(queue_a, group)
    assert submit_to_cluster(job.pk) == JobState.ADMITTED
    labels = fake.get("namespaces", "tenant-team-a")["metadata"]["labels"]
    assert labels == {
        "owner": "platform",
        "app.kubernetes.io/managed-by": "llmops-console",
        "console.llmops.io/tenant": "team-a",
        "pod-security.kubernetes.io/enforce": "baseline",
    }
    assert ("PATCH", "/api/v1/namespaces/tenant-team-a") in fake.requests


@pytest.mark.parametrize(
    ("setting", "operators", "enforced"),
    [
        ("restricted", None, "restricted"),  # the setting, on a namespace the console creates
        ("privileged", None, "privileged"),
        ("baseline", "restricted", "restricted"),  # an operator's stricter level stays
        ("baseline", "privileged", "baseline"),  # a laxer one is raised to the setting
        ("restricted", "baseline", "restricted"),
    ],
)
def test_the_pod_security_level_is_the_setting_or_an_operators_stricter_one(
    fake, world, settings, setting, operators, enforced
):
    """Issue 29: tenant namespaces had no Pod Security labels, so a tenant's pod could run
    privileged on a node it shares with others."""
    settings.TENANT_POD_SECURITY_LEVEL = setting
    _cluster, group, (_team_a, queue_a), _b = world
    if operators is not None:
        fake.put(
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {
                    "name": "tenant-team-a",
                    "labels": {"pod-security.kubernetes.io/enforce": operators},
                },
            }
        )
    job = _admitted(queue_a, group)
    assert submit_to_cluster(job.pk) == JobState.ADMITTED
    namespace = fake.get("namespaces", "tenant-team-a")
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == enforced
    body = {"apiVersion": "v1", "kind": "Namespace"}
    body["metadata"] = {k: namespace["metadata"][k] for k in ("name", "labels", "annotations")}
    kubernetes_validate.validate(body, K8S, strict=True)


def test_namespace_of_another_tenant_is_refused(fake, world):
    _cluster, group, (_team_a, queue_a), _b = world
    fake.put(
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "tenant-team-a", "labels": {"console.llmops.io/tenant": "team-b"}},
        }
    )
    job = _admitted(queue_a, group)
    assert submit_to_cluster(job.pk) == JobState.FAILED
    job.refresh_from_db()
    assert job.pending_reason == (
        "submission refused: HTTP 409 AlreadyExists: namespace 'tenant-team-a' belongs to "
        "tenant 'team-b', not 'team-a'"
    )
    assert Placement.objects.get(job=job).state == PlacementState.RELEASED
    assert fake.list("pods") == []


def test_namespace_deleted_outside_is_created_again(fake, world):
    _cluster, group, (_team_a, queue_a), _b = world
    first = _admitted(queue_a, group, "first")
    submit_to_cluster(first.pk)
    fake.delete(fake_kind("namespaces"), "v1", "", "tenant-team-a", None)  # kubectl delete ns
    assert (
        fake.get(
            "pods", Placement.objects.get(job=first).backend_ref.split("/")[1], "tenant-team-a"
        )
        is None
    )
    second = _admitted(queue_a, group, "second")
    assert submit_to_cluster(second.pk) == JobState.ADMITTED
    assert fake.get("namespaces", "tenant-team-a") is not None
    name = Placement.objects.get(job=second).backend_ref.split("/")[1]
    assert fake.get("pods", name, "tenant-team-a") is not None


def fake_kind(plural: str):
    from tests.kube.fake_apiserver import KINDS

    return KINDS[("", plural)]
