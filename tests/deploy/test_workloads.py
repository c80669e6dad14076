"""The console's pods in every install: real entry points, probes on the console's health
endpoints, settings from the ConfigMap and Secret references only, the migration first, and a
hardened container (non-root, read-only root, no capabilities, requests and limits)."""

from __future__ import annotations

import re

import pytest

from console import health
from tests.deploy.conftest import KUSTOMIZATIONS
from tests.deploy.entrypoints import check_command
from tests.deploy.env_reads import variables_read
from tests.deploy.manifests import (
    CONFIGMAP_PREFIX,
    SECRET,
    SECRET_KEYS,
    WORKLOADS,
    containers,
    find,
    one,
    pod_specs,
)
from tests.deploy.sources import ROOT

pytestmark = pytest.mark.parametrize("folder", KUSTOMIZATIONS)

#: What each workload's main container runs; init containers wait for the migrations.
ENTRY_POINTS = {
    "web": ["gunicorn console.wsgi"],
    "worker": ["celery worker"],
    "worker-telemetry": ["celery worker"],
    "beat": ["celery beat"],
    "migrate": ["manage.py migrate"],
}


def image_user() -> tuple[int, int]:
    """``USER uid:gid`` of the Dockerfile."""
    match = re.search(r"^USER (\d+):(\d+)$", (ROOT / "Dockerfile").read_text(), re.M)
    assert match, "the Dockerfile sets no numeric USER uid:gid"
    return int(match[1]), int(match[2])


def component(workload: dict) -> str:
    return workload["metadata"]["labels"]["app.kubernetes.io/component"]


def test_containers_run_the_console_entry_points(rendered, folder: str) -> None:
    for workload, pod in pod_specs(rendered[folder]):
        (main,) = pod["spec"]["containers"]
        assert check_command(main["command"]) == ENTRY_POINTS[component(workload)]
        for init in pod["spec"].get("initContainers", []):
            assert check_command(init["command"]) == ["manage.py migrate"]
        probe = main.get("livenessProbe", {}).get("exec")
        if probe:
            assert check_command(probe["command"]) == ["celery inspect"]


def test_the_migration_job_runs_first(rendered, folder: str) -> None:
    objects = rendered[folder]
    job = one(objects, "Job", WORKLOADS["migrate"])["spec"]["template"]["spec"]
    assert "--no-input" in job["containers"][0]["command"]
    assert job["restartPolicy"] == "OnFailure"
    for deployment in find(objects, "Deployment"):
        (init,) = deployment["spec"]["template"]["spec"]["initContainers"]
        script = init["command"][-1]
        assert init["name"] == "wait-for-migrations"
        assert script.startswith("until python manage.py migrate --check") and "sleep" in script


def test_web_probes_use_the_health_endpoints(rendered, folder: str) -> None:
    web = one(rendered[folder], "Deployment", WORKLOADS["web"])["spec"]["template"]["spec"]
    (main,) = web["containers"]
    port_names = {p["name"] for p in main["ports"]}
    probes = {
        kind: main[kind]["httpGet"] for kind in ("startupProbe", "livenessProbe", "readinessProbe")
    }
    assert probes["startupProbe"]["path"] == health.LIVENESS_PATH
    assert probes["livenessProbe"]["path"] == health.LIVENESS_PATH
    assert probes["readinessProbe"]["path"] == health.READINESS_PATH
    assert {p["port"] for p in probes.values()} <= port_names
    assert main["readinessProbe"]["timeoutSeconds"] > health.REDIS_TIMEOUT_S
    worker = one(rendered[folder], "Deployment", WORKLOADS["worker"])
    ping = worker["spec"]["template"]["spec"]["containers"][0]["livenessProbe"]["exec"]
    assert "--destination=celery@$HOSTNAME" in ping["command"][-1]  # its own node only
    telemetry = one(rendered[folder], "Deployment", WORKLOADS["worker-telemetry"])
    (main,) = telemetry["spec"]["template"]["spec"]["containers"]
    assert "--destination=telemetry@$HOSTNAME" in main["livenessProbe"]["exec"]["command"][-1]


