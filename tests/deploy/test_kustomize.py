"""deploy/: the Kustomize base and the small and HA overlays render, every object validates
against the Kubernetes schema (strict: unknown fields fail), and the objects fit together
(selectors, references, replica counts, disruption budgets, autoscalers, RBAC)."""

from __future__ import annotations

import kubernetes_validate
import pytest
import yaml

from tests.deploy.conftest import KUSTOMIZATIONS, render
from tests.deploy.manifests import (
    NAMESPACE,
    SERVICE_ACCOUNT,
    WORKLOADS,
    find,
    one,
    pod_specs,
    selects,
)
from tests.deploy.sources import ROOT

#: The oldest Kubernetes the manifests support and the newest kubernetes-validate knows.
KUBERNETES_VERSIONS = ("1.30.0", kubernetes_validate.latest_version())
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding"}
COMMON = {
    ("Namespace", NAMESPACE),
    ("ServiceAccount", SERVICE_ACCOUNT),
    ("ClusterRole", "llmops-console"),
    ("ClusterRoleBinding", "llmops-console"),
    ("ConfigMap", "llmops-console-config"),
    ("Job", WORKLOADS["migrate"]),
    ("Deployment", WORKLOADS["web"]),
    ("Deployment", WORKLOADS["worker"]),
    ("Deployment", WORKLOADS["worker-telemetry"]),
    ("Deployment", WORKLOADS["beat"]),
    ("Service", WORKLOADS["web"]),
    ("PodDisruptionBudget", WORKLOADS["web"]),
    ("PodDisruptionBudget", WORKLOADS["worker"]),
    ("PodDisruptionBudget", WORKLOADS["worker-telemetry"]),
}
EXPECTED = {
    "deploy/base": COMMON,
    "deploy/overlays/small": COMMON,
    "deploy/overlays/ha": COMMON
    | {
        ("HorizontalPodAutoscaler", WORKLOADS["web"]),
        ("HorizontalPodAutoscaler", WORKLOADS["worker"]),
    },
}


def _kind_name(obj: dict) -> tuple[str, str]:
    name = obj["metadata"]["name"]
    if obj["kind"] == "ConfigMap":
        name = name.rpartition("-")[0]  # drop the generator's content hash
    return obj["kind"], name


@pytest.mark.parametrize("folder", KUSTOMIZATIONS)
def test_renders_the_expected_objects(rendered, folder: str) -> None:
    objects = rendered[folder]
    assert sorted(map(_kind_name, objects)) == sorted(EXPECTED[folder])
    for obj in objects:
        namespace = obj["metadata"].get("namespace")
        assert namespace == (None if obj["kind"] in CLUSTER_SCOPED else NAMESPACE), obj
        assert obj["metadata"]["labels"]["app.kubernetes.io/part-of"] == "llmops-console"


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("folder", KUSTOMIZATIONS)
def test_every_object_validates_strictly(rendered, folder: str, version: str) -> None:
    errors = []
    for obj in rendered[folder]:
        try:
            kubernetes_validate.validate(obj, version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            errors.append(
                f"{obj['kind']}/{obj['metadata']['name']}: {exc.message} "
                f"at {'/'.join(map(str, exc.path))}"
            )
    assert not errors, f"{folder} on Kubernetes {version}:\n" + "\n".join(errors)


def test_strict_validation_catches_a_misspelt_field() -> None:
    """The guard the test above relies on: an unknown field is an error."""
    job = yaml.safe_load((ROOT / "deploy/base/migrate.yaml").read_text())
    job["spec"]["template"]["spec"]["containers"][0]["comand"] = ["x"]
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(job, KUBERNETES_VERSIONS[-1], strict=True)


def test_rbac_unit_renders_alone_and_unchanged_in_every_install(rendered, renderer) -> None:
    alone = render(renderer, "deploy/rbac")
    assert sorted(map(_kind_name, alone)) == sorted(
        [
            ("ClusterRole", "llmops-console"),
            ("ClusterRoleBinding", "llmops-console"),
            ("Namespace", NAMESPACE),
            ("ServiceAccount", SERVICE_ACCOUNT),
        ]
    )
    rules = one(alone, "ClusterRole", "llmops-console")["rules"]
    for objects in rendered.values():
        assert one(objects, "ClusterRole", "llmops-console")["rules"] == rules
        binding = one(objects, "ClusterRoleBinding", "llmops-console")
        assert binding["roleRef"]["name"] == "llmops-console"
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": NAMESPACE}
        ]
        for workload, pod in pod_specs(objects):
            if pod["spec"].get("automountServiceAccountToken", True):
                assert pod["spec"]["serviceAccountName"] == SERVICE_ACCOUNT, workload


