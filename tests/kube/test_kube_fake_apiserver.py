"""The fake API server through the official kubernetes client (no console code involved)."""

from __future__ import annotations

import threading

import pytest
from fake_apiserver import FakeApiServer
from kubernetes import client as k8s
from kubernetes import watch as k8s_watch

from tests.waits import until

NS = "default"


def pod(name: str, labels: dict | None = None) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]},
    }


def claim(name: str) -> dict:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name},
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "gpu",
                        "exactly": {
                            "deviceClassName": "hami-core-gpu.project-hami.io",
                            "count": 1,
                            "capacity": {"requests": {"memory": "4Gi", "cores": "30"}},
                        },
                    }
                ]
            }
        },
    }


def test_pod_create_get_list_delete(api_client: k8s.ApiClient) -> None:
    core = k8s.CoreV1Api(api_client)
    created = core.create_namespaced_pod(NS, pod("a", {"team": "x"}))
    core.create_namespaced_pod(NS, pod("b", {"team": "y"}))
    assert created.metadata.uid and created.metadata.resource_version == "2"
    assert created.status.phase == "Pending"
    assert core.read_namespaced_pod("a", NS).metadata.uid == created.metadata.uid
    assert [
        p.metadata.name for p in core.list_namespaced_pod(NS, label_selector="team=x").items
    ] == ["a"]
    assert [
        p.metadata.name
        for p in core.list_namespaced_pod(NS, label_selector="team in (x,y),team!=y").items
    ] == ["a"]
    assert len(core.list_pod_for_all_namespaces().items) == 2
    core.delete_namespaced_pod("a", NS)
    with pytest.raises(k8s.ApiException) as exc:
        core.read_namespaced_pod("a", NS)
    assert exc.value.status == 404


def test_duplicate_create_is_409_already_exists(api_client: k8s.ApiClient) -> None:
    core = k8s.CoreV1Api(api_client)
    core.create_namespaced_pod(NS, pod("a"))
    with pytest.raises(k8s.ApiException) as exc:
        core.create_namespaced_pod(NS, pod("a"))
    assert exc.value.status == 409
    assert '"reason": "AlreadyExists"' in exc.value.body


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"metadata": {}, "spec": {"containers": [{"name": "c", "image": "i"}]}}, "metadata.name"),
        ({"metadata": {"name": "x"}, "spec": {"containers": []}}, "spec.containers"),
        (
            {"metadata": {"name": "x"}, "spec": {"containers": [{"name": "c"}]}},
            "spec.containers[0].image",
        ),
        (
            {
                "metadata": {"name": "Bad_Name"},
                "spec": {"containers": [{"name": "c", "image": "i"}]},
            },
            "metadata.name",
        ),
        (
            {
                "metadata": {"name": "x"},
                "spec": {
                    "containers": [
                        {
                            "name": "c",
                            "image": "i",
                            "resources": {"limits": {"nvidia.com/gpu": "0.5"}},
                        }
                    ]
                },
            },
            "resources.limits[nvidia.com/gpu]",
        ),
    ],
)
def test_invalid_pod_is_422(api_client: k8s.ApiClient, body: dict, field: str) -> None:
    with pytest.raises(k8s.ApiException) as exc:
        k8s.CoreV1Api(api_client).create_namespaced_pod(NS, body)
    assert exc.value.status == 422
    assert field in exc.value.body


def test_missing_namespace_is_404(api_client: k8s.ApiClient) -> None:
    with pytest.raises(k8s.ApiException) as exc:
        k8s.CoreV1Api(api_client).create_namespaced_pod("nope", pod("a"))
    assert exc.value.status == 404


def test_claims_in_every_version_and_conversion(api_client: k8s.ApiClient) -> None:
    v1 = k8s.ResourceV1Api(api_client)
    v1.create_namespaced_resource_claim(NS, claim("c1"))
    got = k8s.ResourceV1beta1Api(api_client).read_namespaced_resource_claim("c1", NS)
    req = got.spec.devices.requests[0]  # v1beta1: flat request
    assert (req.device_class_name, req.count) == ("hami-core-gpu.project-hami.io", 1)
    got2 = k8s.ResourceV1beta2Api(api_client).read_namespaced_resource_claim("c1", NS)
    assert got2.spec.devices.requests[0].exactly.count == 1
    assert [c.metadata.name for c in v1.list_namespaced_resource_claim(NS).items] == ["c1"]
    v1.delete_namespaced_resource_claim("c1", NS)
    assert v1.list_namespaced_resource_claim(NS).items == []


