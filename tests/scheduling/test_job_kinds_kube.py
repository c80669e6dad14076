"""Workload kinds on a Kubernetes cluster, end to end: submitted through the REST API,
admitted by a cycle, submitted through the official client to the HTTP fake API server; every
emitted object (Namespace, Service, ResourceClaim, Pod) validated with kubernetes-validate."""

from __future__ import annotations

import kubernetes_validate
import pytest
from rest_framework.test import APIClient

from scheduling.choices import JobState, PlacementState
from scheduling.models import Job, Placement
from scheduling.services.cluster_submission import submit_to_cluster
from scheduling.services.cycle import run_admission_cycle
from scheduling.services.inventory import sync_cluster_inventory
from scheduling.services.kube_reconcile import resync
from tests.builders import make_group, make_tenant, make_user
from tests.kube.kube_helpers import failed_status, make_kube_cluster, nvidia_node, running_status

pytestmark = pytest.mark.django_db

A100 = "NVIDIA-A100-SXM4-80GB"
K8S = "1.34.0"
NS = "tenant-team-a"
SERVER_FIELDS = ("uid", "resourceVersion", "creationTimestamp", "generation", "ownerReferences")


@pytest.fixture(autouse=True)
def _fast_retries(settings):
    settings.KUBE_RETRY_BASE_DELAY_S = 0.0
    settings.KUBE_RETRY_MAX_ATTEMPTS = 3


@pytest.fixture
def world(fake, tmp_path):
    cluster = make_kube_cluster(fake, tmp_path, mode="dra")
    for i in range(2):
        fake.put(nvidia_node(f"gpu-{i}", uuids=(f"GPU-{i}a", f"GPU-{i}b", f"GPU-{i}c")))
    sync_cluster_inventory(cluster.pk)
    group = make_group("g1", models=(A100,))
    team_a, queue_a = make_tenant("team-a", group, devices_milli=100_000)
    client = APIClient()
    client.force_authenticate(make_user("alice", team_a))
    return cluster, group, queue_a, client


def _validate(obj: dict) -> None:
    """kubernetes-validate (strict) on what the console sent (server-set fields dropped)."""
    body = {k: v for k, v in obj.items() if k != "status"}
    body["metadata"] = {k: v for k, v in obj["metadata"].items() if k not in SERVER_FIELDS}
    if body["kind"] == "Pod":
        spec = dict(body["spec"])
        for key in ("schedulerName", "terminationGracePeriodSeconds", "dnsPolicy"):
            spec.pop(key, None)
        body["spec"] = {**spec, "restartPolicy": obj["spec"]["restartPolicy"]}
    kubernetes_validate.validate(body, K8S, strict=True)


def _validate_all(fake) -> None:
    for plural in ("namespaces", "services", "resourceclaims", "pods"):
        for obj in fake.list(plural):
            if plural == "namespaces" and obj["metadata"]["name"] in ("default", "llmops"):
                continue
            kind = {
                "namespaces": "Namespace",
                "services": "Service",
                "resourceclaims": "ResourceClaim",
                "pods": "Pod",
            }[plural]
            version = "resource.k8s.io/v1" if plural == "resourceclaims" else "v1"
            _validate({"apiVersion": version, "kind": kind, **obj})


def _submit(client, body) -> dict:
    resp = client.post("/api/jobs/", body, format="json")
    assert resp.status_code == 201, resp.json()
    return resp.json()


def _env(container: dict) -> dict[str, str]:
    return {e["name"]: e["value"] for e in container.get("env", []) if "value" in e}


