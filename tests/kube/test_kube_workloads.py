"""Workloads users create with kubectl, read and patched without a server (pure):
pod sets of every kind from their HAMi templates, and the patches that admit, suspend and
gate them."""

from __future__ import annotations

import copy

import kubernetes_validate
import pytest

from scheduling.devices.defaults import default_device_configs
from scheduling.kube import workload_patches as wp
from scheduling.kube import workloads as wl
from scheduling.kube.device_resources import DEFAULT_DRA_DRIVERS, ManifestError
from scheduling.placement.types import ContainerAssignment, DeviceGrant, PodAssignment

CONFIGS = default_device_configs()
K8S = "1.34.0"


def tpl(gpus="1", gpumem="20000", **extra) -> dict:
    return {
        "metadata": {"labels": {"app": "x"}},
        "spec": {
            "restartPolicy": "Never",
            **extra,
            "containers": [
                {
                    "name": "main",
                    "image": "busybox:1.37",
                    "resources": {"limits": {"nvidia.com/gpu": gpus, "nvidia.com/gpumem": gpumem}},
                }
            ],
        },
    }


def pytorchjob() -> dict:
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {
            "name": "ddp",
            "namespace": "t",
            "uid": "u1",
            "labels": {wl.LABEL_QUEUE: "q", wl.LABEL_PRIORITY_CLASS: "high"},
        },
        "spec": {
            "runPolicy": {"suspend": True},
            "pytorchReplicaSpecs": {
                "Worker": {"replicas": 3, "template": tpl("1", "40000")},
                "Master": {"replicas": 1, "template": tpl("2")},
            },
        },
    }


def grant(uuid: str) -> DeviceGrant:
    return DeviceGrant(uuid, "NVIDIA", 20000, 0, vendor="NVIDIA", model="NVIDIA-A100")


def assign(pod: str, node: str, *uuids: str) -> PodAssignment:
    return PodAssignment(
        pod, node, (ContainerAssignment("main", tuple(grant(u) for u in uuids)),), 0, 0
    )


def test_pytorchjob_has_master_then_workers_with_their_own_requests() -> None:
    w = wl.read_workload("PyTorchJob", pytorchjob(), CONFIGS)
    assert [(p.name, p.count) for p in w.pod_sets] == [("Master", 1), ("Worker", 3)]
    assert (w.suspended, w.priority_class, w.raw_priority, w.pod_count) == (True, "high", "", 4)
    master, worker = (p.request.containers[0].devices[0] for p in w.pod_sets)
    assert (master.count, master.memory_mib) == (2, 20000)
    assert (worker.count, worker.memory_mib) == (1, 40000)


@pytest.mark.parametrize(
    ("spec", "pods"), [({"parallelism": 4, "completions": 2}, 2), ({"parallelism": 3}, 3), ({}, 1)]
)
def test_job_pods_are_parallelism_capped_by_completions(spec: dict, pods: int) -> None:
    obj = {
        "metadata": {"name": "j", "namespace": "t"},
        "spec": {"suspend": True, **spec, "template": tpl()},
    }
    (ps,) = wl.read_workload("Job", obj, CONFIGS).pod_sets
    assert ps.count == pods


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (
            lambda o: o["spec"]["pytorchReplicaSpecs"]["Worker"].update({"replicas": -1}),
            "Worker.replicas",
        ),
        (
            lambda o: o["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][
                0
            ]["resources"]["limits"].update({"nvidia.com/gpu": "two"}),
            "nvidia.com/gpu",
        ),
        (lambda o: o["spec"].pop("pytorchReplicaSpecs"), "pytorchReplicaSpecs"),
    ],
)
def test_bad_objects_are_refused_naming_the_field(mutate, field: str) -> None:
    obj = pytorchjob()
    mutate(obj)
    with pytest.raises(wl.WorkloadError, match=field):
        wl.read_workload("PyTorchJob", obj, CONFIGS)


