"""KubernetesGateway, client builder and error classification against the fake API server."""

from __future__ import annotations

import threading

import pytest
import urllib3
from fake_apiserver import FakeApiServer
from kubernetes import client as k8s

from scheduling.kube.client import build_api_client, test_connection
from scheduling.kube.errors import (
    AlreadyExists,
    Expired,
    NotFound,
    Permanent,
    Retryable,
    classify,
    parse_retry_after,
)
from scheduling.kube.gateway import KubernetesGateway, RetryPolicy
from scheduling.kube.manifests import ContainerSpec, JobMeta, build_dra, build_hami
from scheduling.placement.types import ContainerAssignment, DeviceGrant, PodAssignment
from tests.waits import until

NS = "llmops"
JOB = JobMeta("acme", "job-1", "pl-1", NS, ContainerSpec("pytorch:2.4", ("python", "t.py")))
ASSIGN = PodAssignment(
    "w0",
    "node-a",
    (ContainerAssignment("main", (DeviceGrant("GPU-a", "NVIDIA", 8192, 25, vendor="NVIDIA"),)),),
    cpu_milli=2000,
    memory_mib=4096,
)


def kubeconfig(tmp_path, server: FakeApiServer) -> str:
    path = tmp_path / "kubeconfig"
    path.write_text(f"""
apiVersion: v1
kind: Config
current-context: other
clusters:
- name: fake
  cluster: {{server: "{server.url}"}}
- name: nowhere
  cluster: {{server: "http://127.0.0.1:9"}}
users:
- name: console
  user: {{token: s3cret-token}}
contexts:
- name: fake
  context: {{cluster: fake, user: console}}
- name: other
  context: {{cluster: nowhere, user: console}}
""")
    return str(path)


@pytest.fixture
def gateway(fake_apiserver: FakeApiServer, tmp_path) -> tuple[KubernetesGateway, list[float]]:
    sleeps: list[float] = []
    api = build_api_client(kubeconfig=kubeconfig(tmp_path, fake_apiserver), context="fake")
    gw = KubernetesGateway(
        api, retry=RetryPolicy(max_attempts=4, base_delay_s=0.5), sleep=sleeps.append
    )
    return gw, sleeps


# -- client ----------------------------------------------------------------------------


def test_kubeconfig_context_and_connection(fake_apiserver: FakeApiServer, tmp_path) -> None:
    api = build_api_client(kubeconfig=kubeconfig(tmp_path, fake_apiserver), context="fake")
    info = test_connection(api)
    assert (info.git_version, info.major, info.minor) == ("v1.34.0", 1, 34)
    assert info.resource_versions == ("v1", "v1beta2", "v1beta1")
    assert info.dra_version == "v1"


def test_connection_reports_only_beta_dra() -> None:
    with FakeApiServer(resource_versions=("v1beta1",), server_version=(1, 32)) as server:
        api = k8s.ApiClient(k8s.Configuration(host=server.url))
        info = test_connection(api)
        assert (info.minor, info.resource_versions, info.dra_version) == (
            32,
            ("v1beta1",),
            "v1beta1",
        )
    with FakeApiServer(resource_versions=(), server_version=(1, 30)) as server:
        info = test_connection(k8s.ApiClient(k8s.Configuration(host=server.url)))
        assert (info.resource_versions, info.dra_version) == ((), None)


def test_current_context_is_used_when_none_given(fake_apiserver, tmp_path) -> None:
    api = build_api_client(kubeconfig=kubeconfig(tmp_path, fake_apiserver), request_timeout_s=2)
    assert api.configuration.host == "http://127.0.0.1:9"
    with pytest.raises(Retryable):  # connection refused
        test_connection(api)


def test_bad_config_is_permanent(tmp_path, fake_apiserver) -> None:
    with pytest.raises(Permanent, match="does not exist"):
        build_api_client(kubeconfig=str(tmp_path / "missing"))
    with pytest.raises(Permanent, match="nosuch"):
        build_api_client(kubeconfig=kubeconfig(tmp_path, fake_apiserver), context="nosuch")
    with pytest.raises(ValueError):
        build_api_client()