def test_invalid_claim_is_422(api_client: k8s.ApiClient) -> None:
    bad = claim("c1")
    bad["spec"]["devices"]["requests"][0]["exactly"]["count"] = 0
    bad["spec"]["devices"]["requests"][0]["name"] = "GPU_0"
    with pytest.raises(k8s.ApiException) as exc:
        k8s.ResourceV1Api(api_client).create_namespaced_resource_claim(NS, bad)
    assert exc.value.status == 422
    assert "spec.devices.requests[0].name: Invalid value: 'GPU_0'" in exc.value.body
    assert "spec.devices.requests[0].exactly.count: Invalid value: 0" in exc.value.body


def test_unserved_version_is_404() -> None:
    with FakeApiServer(resource_versions=("v1beta1",)) as server:
        api = k8s.ApiClient(k8s.Configuration(host=server.url))
        with pytest.raises(k8s.ApiException) as exc:
            k8s.ResourceV1Api(api).list_namespaced_resource_claim(NS)
        assert exc.value.status == 404
        assert k8s.ResourceV1beta1Api(api).list_namespaced_resource_claim(NS).items == []


def test_deleting_pod_collects_owned_claim(
    api_client: k8s.ApiClient, fake_apiserver: FakeApiServer
) -> None:
    core, v1 = k8s.CoreV1Api(api_client), k8s.ResourceV1Api(api_client)
    v1.create_namespaced_resource_claim(NS, claim("owned"))
    v1.create_namespaced_resource_claim(NS, claim("free"))
    p = core.create_namespaced_pod(NS, pod("a"))
    v1.patch_namespaced_resource_claim(
        "owned",
        NS,
        {
            "metadata": {
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "Pod", "name": "a", "uid": p.metadata.uid}
                ]
            }
        },
        _content_type="application/merge-patch+json",
    )
    core.delete_namespaced_pod("a", NS)
    assert [c["metadata"]["name"] for c in fake_apiserver.list("resourceclaims")] == ["free"]


def test_orphan_propagation_keeps_dependents(
    api_client: k8s.ApiClient, fake_apiserver: FakeApiServer
) -> None:
    core, v1 = k8s.CoreV1Api(api_client), k8s.ResourceV1Api(api_client)
    v1.create_namespaced_resource_claim(NS, claim("owned"))
    p = core.create_namespaced_pod(NS, pod("a"))
    v1.patch_namespaced_resource_claim(
        "owned",
        NS,
        {
            "metadata": {
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "Pod", "name": "a", "uid": p.metadata.uid}
                ]
            }
        },
        _content_type="application/merge-patch+json",
    )
    core.delete_namespaced_pod("a", NS, body={"propagationPolicy": "Orphan"})
    (left,) = fake_apiserver.list("resourceclaims")
    assert "ownerReferences" not in left["metadata"]


def test_claim_with_missing_owner_is_collected(
    api_client: k8s.ApiClient, fake_apiserver: FakeApiServer
) -> None:
    body = claim("c1")
    body["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": "ghost",
            "uid": "00000000-0000-0000-0000-000000000000",
        }
    ]
    k8s.ResourceV1Api(api_client).create_namespaced_resource_claim(NS, body)
    assert fake_apiserver.list("resourceclaims") == []