@pytest.mark.parametrize("folder", KUSTOMIZATIONS)
def test_selectors_pick_exactly_their_workload(rendered, folder: str) -> None:
    objects = rendered[folder]
    pods = {w["metadata"]["name"]: p["metadata"]["labels"] for w, p in pod_specs(objects)}
    for deployment in find(objects, "Deployment"):
        assert selects(
            deployment["spec"]["selector"], deployment["spec"]["template"]["metadata"]["labels"]
        )
    service = one(objects, "Service", WORKLOADS["web"])
    assert [n for n, labels in pods.items() if selects(service["spec"]["selector"], labels)] == [
        WORKLOADS["web"]
    ]
    web = one(objects, "Deployment", WORKLOADS["web"])["spec"]["template"]["spec"]
    ports = {p["name"] for c in web["containers"] for p in c.get("ports", [])}
    assert {p["targetPort"] for p in service["spec"]["ports"]} <= ports
    for pdb in find(objects, "PodDisruptionBudget"):
        chosen = [n for n, labels in pods.items() if selects(pdb["spec"]["selector"], labels)]
        assert chosen == [pdb["metadata"]["name"]], (pdb["metadata"]["name"], chosen)


@pytest.mark.parametrize("folder", KUSTOMIZATIONS)
def test_beat_is_a_single_recreated_replica(rendered, folder: str) -> None:
    objects = rendered[folder]
    beat = one(objects, "Deployment", WORKLOADS["beat"])
    assert beat["spec"]["replicas"] == 1
    assert beat["spec"]["strategy"] == {"type": "Recreate"}
    targets = {
        h["spec"]["scaleTargetRef"]["name"] for h in find(objects, "HorizontalPodAutoscaler")
    }
    assert WORKLOADS["beat"] not in targets


def test_small_runs_one_web_and_one_worker(rendered) -> None:
    objects = rendered["deploy/overlays/small"]
    assert one(objects, "Deployment", WORKLOADS["web"])["spec"]["replicas"] == 1
    assert one(objects, "Deployment", WORKLOADS["worker"])["spec"]["replicas"] == 1
    assert not find(objects, "HorizontalPodAutoscaler")
    for pdb in find(objects, "PodDisruptionBudget"):  # never blocks a drain of one replica
        assert pdb["spec"]["maxUnavailable"] == 1 and "minAvailable" not in pdb["spec"]


@pytest.mark.parametrize(
    ("component", "minimum", "min_available"), [("web", 2, 1), ("worker", 3, 2)]
)
def test_ha_spreads_autoscales_and_budgets(
    rendered, component: str, minimum: int, min_available: int
) -> None:
    objects = rendered["deploy/overlays/ha"]
    name = WORKLOADS[component]
    deployment = one(objects, "Deployment", name)
    assert "replicas" not in deployment["spec"]  # the autoscaler owns the count
    hpa = one(objects, "HorizontalPodAutoscaler", name)
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": name,
    }
    assert hpa["spec"]["minReplicas"] == minimum
    assert hpa["spec"]["maxReplicas"] > minimum
    pdb = one(objects, "PodDisruptionBudget", name)["spec"]
    assert pdb["minAvailable"] == min_available and "maxUnavailable" not in pdb
    assert min_available < minimum  # a drain can always evict one
    pod = deployment["spec"]["template"]
    (term,) = pod["spec"]["affinity"]["podAntiAffinity"][
        "preferredDuringSchedulingIgnoredDuringExecution"
    ]
    assert term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    assert term["podAffinityTerm"]["labelSelector"]["matchLabels"] == pod["metadata"]["labels"]