def test_admission_ands_the_pin_into_the_users_terms_and_suspend_restores_them() -> None:
    user_terms = [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": user_terms}
        }
    }
    obj = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "t", "resourceVersion": "7"},
        "spec": {"suspend": True, "parallelism": 2, "template": tpl(affinity=affinity)},
    }
    w = wl.read_workload("Job", obj, CONFIGS)
    adm = wp.Admission(w.pod_sets[0], (assign("p0", "n1", "GPU-a"), assign("p1", "n2", "GPU-b")))
    patch = wp.admission_patch("Job", obj, [adm], mode="hami", job_id="9")
    assert patch["metadata"]["resourceVersion"] == "7"
    spec = patch["spec"]
    assert spec["suspend"] is False
    (term,) = spec["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    assert term["matchExpressions"] == user_terms[0]["matchExpressions"]
    assert term["matchFields"] == [
        {"key": "metadata.name", "operator": "In", "values": ["n1", "n2"]}
    ]
    assert spec["template"]["metadata"]["annotations"] == {"nvidia.com/use-gpuuuid": "GPU-a,GPU-b"}
    admitted = copy.deepcopy(obj)
    admitted["spec"] = spec
    kubernetes_validate.validate(admitted, K8S, strict=True)
    back = wp.suspend_patch("Job", admitted, obj["spec"], "preempted: x")
    assert back["spec"]["suspend"] is True
    assert back["spec"]["template"]["metadata"] == {
        "annotations": None,
        "labels": {wl.LABEL_WORKLOAD: None},
    }
    assert (
        back["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"
        ]["nodeSelectorTerms"]
        == user_terms
    )
    assert back["metadata"]["annotations"] == {
        wl.ANNOTATION_ADMITTED: None,
        wl.ANNOTATION_PENDING: "preempted: x",
    }


def test_merge_diff_nulls_what_was_added() -> None:
    assert wp.merge_diff({"a": 1, "b": {"c": 1, "d": 2}}, {"b": {"c": 1}}) == {
        "a": None,
        "b": {"d": None},
    }
    assert wp.merge_diff({"a": [1]}, {"a": [1, 2]}) == {"a": [1, 2]}


def test_claim_template_ors_the_pods_selectors() -> None:
    obj = {
        "metadata": {"name": "j", "namespace": "t"},
        "spec": {"suspend": True, "parallelism": 2, "template": tpl()},
    }
    w = wl.read_workload("Job", obj, CONFIGS)
    assigns = (assign("p0", "n1", "GPU-a"), assign("p1", "n2", "GPU-b"))
    template, refs = wp.claim_template(
        w, w.pod_sets[0], assigns, DEFAULT_DRA_DRIVERS, "resource.k8s.io/v1", "9"
    )
    (req,) = template["spec"]["spec"]["devices"]["requests"]
    cel = req["exactly"]["selectors"][0]["cel"]["expression"]
    assert '"GPU-a"' in cel and '"GPU-b"' in cel and " || " in cel
    assert refs == {"main": [req["name"]]}
    kubernetes_validate.validate(template, K8S, strict=True)
    uneven = (assign("p0", "n1", "GPU-a"), assign("p1", "n2", "GPU-b", "GPU-c"))
    with pytest.raises(ManifestError, match="differently shaped"):
        wp.claim_template(w, w.pod_sets[0], uneven, DEFAULT_DRA_DRIVERS, "resource.k8s.io/v1", "9")


def test_gate_and_pod_admission() -> None:
    dep = {
        "metadata": {"name": "d", "labels": {wl.LABEL_QUEUE: "q"}},
        "spec": {"template": tpl(schedulingGates=[{"name": "other"}])},
    }
    patch = wp.gate_template_patch(dep)
    assert patch["spec"]["template"]["spec"]["schedulingGates"] == [
        {"name": "other"},
        {"name": wl.SCHEDULING_GATE},
    ]
    dep["spec"]["template"]["spec"]["schedulingGates"] = patch["spec"]["template"]["spec"][
        "schedulingGates"
    ]
    dep["spec"]["template"]["metadata"]["labels"][wl.LABEL_QUEUE] = "q"
    assert wp.gate_template_patch(dep) is None  # already gated
    pod = {
        "metadata": {"name": "d-1", "labels": {wl.LABEL_QUEUE: "q"}},
        "spec": dep["spec"]["template"]["spec"],
    }
    assert wl.read_gated_pod(pod, CONFIGS).suspended is True
    admit = wp.pod_admission_patch(pod, assign("d-1", "n1", "GPU-a"), mode="hami", job_id="3")
    assert admit["spec"]["schedulingGates"] == [{"name": "other"}]
    assert admit["metadata"]["annotations"]["nvidia.com/use-gpuuuid"] == "GPU-a"
    with pytest.raises(ManifestError, match="cannot get a ResourceClaim"):
        wp.pod_admission_patch(pod, assign("d-1", "n1", "GPU-a"), mode="dra", job_id="3")


def test_event_names_are_stable_per_message() -> None:
    a = wp.event_body(
        kind="Job",
        api_version="batch/v1",
        namespace="t",
        name="j",
        uid="u",
        reason="Pending",
        message="m",
        time="2026-12-01T00:00:00Z",
    )
    b = wp.event_body(
        kind="Job",
        api_version="batch/v1",
        namespace="t",
        name="j",
        uid="u",
        reason="Pending",
        message="m",
        time="2026-12-01T00:05:00Z",
    )
    c = wp.event_body(
        kind="Job",
        api_version="batch/v1",
        namespace="t",
        name="j",
        uid="u",
        reason="Pending",
        message="other",
        time="2026-12-01T00:05:00Z",
    )
    assert a["metadata"]["name"] == b["metadata"]["name"] != c["metadata"]["name"]
    kubernetes_validate.validate(a, K8S, strict=True)