def test_watch_from_resource_version_sees_changes(
    api_client: k8s.ApiClient, fake_apiserver: FakeApiServer
) -> None:
    core = k8s.CoreV1Api(api_client)
    core.create_namespaced_pod(NS, pod("a"))
    rv = core.list_namespaced_pod(NS).metadata.resource_version

    opened = fake_apiserver.watches_started

    def mutate() -> None:  # once the watch is open
        until(lambda: fake_apiserver.watches_started > opened, "the watch to open")
        core.patch_namespaced_pod_status("a", NS, {"status": {"phase": "Running"}})
        core.delete_namespaced_pod("a", NS)

    t = threading.Thread(target=mutate)
    t.start()
    events = [
        (e["type"], e["object"].status.phase)
        for e in k8s_watch.Watch().stream(
            core.list_namespaced_pod, NS, resource_version=rv, timeout_seconds=1
        )
    ]
    t.join()
    assert events == [("MODIFIED", "Running"), ("DELETED", "Running")]


def test_watch_label_selector_turns_unmatch_into_deleted(api_client: k8s.ApiClient) -> None:
    core = k8s.CoreV1Api(api_client)
    core.create_namespaced_pod(NS, pod("a", {"keep": "yes"}))
    rv = core.list_namespaced_pod(NS).metadata.resource_version
    core.patch_namespaced_pod("a", NS, {"metadata": {"labels": {"keep": "no"}}})
    events = [
        e["type"]
        for e in k8s_watch.Watch().stream(
            core.list_namespaced_pod,
            NS,
            resource_version=rv,
            label_selector="keep=yes",
            timeout_seconds=1,
        )
    ]
    assert events == ["DELETED"]


def test_watch_too_old_resource_version_is_410(
    api_client: k8s.ApiClient, fake_apiserver: FakeApiServer
) -> None:
    core = k8s.CoreV1Api(api_client)
    core.create_namespaced_pod(NS, pod("a"))
    fake_apiserver.compact()
    with pytest.raises(k8s.ApiException) as exc:
        list(
            k8s_watch.Watch().stream(
                core.list_namespaced_pod, NS, resource_version="1", timeout_seconds=1
            )
        )
    assert exc.value.status == 410


def test_history_limit_expires_old_versions() -> None:
    with FakeApiServer(history_limit=2) as server:
        core = k8s.CoreV1Api(k8s.ApiClient(k8s.Configuration(host=server.url)))
        for n in ("a", "b", "c"):
            core.create_namespaced_pod(NS, pod(n))
        # rvs 2,3,4 written; only 3 and 4 kept: a watch from 2 still has everything after 2
        assert [
            e["object"].metadata.name
            for e in k8s_watch.Watch().stream(
                core.list_namespaced_pod, NS, resource_version="2", timeout_seconds=1
            )
        ] == ["b", "c"]
        with pytest.raises(k8s.ApiException) as exc:
            list(
                k8s_watch.Watch().stream(
                    core.list_namespaced_pod, NS, resource_version="1", timeout_seconds=1
                )
            )
        assert exc.value.status == 410


def test_injected_faults_then_recovery(
    api_client: k8s.ApiClient, fake_apiserver: FakeApiServer
) -> None:
    core = k8s.CoreV1Api(api_client)
    fake_apiserver.inject_faults(500, 2, method="POST")
    for _ in range(2):
        with pytest.raises(k8s.ApiException) as exc:
            core.create_namespaced_pod(NS, pod("a"))
        assert exc.value.status == 500
    assert core.create_namespaced_pod(NS, pod("a")).metadata.name == "a"
    fake_apiserver.inject_faults(429, 1, retry_after=7, method="POST")
    with pytest.raises(k8s.ApiException) as exc:
        core.create_namespaced_pod(NS, pod("b"))
    assert (exc.value.status, exc.value.headers["Retry-After"]) == (429, "7")


def test_patch_with_stale_resource_version_conflicts(api_client: k8s.ApiClient) -> None:
    v1 = k8s.ResourceV1Api(api_client)
    c = v1.create_namespaced_resource_claim(NS, claim("c1"))
    v1.patch_namespaced_resource_claim(
        "c1", NS, {"metadata": {"labels": {"a": "1"}}}, _content_type="application/merge-patch+json"
    )
    with pytest.raises(k8s.ApiException) as exc:
        v1.patch_namespaced_resource_claim(
            "c1",
            NS,
            {"metadata": {"labels": {"a": "2"}, "resourceVersion": c.metadata.resource_version}},
            _content_type="application/merge-patch+json",
        )
    assert exc.value.status == 409
