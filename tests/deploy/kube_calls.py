"""Which Kubernetes API permissions the console's code needs, found in its source.

:func:`collect` reads every first-party module that imports ``kubernetes`` (today
``scheduling/kube/``) and finds each use of a method of the official client's API classes
(``CoreV1Api.create_namespaced_pod``, ``ResourceV1Api.list_resource_slice``,
``CustomObjectsApi.list_namespaced_custom_object`` ...), called or passed on as a function.
:data:`CALLS` and :data:`CUSTOM_OBJECT_CALLS` turn each into the RBAC grant it needs,
``(apiGroup, resource, verb)`` with the verbs of the Kubernetes authorization docs ("Request
verbs"): GET one object -> get, GET a collection -> list, with ``watch=True`` or through
``kubernetes.watch.Watch().stream`` -> watch, POST -> create, PUT -> update, PATCH -> patch,
DELETE -> delete / deletecollection. ``None`` marks discovery calls (``/version``, ``/apis``),
which the built-in ClusterRole ``system:discovery`` grants to every authenticated user.

A method missing from the tables is reported, never guessed: code that starts calling
``patch_namespaced_job`` fails tests/deploy/test_rbac.py until the table says what it needs
and deploy/rbac/rbac.yaml grants it. ``test_table_agrees_with_the_client`` checks every entry
against the HTTP method and path the client itself sends. A method name two API groups share
(``create_namespaced_event`` is in CoreV1Api and EventsV1Api) maps to the one the console uses.
"""

from __future__ import annotations

import ast
import inspect
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache

from kubernetes import client as k8s

from tests.deploy.sources import Module, first_party_modules, imports_module, string_constants

Grant = tuple[str, str, str]  # (apiGroup, resource, verb); resource may be "pods/status"

_RESOURCE = "resource.k8s.io"

#: Client method -> the grant it needs (``None``: discovery, granted to all authenticated).
CALLS: dict[str, Grant | None] = {
    # core/v1
    "create_namespaced_pod": ("", "pods", "create"),
    "read_namespaced_pod": ("", "pods", "get"),
    "read_namespaced_pod_status": ("", "pods/status", "get"),
    "delete_namespaced_pod": ("", "pods", "delete"),
    "patch_namespaced_pod": ("", "pods", "patch"),
    "list_namespaced_pod": ("", "pods", "list"),
    "list_pod_for_all_namespaces": ("", "pods", "list"),
    "list_node": ("", "nodes", "list"),
    "read_node": ("", "nodes", "get"),
    "patch_node": ("", "nodes", "patch"),
    "list_namespace": ("", "namespaces", "list"),
    "read_namespace": ("", "namespaces", "get"),
    "create_namespace": ("", "namespaces", "create"),
    "patch_namespace": ("", "namespaces", "patch"),
    "create_namespaced_service": ("", "services", "create"),
    "read_namespaced_service": ("", "services", "get"),
    "patch_namespaced_service": ("", "services", "patch"),
    "create_namespaced_event": ("", "events", "create"),
    # batch/v1, apps/v1 (workloads users create with kubectl)
    "list_job_for_all_namespaces": ("batch", "jobs", "list"),
    "list_namespaced_job": ("batch", "jobs", "list"),
    "read_namespaced_job": ("batch", "jobs", "get"),
    "patch_namespaced_job": ("batch", "jobs", "patch"),
    "patch_namespaced_job_status": ("batch", "jobs/status", "patch"),
    "list_deployment_for_all_namespaces": ("apps", "deployments", "list"),
    "patch_namespaced_deployment": ("apps", "deployments", "patch"),
    "list_stateful_set_for_all_namespaces": ("apps", "statefulsets", "list"),
    "patch_namespaced_stateful_set": ("apps", "statefulsets", "patch"),
    # resource.k8s.io (DRA), every served version has the same method names
    "create_namespaced_resource_claim": (_RESOURCE, "resourceclaims", "create"),
    "read_namespaced_resource_claim": (_RESOURCE, "resourceclaims", "get"),
    "patch_namespaced_resource_claim": (_RESOURCE, "resourceclaims", "patch"),
    "delete_namespaced_resource_claim": (_RESOURCE, "resourceclaims", "delete"),
    "list_resource_claim_for_all_namespaces": (_RESOURCE, "resourceclaims", "list"),
    "list_resource_slice": (_RESOURCE, "resourceslices", "list"),
    "list_device_class": (_RESOURCE, "deviceclasses", "list"),
    "create_namespaced_resource_claim_template": (_RESOURCE, "resourceclaimtemplates", "create"),
    "create_device_taint_rule": (_RESOURCE, "devicetaintrules", "create"),
    "delete_device_taint_rule": (_RESOURCE, "devicetaintrules", "delete"),
    "list_device_taint_rule": (_RESOURCE, "devicetaintrules", "list"),
    # discovery (non-resource URLs)
    "get_code": None,
    "get_api_versions": None,
    "get_api_group": None,
    "get_api_resources": None,
}