def test_in_cluster_config(tmp_path) -> None:
    (tmp_path / "token").write_text("sa-token")
    (tmp_path / "ca.crt").write_text("-----BEGIN CERTIFICATE-----\n")
    api = build_api_client(
        in_cluster=True,
        token_path=str(tmp_path / "token"),
        ca_path=str(tmp_path / "ca.crt"),
        environ={"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"},
    )
    assert api.configuration.host == "https://10.0.0.1:443"
    assert api.configuration.auth_settings()["BearerToken"]["value"].lower() == "bearer sa-token"
    assert api.configuration.retries is False
    with pytest.raises(Permanent, match="Service host/port is not set"):
        build_api_client(
            in_cluster=True,
            token_path=str(tmp_path / "token"),
            ca_path=str(tmp_path / "ca.crt"),
            environ={},
        )


def test_token_is_sent(fake_apiserver, tmp_path) -> None:
    api = build_api_client(kubeconfig=kubeconfig(tmp_path, fake_apiserver), context="fake")
    test_connection(api)
    headers = {k.lower(): v for k, v in fake_apiserver.request_log[-1].headers.items()}
    assert headers["authorization"].lower() == "bearer s3cret-token"


# -- errors ----------------------------------------------------------------------------


def test_classify_statuses() -> None:
    def exc(status: int, reason: str, body: str = "", headers=None) -> k8s.ApiException:
        e = k8s.ApiException(status=status, reason=reason)
        e.body, e.headers = body, headers or {}
        return e

    assert isinstance(classify(exc(409, "Conflict", '{"reason": "AlreadyExists"}')), AlreadyExists)
    conflict = classify(exc(409, "Conflict", '{"reason": "Conflict", "message": "modified"}'))
    assert isinstance(conflict, Retryable) and conflict.message == "modified"
    r = classify(exc(429, "Too Many Requests", "{}", {"Retry-After": "3"}))
    assert isinstance(r, Retryable) and r.retry_after_s == 3.0
    r = classify(exc(429, "x", '{"details": {"retryAfterSeconds": 5}}'))
    assert r.retry_after_s == 5.0
    assert isinstance(classify(exc(503, "x")), Retryable)
    p = classify(
        exc(
            422,
            "Unprocessable",
            '{"reason": "Invalid", "message": "Pod \\"x\\" is '
            'invalid: spec.containers: Required value"}',
        )
    )
    assert type(p) is Permanent
    assert p.message == 'Pod "x" is invalid: spec.containers: Required value'
    assert p.reason == "Invalid"
    assert isinstance(classify(exc(404, "Not Found", "404 page not found")), NotFound)
    assert isinstance(classify(exc(410, "Gone")), Expired)
    assert type(classify(exc(403, "Forbidden"))) is Permanent
    assert isinstance(classify(urllib3.exceptions.ReadTimeoutError(None, "/", "t")), Retryable)
    assert isinstance(classify(urllib3.exceptions.ProtocolError("aborted")), Retryable)
    assert isinstance(classify(ConnectionRefusedError()), Retryable)
    assert classify(KeyError("x")) is None


def test_parse_retry_after_date() -> None:
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:10 GMT", now=1445412480.0) == 10.0
    assert parse_retry_after("soon") is None
    assert parse_retry_after("") is None


# -- gateway ---------------------------------------------------------------------------


def test_submit_hami_pod_and_retry_is_idempotent(gateway, fake_apiserver) -> None:
    gw, _ = gateway
    m = build_hami(ASSIGN, JOB)
    first = gw.submit(m)
    assert first.created == ("Pod/p-pl-1-w0",)
    assert first.pod["metadata"]["uid"]
    again = gw.submit(m)  # 409 AlreadyExists counts as success
    assert again.created == ()
    assert again.pod["metadata"]["uid"] == first.pod["metadata"]["uid"]