def test_web_reads_the_metrics_token_from_the_secret_when_given(rendered, folder: str) -> None:
    # /metrics answers Prometheus with METRICS_TOKEN (console.metrics); an install without
    # the key still starts (optional), and then only a platform admin's session reads it
    web = one(rendered[folder], "Deployment", WORKLOADS["web"])["spec"]["template"]["spec"]
    (main,) = web["containers"]
    env = {e["name"]: e for e in main["env"]}
    assert env["METRICS_TOKEN"] == {
        "name": "METRICS_TOKEN",
        "valueFrom": {"secretKeyRef": {"name": SECRET, "key": "METRICS_TOKEN", "optional": True}},
    }


def test_telemetry_has_its_own_worker(rendered, folder: str) -> None:
    """Cycles never wait behind telemetry: the default queue's worker and the telemetry
    queue's worker are separate Deployments, each reading only its queue (settings'
    ``CELERY_TASK_ROUTES`` send ``telemetry.tasks.*`` to ``celery-telemetry``)."""
    from django.conf import settings

    queues = {}
    for name in ("worker", "worker-telemetry"):
        workload = one(rendered[folder], "Deployment", WORKLOADS[name])
        (main,) = workload["spec"]["template"]["spec"]["containers"]
        command = main["command"]
        queues[name] = command[command.index("-Q") + 1]
    assert queues == {
        "worker": settings.CELERY_TASK_DEFAULT_QUEUE,
        "worker-telemetry": settings.CELERY_TELEMETRY_QUEUE,
    }
    assert settings.CELERY_TASK_ROUTES == {
        "telemetry.tasks.*": {"queue": settings.CELERY_TELEMETRY_QUEUE},
        "scheduling.tasks.usage_reconcile_task": {"queue": settings.CELERY_TELEMETRY_QUEUE},
    }


def test_settings_come_from_the_configmap_and_secret_references(rendered, folder: str) -> None:
    objects = rendered[folder]
    assert not find(objects, "Secret"), "secret values never ship in the manifests"
    (config,) = find(objects, "ConfigMap")
    assert config["metadata"]["name"].startswith(CONFIGMAP_PREFIX)
    known = variables_read()
    assert set(config["data"]) <= known, set(config["data"]) - known
    assert config["data"]["CONSOLE_REQUIRE_SECRET_KEY"] == "true"
    assert config["data"]["DEBUG"] == "false"
    assert not set(config["data"]) & set(SECRET_KEYS)
    for workload, pod in pod_specs(objects):
        for container in containers(pod):
            where = f"{workload['metadata']['name']}/{container['name']}"
            assert container["envFrom"] == [
                {"configMapRef": {"name": config["metadata"]["name"]}}
            ], where
            env = {e["name"]: e for e in container["env"]}
            assert set(env) <= known, where
            for key in SECRET_KEYS:
                assert env[key] == {
                    "name": key,
                    "valueFrom": {"secretKeyRef": {"name": SECRET, "key": key}},
                }, where


def test_containers_are_hardened_and_sized(rendered, folder: str) -> None:
    uid, gid = image_user()
    images = set()
    for workload, pod in pod_specs(rendered[folder]):
        spec = pod["spec"]
        assert spec["securityContext"] == {
            "runAsNonRoot": True,
            "runAsUser": uid,
            "runAsGroup": gid,
            "seccompProfile": {"type": "RuntimeDefault"},
        }
        assert spec["enableServiceLinks"] is False
        tmp_volumes = {v["name"] for v in spec["volumes"] if "emptyDir" in v}
        for container in containers(pod):
            where = f"{workload['metadata']['name']}/{container['name']}"
            images.add(container["image"])
            assert container["securityContext"] == {
                "allowPrivilegeEscalation": False,
                "readOnlyRootFilesystem": True,
                "capabilities": {"drop": ["ALL"]},
            }, where
            resources = container["resources"]
            for part in ("requests", "limits"):
                assert set(resources[part]) == {"cpu", "memory"}, where
            mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
            assert mounts.get("/tmp") in tmp_volumes, f"{where}: no writable /tmp"
    assert images == {"llmops-console:0.1.0"}  # the kustomize images: entry, one tag
