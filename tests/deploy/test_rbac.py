"""The ClusterRole grants exactly the Kubernetes API calls the console's code makes.

The calls are collected from the source (tests/deploy/kube_calls.py); the table that maps a
client method to its grant is checked against the HTTP method and path the official client
sends, so a wrong entry cannot hide a missing permission.
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap

import pytest
import yaml
from kubernetes import client as k8s

from tests.deploy.kube_calls import CALLS, CUSTOM_OBJECT_CALLS, client_methods, collect, granted
from tests.deploy.sources import ROOT, Module

RBAC = ROOT / "deploy" / "rbac" / "rbac.yaml"


def cluster_role() -> dict:
    docs = [d for d in yaml.safe_load_all(RBAC.read_text()) if d]
    (role,) = [d for d in docs if d["kind"] == "ClusterRole"]
    return role


def fmt(grant: tuple[str, str, str]) -> str:
    group, resource, verb = grant
    return f"{verb} {resource}" + (f" ({group})" if group else " (core)")


def test_cluster_role_grants_exactly_what_the_code_calls() -> None:
    needed = collect()
    assert not needed.errors, "unmapped Kubernetes calls:\n  " + "\n  ".join(needed.errors)
    has = granted(cluster_role()["rules"])
    missing = sorted(set(needed.grants) - has)
    extra = sorted(has - set(needed.grants))
    lines = [f"  missing: {fmt(g)}   <- {', '.join(needed.grants[g])}" for g in missing]
    lines += [f"  extra:   {fmt(g)}   (granted, never called)" for g in extra]
    assert not lines, (
        f"ClusterRole in {RBAC.relative_to(ROOT)} differs from the code's calls "
        "(grant exactly these; map new client methods in "
        "tests/deploy/kube_calls.py):\n" + "\n".join(lines)
    )


def test_the_collector_sees_the_adapter_calls() -> None:
    """The known calls of scheduling/kube/ are found, with their verbs (a guard against a
    collector that silently finds nothing)."""
    needed = collect().grants
    assert ("", "pods", "watch") in needed  # list_*_pod(**kw) with kw["watch"] = True
    assert ("", "nodes", "list") in needed  # passed on: self._list(self.core.list_node)
    assert (("resource.k8s.io", "resourceclaims", "patch")) in needed
    assert all(where.startswith("scheduling/kube/") for sites in needed.values() for where in sites)


def _module(source: str) -> Module:
    return Module("pkg/mod.py", ast.parse(textwrap.dedent(source)))


def test_collector_finds_watch_streams_custom_objects_and_unmapped_methods() -> None:
    found = collect(
        [
            _module("""
        from kubernetes import client, watch
        JOBSET_GROUP = "jobset.x-k8s.io"

        def run(api, core, batch):
            for _ in watch.Watch().stream(api.list_namespaced_custom_object, JOBSET_GROUP,
                                          "v1alpha2", "team-a", "jobsets"):
                pass
            api.patch_namespaced_custom_object_status(group=JOBSET_GROUP, version="v1alpha2",
                                                      namespace="ns", plural="jobsets",
                                                      name="j", body={})
            core.list_node(watch=True)
            core.read_namespaced_pod("p", "ns")
            batch.create_namespaced_cron_job("ns", {})
            api.get_namespaced_custom_object(group_of("x"), "v1", "ns", "things", "n")
    """)
        ]
    )
    assert set(found.grants) == {
        ("jobset.x-k8s.io", "jobsets", "watch"),
        ("jobset.x-k8s.io", "jobsets/status", "patch"),
        ("", "nodes", "watch"),
        ("", "pods", "get"),
    }
    assert found.grants[("", "pods", "get")] == ["pkg/mod.py:13"]
    assert len(found.errors) == 2
    assert "create_namespaced_cron_job is not in tests/deploy/kube_calls.py" in found.errors[0]
    assert "get_namespaced_custom_object: group and plural must be" in found.errors[1]


def test_granted_refuses_wildcards() -> None:
    assert granted([{"apiGroups": [""], "resources": ["pods", "nodes"], "verbs": ["list"]}]) == {
        ("", "pods", "list"),
        ("", "nodes", "list"),
    }
    with pytest.raises(AssertionError, match="wildcard"):
        granted([{"apiGroups": [""], "resources": ["*"], "verbs": ["get"]}])


# -- the table against the client -------------------------------------------------------

_REQUEST = re.compile(r"method='(\w+)',\s*resource_path='([^']+)'")
_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch"}


def client_request(cls: type, method: str) -> tuple[str, str]:
    """(HTTP method, path template) the client sends for ``cls.method``."""
    source = inspect.getsource(getattr(cls, f"_{method}_serialize"))
    http, path = _REQUEST.search(source).groups()
    return http, path


def grant_of_request(http: str, path: str) -> tuple[str, str, str] | None:
    """The RBAC grant of a request (Kubernetes authorization docs, "Request verbs");
    ``None`` for a discovery path."""
    parts = [p for p in path.split("/") if p]
    if parts[:2] == ["api", "v1"]:
        group, rest = "", parts[2:]
    elif parts[0] == "apis" and len(parts) >= 3:
        group, rest = parts[1], parts[3:]
    else:
        return None
    if len(rest) > 2 and rest[0] == "namespaces":
        rest = rest[2:]  # namespaced object: drop namespaces/{namespace}
    if not rest:
        return None
    named = len(rest) > 1
    resource = rest[0] + (f"/{rest[2]}" if len(rest) > 2 else "")
    if http in _VERBS:
        verb = _VERBS[http]
    elif http == "GET":
        verb = "get" if named else "list"
    else:
        verb = "delete" if named else "deletecollection"
    return (group, resource, verb)


@pytest.mark.parametrize("method", sorted(CALLS))
def test_table_agrees_with_the_client(method: str) -> None:
    classes = client_methods().get(method)
    assert classes, f"{method} is no method of the kubernetes client"
    derived = {grant_of_request(*client_request(cls, method)) for cls in classes}
    assert CALLS[method] in derived, f"{method}: the client's request needs {derived}"


@pytest.mark.parametrize("method", sorted(CUSTOM_OBJECT_CALLS))
def test_custom_object_table_agrees_with_the_client(method: str) -> None:
    http, path = client_request(k8s.CustomObjectsApi, method)
    group, resource, verb = grant_of_request(http, path)
    assert group == "{group}" and resource.split("/")[0] in ("{plural}", "{resource_plural}")
    sub = resource.partition("/")[2]
    assert CUSTOM_OBJECT_CALLS[method] == (verb, sub)


def test_request_verbs() -> None:
    assert grant_of_request("GET", "/api/v1/namespaces/{namespace}/pods") == ("", "pods", "list")
    assert grant_of_request("GET", "/api/v1/namespaces/{name}") == ("", "namespaces", "get")
    assert grant_of_request(
        "DELETE", "/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims"
    ) == ("resource.k8s.io", "resourceclaims", "deletecollection")
    assert grant_of_request(
        "PATCH", "/apis/batch/v1/namespaces/{namespace}/jobs/{name}/status"
    ) == ("batch", "jobs/status", "patch")
    assert grant_of_request("GET", "/apis/") is None
    assert grant_of_request("GET", "/version/") is None