#: CustomObjectsApi method -> (verb, subresource); apiGroup and resource come from the call's
#: ``group`` and ``plural`` arguments (string literals or module constants).
CUSTOM_OBJECT_CALLS: dict[str, tuple[str, str]] = {
    "create_namespaced_custom_object": ("create", ""),
    "get_namespaced_custom_object": ("get", ""),
    "get_cluster_custom_object": ("get", ""),
    "list_namespaced_custom_object": ("list", ""),
    "list_cluster_custom_object": ("list", ""),
    "list_custom_object_for_all_namespaces": ("list", ""),
    "patch_namespaced_custom_object": ("patch", ""),
    "patch_namespaced_custom_object_status": ("patch", "status"),
    "replace_namespaced_custom_object": ("update", ""),
    "delete_namespaced_custom_object": ("delete", ""),
}


@cache
def client_methods() -> dict[str, tuple[type, ...]]:
    """Every request method of the client's API classes -> the classes that define it."""
    found: dict[str, list[type]] = defaultdict(list)
    for name in dir(k8s):
        cls = getattr(k8s, name)
        if not (inspect.isclass(cls) and name.endswith("Api")):
            continue
        for method in dir(cls):
            if not method.startswith("_") and hasattr(cls, method + "_with_http_info"):
                found[method].append(cls)
    return {method: tuple(classes) for method, classes in found.items()}


@dataclass
class Collected:
    """What the code needs: each grant with its call sites (``file:line``), and the call sites
    the tables cannot map (a method missing from them, an argument not known statically)."""

    grants: dict[Grant, list[str]] = field(default_factory=lambda: defaultdict(list))
    errors: list[str] = field(default_factory=list)


def _watch_dict_names(function: ast.AST) -> set[str]:
    """Names a function binds to a dict literal with ``"watch": True`` (passed as ``**kw``)."""
    names = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
            for key, value in zip(node.value.keys, node.value.values, strict=True):
                if (
                    isinstance(key, ast.Constant)
                    and key.value == "watch"
                    and isinstance(value, ast.Constant)
                    and value.value is True
                ):
                    names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def _is_watch_call(call: ast.Call, watch_dicts: set[str]) -> bool:
    for kw in call.keywords:
        if kw.arg == "watch" and isinstance(kw.value, ast.Constant) and kw.value.value is True:
            return True
        if kw.arg is None and isinstance(kw.value, ast.Name) and kw.value.id in watch_dicts:
            return True
    return False


def _argument(method: str, call: ast.Call, names: tuple[str, ...], skip: int) -> ast.expr | None:
    """The expression passed for the parameter of CustomObjectsApi.``method`` named one of
    ``names``; ``skip`` positional arguments of ``call`` come before the method's own."""
    params = [
        p
        for p in inspect.signature(getattr(k8s.CustomObjectsApi, method)).parameters
        if p != "self"
    ]
    (name,) = [n for n in names if n in params]
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    index = params.index(name)
    args = call.args[skip:]
    return args[index] if index < len(args) else None