def test_submit_dra_creates_claim_then_pod_then_owner(gateway, fake_apiserver) -> None:
    gw, _ = gateway
    m = build_dra(ASSIGN, JOB, api_version=f"resource.k8s.io/{gw.dra_version()}")
    res = gw.submit(m)
    assert res.created == ("ResourceClaim/p-pl-1-w0-dev", "Pod/p-pl-1-w0")
    posts = [r.path.split("?")[0] for r in fake_apiserver.request_log if r.method == "POST"]
    assert posts == [
        "/apis/resource.k8s.io/v1/namespaces/llmops/resourceclaims",
        "/api/v1/namespaces/llmops/pods",
    ]
    (claim,) = res.claims
    assert claim["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Pod", "name": "p-pl-1-w0", "uid": res.pod["metadata"]["uid"]}
    ]
    # a second submit patches nothing (owner already there) and creates nothing
    again = gw.submit(m)
    assert again.created == () and len(again.claims[0]["metadata"]["ownerReferences"]) == 1
    # deleting the pod garbage-collects the claim
    assert gw.delete(NS, "p-pl-1-w0") is True
    assert fake_apiserver.list("resourceclaims") == []
    assert gw.delete(NS, "p-pl-1-w0", ("p-pl-1-w0-dev",)) is False


def test_submit_with_v1beta1_only_server() -> None:
    with FakeApiServer(resource_versions=("v1beta1",)) as server:
        api = k8s.ApiClient(k8s.Configuration(host=server.url))
        gw = KubernetesGateway(api, sleep=lambda s: None)
        assert gw.dra_version() == "v1beta1"
        res = gw.submit(build_dra(ASSIGN, JOB, api_version="resource.k8s.io/v1beta1"))
        assert (
            res.claims[0]["spec"]["devices"]["requests"][0]["deviceClassName"]
            == "hami-core-gpu.project-hami.io"
        )
        assert res.claims[0]["metadata"]["ownerReferences"][0]["kind"] == "Pod"


def test_name_taken_by_other_placement_is_permanent(gateway) -> None:
    gw, _ = gateway
    gw.submit(build_hami(ASSIGN, JOB))
    other = JobMeta(
        "acme", "job-2", "pl-1", NS, JOB.default, extra_labels={}
    )  # same names, but we fake another owner below
    m = build_hami(ASSIGN, other)
    m.pod["metadata"]["labels"]["console.llmops.io/placement"] = "pl-9"
    with pytest.raises(Permanent, match="belongs to placement 'pl-1', not 'pl-9'"):
        gw.submit(m)


def test_retries_429_honouring_retry_after_and_500_with_backoff(gateway, fake_apiserver) -> None:
    gw, sleeps = gateway
    fake_apiserver.inject_faults(429, 1, retry_after=3, method="POST")
    fake_apiserver.inject_faults(500, 2, method="POST")
    res = gw.submit(build_hami(ASSIGN, JOB))
    assert res.created == ("Pod/p-pl-1-w0",)
    assert sleeps == [3.0, 1.0, 2.0]  # Retry-After, then 0.5*2**1, 0.5*2**2


def test_retries_exhausted_raise_retryable(gateway, fake_apiserver) -> None:
    gw, sleeps = gateway
    fake_apiserver.inject_faults(503, 10, method="GET")
    with pytest.raises(Retryable) as exc:
        gw.list_nodes()
    assert exc.value.status == 503 and "injected fault" in exc.value.message
    assert sleeps == [0.5, 1.0, 2.0]


def test_dropped_connection_on_create_then_409_is_success(gateway, fake_apiserver) -> None:
    gw, sleeps = gateway
    fake_apiserver.inject_faults(action="disconnect", count=1, method="POST")
    res = gw.submit(build_hami(ASSIGN, JOB))
    assert res.created == ("Pod/p-pl-1-w0",) and sleeps == [0.5]


