"""Shared pieces of the kubernetes-backend database tests: the HTTP fake API server
(tests/kube/fake_apiserver.py) reached through a real kubeconfig file, realistic Node JSON,
and DB builders for a kubernetes cluster."""

from __future__ import annotations

import json
from pathlib import Path

from scheduling.models import Cluster
from tests.kube.fake_apiserver import FakeApiServer

NOW_TEXT = "2025-06-01 11:59:50"  # a fresh HAMi handshake relative to the sync's ``now``


def write_kubeconfig(server: FakeApiServer, path: Path, *, context: str = "fake") -> Path:
    """A kubeconfig whose ``context`` points at the fake server (plain HTTP, a token)."""
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "fake", "cluster": {"server": server.url}}],
                "users": [{"name": "console", "user": {"token": "not-a-real-token"}}],
                "contexts": [
                    {"name": context, "context": {"cluster": "fake", "user": "console"}},
                    {
                        "name": "broken",
                        "context": {"cluster": "fake", "user": "console", "namespace": "x"},
                    },
                ],
                "current-context": context,
            }
        )
    )
    path.chmod(0o600)
    return path


def make_kube_cluster(
    server: FakeApiServer,
    tmp_path: Path,
    *,
    name: str = "k1",
    mode: str = "hami",
    namespace_pattern: str = "",
) -> Cluster:
    """A kubernetes Cluster row connected to ``server`` through a kubeconfig file (tenant
    namespaces from ``TENANT_NAMESPACE_PATTERN``, ``tenant-{slug}``, unless
    ``namespace_pattern`` is given)."""
    cfg = write_kubeconfig(server, tmp_path / f"{name}.kubeconfig")
    return Cluster.objects.create(
        name=name,
        backend="kubernetes",
        submission_mode=mode,
        namespace_pattern=namespace_pattern,
        kubeconfig_path=str(cfg),
        kube_context="fake",
        request_timeout_s=5.0,
    )


def node_json(
    name: str,
    annotations: dict,
    capacity: dict,
    *,
    ready: bool = True,
    unschedulable: bool = False,
    labels: dict | None = None,
) -> dict:
    """A Node as the API server returns it."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": annotations,
            "labels": {"kubernetes.io/hostname": name, **(labels or {})},
        },
        "spec": {"unschedulable": unschedulable} if unschedulable else {},
        "status": {
            "capacity": capacity,
            "allocatable": capacity,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True" if ready else "False",
                    "reason": "KubeletReady" if ready else "KubeletNotReady",
                    "message": "kubelet is posting ready status"
                    if ready
                    else "PLEG is not healthy",
                }
            ],
        },
    }


def nvidia_node(
    name: str = "gpu-1", uuids: tuple[str, ...] = ("GPU-aaaa", "GPU-bbbb"), **kw
) -> dict:
    """A node with NVIDIA A100 80GB registered by HAMi in the JSON format."""
    devs = [
        {
            "id": u,
            "index": i,
            "count": 10,
            "devmem": 81920,
            "devcore": 100,
            "type": "NVIDIA-A100-SXM4-80GB",
            "numa": i % 2,
            "mode": "hami-core",
            "health": True,
        }
        for i, u in enumerate(uuids)
    ]
    return node_json(
        name,
        {
            "hami.io/node-nvidia-register": json.dumps(devs),
            "hami.io/node-handshake": f"Reported {NOW_TEXT}",
        },
        {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": str(10 * len(uuids))},
        **kw,
    )


def _container_status(state: dict, *, ready: bool = False) -> dict:
    """A containerStatuses entry as kubelet reports it (image fields are required)."""
    return {
        "name": "main",
        "ready": ready,
        "restartCount": 0,
        "image": "busybox:1.37",
        "imageID": "docker.io/library/busybox@sha256:" + "0" * 64,
        "containerID": "containerd://" + "1" * 64,
        "state": state,
    }


def running_status(node: str) -> dict:
    return {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True"}],
        "containerStatuses": [
            _container_status({"running": {"startedAt": "2025-06-01T12:00:00Z"}}, ready=True)
        ],
        "hostIP": "10.0.0.1",
    }


def succeeded_status() -> dict:
    return {
        "phase": "Succeeded",
        "containerStatuses": [
            _container_status({"terminated": {"exitCode": 0, "reason": "Completed"}})
        ],
    }


def failed_status(exit_code: int = 1, reason: str = "Error") -> dict:
    return {
        "phase": "Failed",
        "containerStatuses": [
            _container_status({"terminated": {"exitCode": exit_code, "reason": reason}})
        ],
    }


def evicted_status() -> dict:
    return {
        "phase": "Failed",
        "reason": "Evicted",
        "message": "The node was low on resource: memory.",
    }