def test_four_worker_training_job_gets_ranks_0_to_3_and_one_headless_service(fake, world):
    _cluster, group, queue, client = world
    job = _submit(
        client,
        {
            "queue": queue.pk,
            "name": "finetune-7b",
            "kind": "training",
            "workers": 4,
            "cpu_milli": 4000,
            "host_memory_mib": 16384,
            "port": 23456,
            "restart_policy": "OnFailure",
            "backoff_limit": 2,
            "max_runtime_s": 7200,
            "volumes": [{"claim": "datasets", "mount_path": "/data", "read_only": True}],
            "secrets": [{"name": "hf-token"}, {"name": "wandb", "mount_path": "/etc/wandb"}],
            "tolerations": [
                {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
            ],
            "node_selector": {"kubernetes.io/hostname": "gpu-0"},
            "containers": [
                {
                    "name": "trainer",
                    "image": "nvcr.io/nvidia/pytorch:25.01-py3",
                    "command": ["torchrun", "train.py"],
                    "device_count": 1,
                    "device_memory_mib": 20000,
                    "cores_percent": 50,
                }
            ],
        },
    )
    assert (job["kind"], job["pod_count"]) == ("training", 4)
    assert run_admission_cycle(group.pk).admitted == [job["id"]]
    assert submit_to_cluster(job["id"]) == JobState.ADMITTED
    pods = sorted(fake.list("pods"), key=lambda p: p["spec"]["hostname"])
    assert len(pods) == 4
    (service,) = fake.list("services")
    svc = service["metadata"]["name"]
    assert svc == f"finetune-7b-{job['id']}"
    assert service["metadata"]["namespace"] == NS
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["publishNotReadyAddresses"] is True
    assert service["spec"]["ports"] == [
        {"name": "rendezvous", "port": 23456, "targetPort": 23456, "protocol": "TCP"}
    ]
    assert {r["name"] for r in service["metadata"]["ownerReferences"]} == {
        p["metadata"]["name"] for p in pods
    }
    master = f"worker-0.{svc}.{NS}.svc"
    for rank, pod in enumerate(pods):
        spec = pod["spec"]
        assert pod["metadata"]["namespace"] == NS
        assert (spec["hostname"], spec["subdomain"]) == (f"worker-{rank}", svc)
        assert pod["metadata"]["labels"]["console.llmops.io/workload"] == str(job["id"])
        (trainer,) = spec["containers"]
        env = _env(trainer)
        assert {
            k: env[k] for k in ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK")
        } == {
            "MASTER_ADDR": master,
            "MASTER_PORT": "23456",
            "WORLD_SIZE": "4",
            "RANK": str(rank),
            "LOCAL_RANK": "0",
        }
        assert trainer["envFrom"] == [{"secretRef": {"name": "hf-token"}}]
        assert {m["mountPath"] for m in trainer["volumeMounts"]} == {"/data", "/etc/wandb"}
        assert spec["restartPolicy"] == "OnFailure"
        assert spec["activeDeadlineSeconds"] == 7200
        assert spec["nodeSelector"] == {"kubernetes.io/hostname": "gpu-0"}
        assert spec["tolerations"][0]["key"] == "nvidia.com/gpu"
    assert set(Placement.objects.filter(job_id=job["id"]).values_list("node__name", flat=True)) == {
        "gpu-0"
    }  # the node selector steered placement
    _validate_all(fake)


def test_launcher_and_workers_have_their_own_requests(fake, world):
    _cluster, group, queue, client = world
    job = _submit(
        client,
        {
            "queue": queue.pk,
            "name": "mpi-bench",
            "kind": "training",
            "workers": 2,
            "min_workers": 1,
            "cpu_milli": 8000,
            "host_memory_mib": 32768,
            "launcher_cpu_milli": 500,
            "launcher_memory_mib": 1024,
            "containers": [
                {
                    "name": "launcher",
                    "role": "launcher",
                    "image": "mpioperator/mpi-pi:openmpi",
                    "command": ["mpirun", "--hostfile", "/etc/mpi/hostfile", "/home/mpiuser/pi"],
                },
                {
                    "name": "worker",
                    "role": "worker",
                    "image": "mpioperator/mpi-pi:openmpi",
                    "device_count": 1,
                    "device_memory_mib": 10000,
                    "cores_percent": 30,
                },
            ],
        },
    )
    assert (job["pod_count"], job["min_pods"]) == (3, 2)
    assert run_admission_cycle(group.pk).admitted == [job["id"]]
    submit_to_cluster(job["id"])
    pods = {p["spec"]["hostname"]: p for p in fake.list("pods")}
    assert set(pods) == {"launcher", "worker-0", "worker-1"}
    (launcher,) = pods["launcher"]["spec"]["containers"]
    assert launcher["name"] == "launcher" and "claims" not in launcher["resources"]
    assert launcher["resources"]["limits"] == {"cpu": "500m", "memory": "1024Mi"}
    env = _env(launcher)
    assert "RANK" not in env and env["WORLD_SIZE"] == "2"
    svc = f"mpi-bench-{job['id']}"
    assert env["WORKER_HOSTS"] == f"worker-0.{svc}.{NS}.svc,worker-1.{svc}.{NS}.svc"
    (worker,) = pods["worker-1"]["spec"]["containers"]
    assert _env(worker)["RANK"] == "1"
    assert worker["resources"]["claims"] == [{"name": "devices", "request": "worker-0"}]
    _validate_all(fake)


def test_failed_worker_retried_within_backoff_limit_then_job_fails(fake, world):
    cluster, group, queue, client = world
    job = _submit(
        client,
        {
            "queue": queue.pk,
            "name": "flaky",
            "kind": "training",
            "workers": 1,
            "backoff_limit": 1,
            "containers": [
                {
                    "name": "main",
                    "image": "busybox:1.37",
                    "device_count": 1,
                    "device_memory_mib": 1000,
                    "cores_percent": 10,
                }
            ],
        },
    )
    for attempt in range(2):
        assert run_admission_cycle(group.pk).admitted == [job["id"]]
        submit_to_cluster(job["id"])
        (pod,) = [
            p
            for p in fake.list("pods")
            if p["metadata"]["labels"]["console.llmops.io/job"] == str(job["id"])
        ]
        fake.set_pod_status(NS, pod["metadata"]["name"], failed_status(1))
        resync(cluster)
        row = Job.objects.get(pk=job["id"])
        if attempt == 0:
            assert (row.state, row.failed_attempts) == (JobState.QUEUED, 1)
            fake.delete(_kind("pods"), "v1", NS, pod["metadata"]["name"], None)
    assert row.state == JobState.FAILED


def test_inference_replicas_share_one_service_and_report_readiness(fake, world):
    cluster, group, queue, client = world
    service = _submit(
        client,
        {
            "queue": queue.pk,
            "name": "qwen-chat",
            "kind": "inference",
            "port": 8000,
            "replicas": 2,
            "max_replicas": 3,
            "preemptible": False,
            "containers": [
                {
                    "name": "vllm",
                    "image": "vllm/vllm-openai:v0.6.3",
                    "args": ["--model", "Qwen/Qwen2.5-7B-Instruct"],
                    "device_count": 1,
                    "device_memory_mib": 40000,
                    "cores_percent": 50,
                }
            ],
        },
    )
    admitted = run_admission_cycle(group.pk).admitted
    assert len(admitted) == 2
    for job_id in admitted:
        submit_to_cluster(job_id)
    (svc,) = fake.list("services")
    assert svc["metadata"]["name"] == f"qwen-chat-{service['id']}"
    assert svc["spec"]["type"] == "ClusterIP"
    assert svc["spec"]["selector"]["console.llmops.io/workload"] == str(service["id"])
    assert svc["spec"]["ports"] == [
        {"name": "http", "port": 8000, "targetPort": 8000, "protocol": "TCP"}
    ]
    pods = fake.list("pods")
    assert len(svc["metadata"]["ownerReferences"]) == len(pods) == 2
    for pod in pods:
        (c,) = pod["spec"]["containers"]
        assert c["ports"] == [{"name": "http", "containerPort": 8000, "protocol": "TCP"}]
        assert c["readinessProbe"]["tcpSocket"] == {"port": 8000}
        assert pod["spec"]["restartPolicy"] == "Always"
        assert "activeDeadlineSeconds" not in pod["spec"]
    _validate_all(fake)
    first = pods[0]["metadata"]["name"]
    status = running_status("gpu-0")
    fake.set_pod_status(NS, first, status)
    not_ready = {**status, "conditions": [{"type": "Ready", "status": "False"}]}
    fake.set_pod_status(NS, pods[1]["metadata"]["name"], not_ready)
    resync(cluster)
    detail = client.get(f"/api/jobs/{service['id']}/").json()
    assert {k: detail["service"][k] for k in ("desired", "running", "ready")} == {
        "desired": 2,
        "running": 2,
        "ready": 1,
    }
    # a replica deleted outside the console is requeued (restart policy Always): replaced
    fake.delete(_kind("pods"), "v1", NS, first, None)
    resync(cluster)
    lost = Placement.objects.get(backend_ref=f"{NS}/{first}")
    assert lost.state == PlacementState.FAILED
    assert Job.objects.get(pk=lost.job_id).state == JobState.QUEUED
    assert run_admission_cycle(group.pk).admitted == [lost.job_id]


def test_notebook_pod_service_and_stop_deletes_the_pod(fake, world):
    _cluster, group, queue, client = world
    nb = _submit(
        client,
        {
            "queue": queue.pk,
            "name": "alice-lab",
            "kind": "notebook",
            "containers": [
                {
                    "name": "jupyter",
                    "image": "quay.io/jupyter/pytorch-notebook:latest",
                    "device_count": 1,
                    "device_memory_mib": 8000,
                    "cores_percent": 20,
                }
            ],
        },
    )
    assert run_admission_cycle(group.pk).admitted == [nb["id"]]
    submit_to_cluster(nb["id"])
    (pod,) = fake.list("pods")
    (svc,) = fake.list("services")
    assert pod["spec"]["containers"][0]["ports"][0]["containerPort"] == 8888
    assert svc["spec"]["ports"][0]["port"] == 8888
    _validate_all(fake)
    assert client.post(f"/api/jobs/{nb['id']}/stop/").json()["state"] == "stopped"
    assert fake.list("pods") == []
    assert fake.list("services") == []  # garbage-collected with its only owner
    assert fake.list("resourceclaims") == []


def _kind(plural: str):
    from tests.kube.fake_apiserver import KINDS

    return KINDS[("", plural)]