def test_timeout_is_retryable(fake_apiserver) -> None:
    cfg = k8s.Configuration(host=fake_apiserver.url)
    cfg.retries = False  # before the ApiClient builds its pool
    api = k8s.ApiClient(cfg)
    sleeps: list[float] = []
    gw = KubernetesGateway(
        api,
        request_timeout_s=0.3,
        sleep=sleeps.append,
        retry=RetryPolicy(max_attempts=2, base_delay_s=0.1),
    )
    fake_apiserver.inject_faults(action="stall", stall_s=1.0, count=1)
    assert gw.list_nodes().items == []
    assert sleeps == [0.1]


def test_invalid_manifest_is_permanent_with_server_message(gateway) -> None:
    gw, sleeps = gateway
    m = build_hami(ASSIGN, JOB)
    del m.pod["spec"]["containers"][0]["image"]
    with pytest.raises(Permanent) as exc:
        gw.submit(m)
    assert exc.value.status == 422
    assert exc.value.message == (
        'Pod "p-pl-1-w0" is invalid: spec.containers[0].image: Required value'
    )
    assert sleeps == []


def test_list_pods_uses_console_selector(gateway, fake_apiserver) -> None:
    gw, _ = gateway
    gw.submit(build_hami(ASSIGN, JOB))
    fake_apiserver.put(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "stranger", "namespace": NS},
            "spec": {"containers": [{"name": "c", "image": "i"}]},
        }
    )
    assert [p["metadata"]["name"] for p in gw.list_pods(NS).items] == ["p-pl-1-w0"]
    assert [p["metadata"]["name"] for p in gw.list_pods().items] == ["p-pl-1-w0"]
    assert gw.get_pod(NS, "nope") is None


def test_watch_streams_changes_and_relists_on_410(gateway, fake_apiserver) -> None:
    gw, _ = gateway
    res = gw.submit(build_hami(ASSIGN, JOB))
    rv = res.pod["metadata"]["resourceVersion"]
    fake_apiserver.set_pod_status(NS, "p-pl-1-w0", {"phase": "Running"})
    events = list(gw.watch_pods(NS, resource_version=rv, timeout_s=1))
    assert [(e.type, e.object["status"]["phase"]) for e in events] == [("MODIFIED", "Running")]
    last_rv = events[-1].resource_version
    fake_apiserver.compact()
    fake_apiserver.set_pod_status(NS, "p-pl-1-w0", {"phase": "Succeeded"})
    events = list(gw.watch_pods(NS, resource_version="2", timeout_s=1))
    assert events[0].type == "RELISTED"
    assert [p["status"]["phase"] for p in events[0].objects] == ["Succeeded"]
    assert int(events[0].resource_version) > int(last_rv)


def test_watch_without_resource_version_lists_first(gateway, fake_apiserver) -> None:
    gw, _ = gateway
    gw.submit(build_hami(ASSIGN, JOB))

    opened = fake_apiserver.watches_started

    def later() -> None:  # once the watch after the list is open
        until(lambda: fake_apiserver.watches_started > opened, "the watch to open")
        fake_apiserver.set_pod_status(NS, "p-pl-1-w0", {"phase": "Running"})

    t = threading.Thread(target=later)
    t.start()
    events = list(gw.watch_pods(None, timeout_s=1))
    t.join()
    assert [e.type for e in events] == ["RELISTED", "MODIFIED"]
    assert [p["metadata"]["name"] for p in events[0].objects] == ["p-pl-1-w0"]


def test_list_nodes_and_slices(gateway, fake_apiserver) -> None:
    gw, _ = gateway
    fake_apiserver.put({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-a"}})
    fake_apiserver.put(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": "node-a-hami"},
            "spec": {
                "driver": "hami-core-gpu.project-hami.io",
                "nodeName": "node-a",
                "pool": {"name": "node-a", "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": "hami-gpu-0"}],
            },
        }
    )
    assert [n["metadata"]["name"] for n in gw.list_nodes().items] == ["node-a"]
    (s,) = gw.list_resource_slices().items
    assert s["spec"]["devices"] == [{"name": "hami-gpu-0"}]