def _resolve(expr: ast.expr | None, constants: dict[str, str]) -> str | None:
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return expr.value
    if isinstance(expr, ast.Name):
        return constants.get(expr.id)
    return None


class _Visitor(ast.NodeVisitor):
    """Walks one module, recording each client-method use into ``out``."""

    def __init__(self, module: Module, out: Collected) -> None:
        self.module, self.out = module, out
        self.constants = string_constants(module.tree)
        self.methods = client_methods()
        self.watch_dicts: set[str] = set()
        self.handled: set[int] = set()

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        outer, self.watch_dicts = self.watch_dicts, self.watch_dicts | _watch_dict_names(node)
        self.generic_visit(node)
        self.watch_dicts = outer

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in self.methods:
            self.handled.add(id(func))
            self._record(
                func.attr, node, node, watch=_is_watch_call(node, self.watch_dicts), skip=0
            )
        elif isinstance(func, ast.Attribute) and func.attr == "stream" and node.args:
            ref = node.args[0]  # kubernetes.watch.Watch().stream(api.list_x, *args)
            if isinstance(ref, ast.Attribute) and ref.attr in self.methods:
                self.handled.add(id(ref))
                self._record(ref.attr, ref, node, watch=True, skip=1)
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in self.methods and id(node) not in self.handled:
            # passed on as a function, e.g. self._list(self.core.list_node)
            self._record(node.attr, node, None, watch=False, skip=0)
        self.generic_visit(node)

    def _record(
        self, method: str, node: ast.AST, call: ast.Call | None, *, watch: bool, skip: int
    ) -> None:
        where = f"{self.module.rel}:{node.lineno}"
        if method in CUSTOM_OBJECT_CALLS:
            grant = self._custom_grant(method, call, skip, where)
        elif method in CALLS:
            grant = CALLS[method]
        else:
            self.out.errors.append(
                f"{where}: {method} is not in tests/deploy/kube_calls.py "
                "CALLS: add the (apiGroup, resource, verb) it needs"
            )
            return
        if grant is None:
            return
        group, resource, verb = grant
        if watch:
            if verb != "list":
                self.out.errors.append(f"{where}: {method} is watched but is no list call")
                return
            verb = "watch"
        self.out.grants[(group, resource, verb)].append(where)

    def _custom_grant(
        self, method: str, call: ast.Call | None, skip: int, where: str
    ) -> Grant | None:
        verb, sub = CUSTOM_OBJECT_CALLS[method]
        group = plural = None
        if call is not None:
            group = _resolve(_argument(method, call, ("group",), skip), self.constants)
            plural = _resolve(
                _argument(method, call, ("plural", "resource_plural"), skip), self.constants
            )
        if group is None or plural is None:
            self.out.errors.append(
                f"{where}: {method}: group and plural must be string "
                "literals or module constants to be checked"
            )
            return None
        return (group, f"{plural}/{sub}" if sub else plural, verb)


def collect(modules: Iterable[Module] | None = None) -> Collected:
    """Grants needed by ``modules`` (default: the first-party modules importing kubernetes)."""
    if modules is None:
        modules = [m for m in first_party_modules() if imports_module(m.tree, "kubernetes")]
    out = Collected()
    for module in modules:
        _Visitor(module, out).visit(module.tree)
    return out


def granted(rules: list[dict]) -> set[Grant]:
    """The ``(apiGroup, resource, verb)`` triples a ClusterRole's rules grant.

    Raises:
        AssertionError: a wildcard, ``resourceNames`` or ``nonResourceURLs`` rule (the
            console needs none, and they cannot be compared call by call).
    """
    out = set()
    for rule in rules:
        assert not rule.get("resourceNames") and not rule.get("nonResourceURLs"), rule
        for group in rule.get("apiGroups") or []:
            for resource in rule.get("resources") or []:
                for verb in rule.get("verbs") or []:
                    assert "*" not in (group, resource, verb), f"wildcard in {rule}"
                    out.add((group, resource, verb))
    return out
