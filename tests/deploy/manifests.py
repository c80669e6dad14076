"""Read rendered Kubernetes objects: find by kind and name, walk pod templates."""

from __future__ import annotations

from collections.abc import Iterator

#: The console's namespace, ServiceAccount and the Secret the installs reference.
NAMESPACE = "llmops-console"
SERVICE_ACCOUNT = "llmops-console"
SECRET = "llmops-console"
CONFIGMAP_PREFIX = "llmops-console-config-"  # configMapGenerator adds a content hash
SECRET_KEYS = ("DATABASE_URL", "REDIS_URL", "SECRET_KEY")
WORKLOADS = {
    "web": "llmops-console-web",
    "worker": "llmops-console-worker",
    "worker-telemetry": "llmops-console-worker-telemetry",
    "beat": "llmops-console-beat",
    "migrate": "llmops-console-migrate",
}


def find(objects: list[dict], kind: str, name: str | None = None) -> list[dict]:
    """Objects of ``kind`` (and ``name``)."""
    return [
        o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)
    ]


def one(objects: list[dict], kind: str, name: str) -> dict:
    found = find(objects, kind, name)
    assert len(found) == 1, f"{len(found)} {kind}/{name}"
    return found[0]


def pod_specs(objects: list[dict]) -> Iterator[tuple[dict, dict]]:
    """``(workload, pod template)`` of every Deployment and Job."""
    for obj in objects:
        if obj["kind"] in ("Deployment", "Job"):
            yield obj, obj["spec"]["template"]


def containers(pod_template: dict) -> list[dict]:
    """Init containers, then containers."""
    spec = pod_template["spec"]
    return [*spec.get("initContainers", []), *spec["containers"]]


def selects(selector: dict, labels: dict) -> bool:
    """Whether a Service's selector map, or a LabelSelector of ``matchLabels`` only, matches
    ``labels``."""
    if "matchLabels" in selector:
        assert set(selector) == {"matchLabels"}, f"only matchLabels are compared: {selector}"
        selector = selector["matchLabels"]
    return all(labels.get(key) == value for key, value in selector.items())
