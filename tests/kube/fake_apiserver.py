"""An HTTP fake of the Kubernetes API server, good enough for the official ``kubernetes`` client.

It is a real HTTP/1.1 server (stdlib ``http.server`` in a thread on 127.0.0.1, ephemeral port),
so requests go through the client's serialisation, urllib3, sockets and error handling exactly
as against a cluster. It serves:

* ``/version``, ``/api``, ``/api/v1``, ``/apis``, ``/apis/resource.k8s.io`` and
  ``/apis/resource.k8s.io/<v>`` discovery; which resource.k8s.io versions are served is a
  constructor argument (``resource_versions``), an unserved version answers 404 like a real
  server without that API.
* core/v1 ``pods`` (create/get/list/watch/delete/patch, ``/status`` subresource),
  ``services`` (create/get/list/watch/delete/patch),
  ``nodes`` (create/get/list/watch/patch/delete), ``namespaces``
  (create/get/list/patch/delete; deleting one deletes the objects in it);
  resource.k8s.io ``resourceclaims`` (create/get/list/watch/delete/patch) and
  ``resourceslices`` / ``deviceclasses`` (create/get/list/watch/delete).
* One global ``resourceVersion`` counter; every write bumps it and is recorded in a bounded
  event history used by watches. A watch from a version older than the retained history (see
  :meth:`FakeApiServer.compact`) gets an ``ERROR`` event with a 410 ``Expired`` Status, as the
  watch cache does.
* ``labelSelector`` (equality and set-based) and a ``fieldSelector`` subset
  (``metadata.name``, ``metadata.namespace``, ``spec.nodeName``, ``status.phase``).
* 409 ``AlreadyExists`` on a duplicate create, 404 ``NotFound``, 422 ``Invalid`` for objects that
  the real server's validation rejects (missing/invalid names, pods without containers or
  images, claims without device class, malformed quantities, ...), 409 ``Conflict`` for a patch
  carrying a stale ``metadata.resourceVersion``.
* Fault injection (:meth:`FakeApiServer.inject_faults`): the next N matching calls answer a
  given status (429 with ``Retry-After``, 500, 503, ...), drop the connection, or stall.
* Garbage collection by ``ownerReferences`` (synchronous here, background in a cluster): an
  object all of whose owners are gone is deleted; ``propagationPolicy: Orphan`` strips the
  owner reference instead.

resource.k8s.io objects are stored in the v1 shape and converted on the way in and out for
v1beta2 (same shape) and v1beta1 (flat requests, ``devices[].basic``), as the API server's
conversion does.

Simplifications (documented, deliberate): pods are deleted at once (no graceful termination),
strategic-merge patch merges only the lists with well-known merge keys (containers, statuses,
conditions, ownerReferences, resourceClaims) and otherwise behaves like JSON merge patch, and
there is no authentication or admission.
"""

from __future__ import annotations

import contextlib
import copy
import datetime as _dt
import json
import re
import socket
import threading
import time
import uuid as _uuid
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from scheduling.kube.inventory import parse_quantity

RESOURCE_GROUP = "resource.k8s.io"
ALL_RESOURCE_VERSIONS = ("v1", "v1beta2", "v1beta1")


@dataclass(frozen=True)
class _Kind:
    group: str  # "" for core
    plural: str
    kind: str
    namespaced: bool
    short: tuple[str, ...] = ()
    status_subresource: bool = False


KINDS: dict[tuple[str, str], _Kind] = {
    (k.group, k.plural): k
    for k in (
        _Kind("", "pods", "Pod", True, ("po",), True),
        _Kind("", "nodes", "Node", False, ("no",), True),
        _Kind("", "namespaces", "Namespace", False, ("ns",), True),
        _Kind("", "services", "Service", True, ("svc",), True),
        _Kind(RESOURCE_GROUP, "resourceclaims", "ResourceClaim", True, (), True),
        _Kind(RESOURCE_GROUP, "resourceslices", "ResourceSlice", False, ()),
        _Kind(RESOURCE_GROUP, "deviceclasses", "DeviceClass", False, ()),
        _Kind(RESOURCE_GROUP, "resourceclaimtemplates", "ResourceClaimTemplate", True, ()),
        _Kind(RESOURCE_GROUP, "devicetaintrules", "DeviceTaintRule", False, ()),
        _Kind("", "events", "Event", True, ("ev",)),
        _Kind("batch", "jobs", "Job", True, (), True),
        _Kind("apps", "deployments", "Deployment", True, ("deploy",), True),
        _Kind("apps", "statefulsets", "StatefulSet", True, ("sts",), True),
        _Kind("jobset.x-k8s.io", "jobsets", "JobSet", True, (), True),
        _Kind("kubeflow.org", "pytorchjobs", "PyTorchJob", True, (), True),
    )
}

#: API groups besides core and resource.k8s.io, with their served versions.
WORKLOAD_GROUPS: dict[str, tuple[str, ...]] = {
    "batch": ("v1",),
    "apps": ("v1",),
    "jobset.x-k8s.io": ("v1alpha2",),
    "kubeflow.org": ("v1",),
}
TAINT_RULE_VERSION = "v1alpha3"
"""resource.k8s.io version serving only DeviceTaintRule (1.33-1.34 with the feature gate)."""

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
_QUANTITY = re.compile(
    r"^[+-]?(\d+\.?\d*|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?\d+)?$"
)
_LABEL_NAME = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# ------------------------------------------------------------------------------------------
# Errors
# ------------------------------------------------------------------------------------------


class ApiError(Exception):
    """A failure answered as a ``Status`` object."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        *,
        details: dict | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or {}

    def status(self) -> dict:
        out = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details is not None:
            out["details"] = self.details
        return out


def _invalid(kind: _Kind, name: str, causes: list[tuple[str, str]]) -> ApiError:
    msg = "; ".join(f"{f}: {m}" for f, m in causes)
    return ApiError(
        422,
        "Invalid",
        f'{kind.kind} "{name}" is invalid: {msg}',
        details={
            "name": name,
            "group": kind.group,
            "kind": kind.kind,
            "causes": [
                {"reason": "FieldValueInvalid", "message": m, "field": f} for f, m in causes
            ],
        },
    )


# ------------------------------------------------------------------------------------------
# Selectors
# ------------------------------------------------------------------------------------------


def parse_label_selector(text: str) -> Callable[[dict[str, str]], bool]:
    """Compile a label selector string (``a=b,c!=d,e in (x,y),f notin (z),g,!h``).

    Raises:
        ApiError: 400 BadRequest for a malformed selector.
    """
    text = (text or "").strip()
    if not text:
        return lambda labels: True
    # split on commas that are not inside parentheses
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    preds: list[Callable[[dict[str, str]], bool]] = []
    for raw in parts:
        p = raw.strip()
        m = re.fullmatch(r"([^\s!=()]+)\s+(in|notin)\s+\(([^)]*)\)", p)
        if m:
            key, op, vals = m.group(1), m.group(2), {v.strip() for v in m.group(3).split(",")}
            if op == "in":
                preds.append(lambda lb, k=key, vs=vals: lb.get(k) in vs)
            else:
                preds.append(lambda lb, k=key, vs=vals: lb.get(k) not in vs)
            continue
        m = re.fullmatch(r"([^\s!=()]+)\s*(==|=|!=)\s*([^\s!=(),]*)", p)
        if m:
            key, op, val = m.groups()
            if op == "!=":
                preds.append(lambda lb, k=key, v=val: lb.get(k) != v)
            else:
                preds.append(lambda lb, k=key, v=val: lb.get(k) == v)
            continue
        m = re.fullmatch(r"(!?)\s*([^\s!=(),]+)", p)
        if m:
            neg, key = m.groups()
            if neg:
                preds.append(lambda lb, k=key: k not in lb)
            else:
                preds.append(lambda lb, k=key: k in lb)
            continue
        raise ApiError(
            400,
            "BadRequest",
            f'unable to parse requirement: found "{p}", expected a valid selector',
        )
    return lambda labels: all(pr(labels) for pr in preds)


_FIELD_PATHS = {
    "metadata.name": lambda o: o.get("metadata", {}).get("name", ""),
    "metadata.namespace": lambda o: o.get("metadata", {}).get("namespace", ""),
    "spec.nodeName": lambda o: (o.get("spec") or {}).get("nodeName", ""),
    "status.phase": lambda o: (o.get("status") or {}).get("phase", ""),
}


def parse_field_selector(text: str) -> Callable[[dict], bool]:
    """Compile a field selector (``f=v``, ``f==v``, ``f!=v`` over a supported field subset)."""
    text = (text or "").strip()
    if not text:
        return lambda obj: True
    preds = []
    for p in text.split(","):
        m = re.fullmatch(r"\s*([A-Za-z.]+)\s*(==|=|!=)\s*(.*?)\s*", p)
        if not m or m.group(1) not in _FIELD_PATHS:
            raise ApiError(400, "BadRequest", f'"{p.strip()}" is not a known field selector')
        getter, op, val = _FIELD_PATHS[m.group(1)], m.group(2), m.group(3)
        if op == "!=":
            preds.append(lambda o, g=getter, v=val: g(o) != v)
        else:
            preds.append(lambda o, g=getter, v=val: g(o) == v)
    return lambda obj: all(pr(obj) for pr in preds)


# ------------------------------------------------------------------------------------------
# Patches
# ------------------------------------------------------------------------------------------

_MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "containerStatuses": "name",
    "initContainerStatuses": "name",
    "conditions": "type",
    "ownerReferences": "uid",
    "resourceClaims": "name",
    "resourceClaimStatuses": "name",
    "env": "name",
    "ports": "containerPort",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "tolerations": "key",
}


def merge_patch(target: Any, patch: Any, *, strategic: bool = False, key: str = "") -> Any:
    """RFC 7386 JSON merge patch; ``strategic`` merges lists of objects by their merge key."""
    if isinstance(patch, list) and strategic and key in _MERGE_KEYS and isinstance(target, list):
        mk = _MERGE_KEYS[key]
        out = [copy.deepcopy(t) for t in target]
        for item in patch:
            if not isinstance(item, dict) or mk not in item:
                return copy.deepcopy(patch)
            if item.get("$patch") == "delete":
                out = [t for t in out if not (isinstance(t, dict) and t.get(mk) == item[mk])]
                continue
            for i, t in enumerate(out):
                if isinstance(t, dict) and t.get(mk) == item[mk]:
                    out[i] = merge_patch(t, item, strategic=True)
                    break
            else:
                out.append(merge_patch({}, item, strategic=True))
        return out
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            result.pop(k, None)
        else:
            result[k] = merge_patch(result.get(k), v, strategic=strategic, key=k)
    return result


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise ApiError(422, "Invalid", f"json patch path {path!r} must start with /")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def json_patch(doc: Any, ops: list[dict]) -> Any:
    """RFC 6902 JSON patch (add, remove, replace, test, copy, move)."""
    doc = copy.deepcopy(doc)

    def parent(d: Any, parts: list[str]) -> tuple[Any, str]:
        cur = d
        for p in parts[:-1]:
            cur = cur[int(p)] if isinstance(cur, list) else cur[p]
        return cur, parts[-1]

    def get(d: Any, parts: list[str]) -> Any:
        cur = d
        for p in parts:
            cur = cur[int(p)] if isinstance(cur, list) else cur[p]
        return cur

    for op in ops:
        try:
            kind, parts = op["op"], _pointer(op["path"])
            if kind == "test":
                if get(doc, parts) != op["value"]:
                    raise ApiError(422, "Invalid", f"json patch test failed at {op['path']}")
                continue
            if kind in ("copy", "move"):
                src = _pointer(op["from"])
                value = copy.deepcopy(get(doc, src))
                if kind == "move":
                    sp, sk = parent(doc, src)
                    if isinstance(sp, list):
                        sp.pop(int(sk))
                    else:
                        del sp[sk]
                kind, op = "add", {**op, "value": value}
            if not parts:
                if kind in ("add", "replace"):
                    doc = copy.deepcopy(op["value"])
                    continue
                raise ApiError(422, "Invalid", "cannot remove the whole document")
            p, k = parent(doc, parts)
            if kind == "add":
                if isinstance(p, list):
                    p.insert(len(p) if k == "-" else int(k), copy.deepcopy(op["value"]))
                else:
                    p[k] = copy.deepcopy(op["value"])
            elif kind == "replace":
                if isinstance(p, list):
                    p[int(k)] = copy.deepcopy(op["value"])
                else:
                    if k not in p:
                        raise KeyError(k)
                    p[k] = copy.deepcopy(op["value"])
            elif kind == "remove":
                if isinstance(p, list):
                    p.pop(int(k))
                else:
                    del p[k]
            else:
                raise ApiError(422, "Invalid", f"unknown json patch op {kind!r}")
        except (KeyError, IndexError, ValueError, TypeError) as exc:
            raise ApiError(
                422, "Invalid", f"json patch {op.get('op')} {op.get('path')}: {exc!r}"
            ) from None
    return doc


# ------------------------------------------------------------------------------------------
# resource.k8s.io version conversion (storage = v1 shape)
# ------------------------------------------------------------------------------------------

_V1BETA1_REQUEST_FIELDS = (
    "deviceClassName",
    "selectors",
    "allocationMode",
    "count",
    "adminAccess",
    "tolerations",
    "capacity",
)


def _claim_spec_to_v1(spec: dict, version: str) -> dict:
    if version != "v1beta1":
        return copy.deepcopy(spec)
    spec = copy.deepcopy(spec)
    devices = spec.get("devices") or {}
    reqs = []
    for r in devices.get("requests") or []:
        out = {"name": r.get("name")}
        if r.get("firstAvailable") is not None:
            out["firstAvailable"] = r["firstAvailable"]
        exact = {k: r[k] for k in _V1BETA1_REQUEST_FIELDS if k in r}
        if exact:
            out["exactly"] = exact
        reqs.append(out)
    if "requests" in devices:
        devices["requests"] = reqs
    return spec


def _claim_spec_from_v1(spec: dict, version: str) -> dict:
    if version != "v1beta1":
        return copy.deepcopy(spec)
    spec = copy.deepcopy(spec)
    devices = spec.get("devices") or {}
    reqs = []
    for r in devices.get("requests") or []:
        out = {"name": r.get("name")}
        out.update(r.get("exactly") or {})
        if r.get("firstAvailable") is not None:
            out["firstAvailable"] = r["firstAvailable"]
        reqs.append(out)
    if "requests" in devices:
        devices["requests"] = reqs
    return spec


def _slice_spec_to_v1(spec: dict, version: str) -> dict:
    spec = copy.deepcopy(spec)
    if version == "v1beta1":
        spec["devices"] = [
            {"name": d.get("name"), **(d.get("basic") or {})} for d in spec.get("devices") or []
        ]
    return spec


def _slice_spec_from_v1(spec: dict, version: str) -> dict:
    spec = copy.deepcopy(spec)
    if version == "v1beta1":
        spec["devices"] = [
            {"name": d.get("name"), "basic": {k: v for k, v in d.items() if k != "name"}}
            for d in spec.get("devices") or []
        ]
    return spec


def _to_storage(kind: _Kind, obj: dict, version: str) -> dict:
    obj = copy.deepcopy(obj)
    if kind.plural == "resourceclaims" and "spec" in obj:
        obj["spec"] = _claim_spec_to_v1(obj["spec"], version)
    if kind.plural == "resourceslices" and "spec" in obj:
        obj["spec"] = _slice_spec_to_v1(obj["spec"], version)
    return obj


def _from_storage(kind: _Kind, obj: dict, version: str) -> dict:
    out = copy.deepcopy(obj)
    out["apiVersion"] = f"{kind.group}/{version}" if kind.group else "v1"
    out["kind"] = kind.kind
    if kind.plural == "resourceclaims" and "spec" in out:
        out["spec"] = _claim_spec_from_v1(out["spec"], version)
    if kind.plural == "resourceslices" and "spec" in out:
        out["spec"] = _slice_spec_from_v1(out["spec"], version)
    return out


# ------------------------------------------------------------------------------------------
# Validation (a subset of the real server's, enough to reject what a buggy builder emits)
# ------------------------------------------------------------------------------------------


def _check_quantity(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return True
    return isinstance(value, str) and bool(_QUANTITY.match(value))


def _check_labels(meta: dict, causes: list[tuple[str, str]]) -> None:
    for k, v in (meta.get("labels") or {}).items():
        name = k.split("/", 1)[-1]
        prefix = k.split("/", 1)[0] if "/" in k else ""
        if (
            len(name) > 63
            or not _LABEL_NAME.match(name)
            or (prefix and not _DNS1123_SUBDOMAIN.match(prefix))
        ):
            causes.append(("metadata.labels", f"Invalid value: {k!r}: invalid label key"))
        if not isinstance(v, str) or len(v) > 63 or not _LABEL_VALUE.match(v):
            causes.append(("metadata.labels", f"Invalid value: {v!r}: invalid label value"))
    for k, v in (meta.get("annotations") or {}).items():
        if not isinstance(v, str):
            causes.append(("metadata.annotations", f"Invalid value: {k!r}: must be a string"))


def _is_integer_quantity(value: Any) -> bool:
    try:
        q = parse_quantity(value)
    except ValueError:
        return False
    return q == q.to_integral_value()


def _is_extended(resource: str) -> bool:
    """Extended resources: domain-qualified names outside kubernetes.io (integer-only)."""
    return "/" in resource and not resource.startswith(("kubernetes.io/", "requests."))


def _validate_pod(obj: dict, causes: list[tuple[str, str]]) -> None:
    spec = obj.get("spec") or {}
    containers = spec.get("containers") or []
    if not containers:
        causes.append(("spec.containers", "Required value"))
    claim_names = set()
    for i, rc in enumerate(spec.get("resourceClaims") or []):
        n = rc.get("name", "")
        if not _DNS1123_LABEL.match(n or ""):
            causes.append((f"spec.resourceClaims[{i}].name", f"Invalid value: {n!r}"))
        srcs = [k for k in ("resourceClaimName", "resourceClaimTemplateName") if rc.get(k)]
        if len(srcs) != 1:
            causes.append(
                (
                    f"spec.resourceClaims[{i}]",
                    "must specify exactly one of resourceClaimName, resourceClaimTemplateName",
                )
            )
        claim_names.add(n)
    seen: set[str] = set()
    for group in ("initContainers", "containers"):
        for i, c in enumerate(spec.get(group) or []):
            path = f"spec.{group}[{i}]"
            n = c.get("name", "")
            if not n:
                causes.append((f"{path}.name", "Required value"))
            elif not _DNS1123_LABEL.match(n) or len(n) > 63:
                causes.append(
                    (
                        f"{path}.name",
                        f"Invalid value: {n!r}: a lowercase RFC 1123 "
                        "label must consist of lower case alphanumeric characters or '-'",
                    )
                )
            elif n in seen:
                causes.append((f"{path}.name", f"Duplicate value: {n!r}"))
            seen.add(n)
            if not c.get("image"):
                causes.append((f"{path}.image", "Required value"))
            res = c.get("resources") or {}
            limits, requests = res.get("limits") or {}, res.get("requests") or {}
            for part, values in (("limits", limits), ("requests", requests)):
                for rname, q in values.items():
                    if not _check_quantity(q):
                        causes.append(
                            (
                                f"{path}.resources.{part}[{rname}]",
                                f"Invalid value: {q!r}: quantities must match the "
                                "regular expression",
                            )
                        )
                    elif _is_extended(rname) and not _is_integer_quantity(q):
                        causes.append(
                            (
                                f"{path}.resources.{part}[{rname}]",
                                f"Invalid value: {q!r}: must be an integer",
                            )
                        )
            for rname, q in requests.items():
                if _is_extended(rname):
                    if rname not in limits:
                        causes.append(
                            (
                                f"{path}.resources.limits",
                                f"Required value: Limit must be set for non "
                                f"overcommitable resources ({rname})",
                            )
                        )
                    elif str(limits[rname]) != str(q):
                        causes.append(
                            (
                                f"{path}.resources.requests[{rname}]",
                                "Invalid value: must be equal to " + rname + " limit",
                            )
                        )
            for j, cl in enumerate(res.get("claims") or []):
                if cl.get("name") not in claim_names:
                    causes.append(
                        (
                            f"{path}.resources.claims[{j}].name",
                            f"Unsupported value: {cl.get('name')!r}: must be one of "
                            f"{sorted(claim_names)}",
                        )
                    )


def _validate_claim(obj: dict, causes: list[tuple[str, str]]) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        causes.append(("spec", "Required value"))
        return
    reqs = (spec.get("devices") or {}).get("requests") or []
    names: set[str] = set()
    for i, r in enumerate(reqs):
        path = f"spec.devices.requests[{i}]"
        n = r.get("name", "")
        if not n or not _DNS1123_LABEL.match(n):
            causes.append((f"{path}.name", f"Invalid value: {n!r}"))
        if n in names:
            causes.append((f"{path}.name", f"Duplicate value: {n!r}"))
        names.add(n)
        exact, first = r.get("exactly"), r.get("firstAvailable")
        if (exact is None) == (first is None):
            causes.append((path, "exactly one of `exactly` or `firstAvailable` is required"))
        subs = (
            [("exactly", exact)]
            if exact
            else [(f"firstAvailable[{j}]", s) for j, s in enumerate(first or [])]
        )
        for sub_path, sub in subs:
            sp = f"{path}.{sub_path}"
            if not sub.get("deviceClassName"):
                causes.append((f"{sp}.deviceClassName", "Required value"))
            mode = sub.get("allocationMode", "ExactCount")
            if mode not in ("ExactCount", "All"):
                causes.append((f"{sp}.allocationMode", f"Unsupported value: {mode!r}"))
            count = sub.get("count", 1)
            if mode == "ExactCount" and (not isinstance(count, int) or count <= 0):
                causes.append(
                    (f"{sp}.count", f"Invalid value: {count!r}: must be greater than zero")
                )
            for j, sel in enumerate(sub.get("selectors") or []):
                if not ((sel.get("cel") or {}).get("expression")):
                    causes.append((f"{sp}.selectors[{j}].cel.expression", "Required value"))
            for cname, q in ((sub.get("capacity") or {}).get("requests") or {}).items():
                if not _check_quantity(q):
                    causes.append((f"{sp}.capacity.requests[{cname}]", f"Invalid value: {q!r}"))
    for i, c in enumerate(spec.get("devices", {}).get("constraints") or []):
        for rn in c.get("requests") or []:
            if rn not in names:
                causes.append(
                    (
                        f"spec.devices.constraints[{i}].requests",
                        f"Invalid value: {rn!r}: must be the name of a request",
                    )
                )


def _validate_slice(obj: dict, causes: list[tuple[str, str]]) -> None:
    spec = obj.get("spec") or {}
    if not spec.get("driver"):
        causes.append(("spec.driver", "Required value"))
    if not (spec.get("pool") or {}).get("name"):
        causes.append(("spec.pool.name", "Required value"))
    for i, d in enumerate(spec.get("devices") or []):
        if not _DNS1123_LABEL.match(d.get("name") or ""):
            causes.append((f"spec.devices[{i}].name", f"Invalid value: {d.get('name')!r}"))


def _validate_service(obj: dict, causes: list[tuple[str, str]]) -> None:
    spec = obj.get("spec") or {}
    name = (obj.get("metadata") or {}).get("name") or ""
    if name and not re.match(r"^[a-z]([-a-z0-9]*[a-z0-9])?$", name):
        causes.append(
            ("metadata.name", f"Invalid value: {name!r}: a DNS-1035 label must start with a letter")
        )
    if spec.get("clusterIP") not in (None, "", "None"):
        causes.append(("spec.clusterIP", "Invalid value: only None or unset here"))
    ports = spec.get("ports") or []
    if not ports and spec.get("clusterIP") != "None":
        causes.append(("spec.ports", "Required value"))
    seen = set()
    for i, port in enumerate(ports):
        number = port.get("port")
        if not isinstance(number, int) or not 1 <= number <= 65535:
            causes.append((f"spec.ports[{i}].port", f"Invalid value: {number!r}"))
        if port.get("name") in seen or (len(ports) > 1 and not port.get("name")):
            causes.append((f"spec.ports[{i}].name", "Duplicate or missing value"))
        seen.add(port.get("name"))
    _check_labels({"labels": spec.get("selector") or {}}, causes)


def validate(kind: _Kind, obj: dict) -> None:
    """Raise a 422 ``Invalid`` ApiError when ``obj`` (storage shape) would be rejected."""
    meta = obj.get("metadata") or {}
    name = meta.get("name") or ""
    causes: list[tuple[str, str]] = []
    if not name:
        causes.append(("metadata.name", "Required value: name or generateName is required"))
    elif len(name) > 253 or not _DNS1123_SUBDOMAIN.match(name):
        causes.append(
            (
                "metadata.name",
                f"Invalid value: {name!r}: a lowercase RFC 1123 "
                "subdomain must consist of lower case alphanumeric characters, '-' or "
                "'.', and must start and end with an alphanumeric character",
            )
        )
    _check_labels(meta, causes)
    for i, ref in enumerate(meta.get("ownerReferences") or []):
        for f in ("apiVersion", "kind", "name", "uid"):
            if not ref.get(f):
                causes.append((f"metadata.ownerReferences[{i}].{f}", "Required value"))
    if (
        kind.namespaced is False
        and kind.plural == "namespaces"
        and name
        and (len(name) > 63 or not _DNS1123_LABEL.match(name))
    ):
        causes.append(
            (
                "metadata.name",
                f"Invalid value: {name!r}: a lowercase RFC 1123 "
                "label must consist of lower case alphanumeric characters or '-'",
            )
        )
    if kind.plural == "pods":
        _validate_pod(obj, causes)
    elif kind.plural == "resourceclaims":
        _validate_claim(obj, causes)
    elif kind.plural == "resourceslices":
        _validate_slice(obj, causes)
    elif kind.plural == "services":
        _validate_service(obj, causes)
    if causes:
        raise _invalid(kind, name, causes)


# ------------------------------------------------------------------------------------------
# Faults
# ------------------------------------------------------------------------------------------


@dataclass
class Fault:
    """One injected fault: ``status`` (e.g. 429/500) or ``action`` ``"disconnect"``/``"stall"``.

    Attributes:
        remaining: how many more matching requests get this fault.
        status: HTTP status to answer (ignored for actions).
        retry_after: value of the Retry-After header (seconds), if any.
        action: ``""`` (answer status), ``"disconnect"`` (close without answer),
            ``"stall"`` (sleep ``stall_s`` then answer normally).
        method / path_contains: restrict to matching requests (None = any).
    """

    remaining: int
    status: int = 500
    retry_after: int | None = None
    action: str = ""
    stall_s: float = 0.0
    method: str | None = None
    path_contains: str | None = None

    def matches(self, method: str, path: str) -> bool:
        if self.method and self.method.upper() != method:
            return False
        return not (self.path_contains and self.path_contains not in path)


_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    409: "Conflict",
    410: "Gone",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


# ------------------------------------------------------------------------------------------
# Server
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RecordedRequest:
    """One request as received (for assertions on order, paths and headers)."""

    method: str
    path: str
    headers: dict


@dataclass
class _Event:
    rv: int
    plural: str
    type: str
    obj: dict
    old: dict | None


@dataclass
class _WatchRequest:
    kind: _Kind
    version: str
    namespace: str | None
    labels: Callable[[dict[str, str]], bool]
    fields: Callable[[dict], bool]

    def matches(self, obj: dict | None) -> bool:
        if obj is None:
            return False
        meta = obj.get("metadata") or {}
        if self.namespace is not None and meta.get("namespace") != self.namespace:
            return False
        return self.labels(meta.get("labels") or {}) and self.fields(obj)


class FakeApiServer:
    """In-process Kubernetes API server fake (see module docstring).

    Args:
        resource_versions: served resource.k8s.io versions, preferred first
            (e.g. ``("v1beta1",)`` for a 1.32 cluster; ``()`` = no DRA API).
        server_version: (major, minor) reported by ``/version``.
        namespaces: namespaces that exist; None = any namespace is accepted.
        history_limit: watch events retained; older resourceVersions get 410.
        watch_timeout_s: watch duration when the client gives no ``timeoutSeconds``.
        device_taint_rules: serve resource.k8s.io/v1alpha3 DeviceTaintRule (KEP-5055).
        workload_groups: workload API groups served (batch, apps, jobset.x-k8s.io,
            kubeflow.org; leaving one out is a cluster without that CRD).

    Use as a context manager or call :meth:`start` / :meth:`stop`.
    """

    def __init__(
        self,
        *,
        resource_versions: tuple[str, ...] = ALL_RESOURCE_VERSIONS,
        server_version: tuple[int, int] = (1, 34),
        namespaces: tuple[str, ...] | None = None,
        history_limit: int = 1000,
        watch_timeout_s: float = 5.0,
        device_taint_rules: bool = False,
        workload_groups: tuple[str, ...] = tuple(WORKLOAD_GROUPS),
    ) -> None:
        unknown = set(resource_versions) - set(ALL_RESOURCE_VERSIONS)
        if unknown:
            raise ValueError(f"unsupported resource.k8s.io versions {sorted(unknown)}")
        self.resource_versions = tuple(resource_versions)
        self.device_taint_rules = device_taint_rules
        self.workload_groups = {g: WORKLOAD_GROUPS[g] for g in workload_groups}
        self.server_version = server_version
        self.namespaces = None if namespaces is None else set(namespaces)
        self.history_limit = history_limit
        self.watch_timeout_s = watch_timeout_s
        self.watches_started = 0  # watch streams opened so far (tests wait on it, never sleep)
        self._lock = threading.Condition()
        self._store: dict[str, dict[tuple[str, str], dict]] = {k.plural: {} for k in KINDS.values()}
        self._rv = 1
        self._history: list[_Event] = []
        self._compacted_rv = 1  # events with rv <= this are gone
        self._faults: list[Fault] = []
        self._stopping = False
        self.requests: list[tuple[str, str]] = []
        self.request_log: list[RecordedRequest] = []
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def served_groups(self) -> dict[str, tuple[str, ...]]:
        """Served API groups (besides core) -> versions, preferred first."""
        out = dict(self.workload_groups)
        resource = list(self.resource_versions)
        if self.device_taint_rules:
            resource.append(TAINT_RULE_VERSION)
        if resource:
            out[RESOURCE_GROUP] = tuple(resource)
        return out

    def kind_served(self, group: str, version: str, plural: str) -> bool:
        """Whether ``plural`` is served in ``group/version`` (DeviceTaintRule only in
        :data:`TAINT_RULE_VERSION`, which serves nothing else)."""
        if group != RESOURCE_GROUP:
            return True
        if version == TAINT_RULE_VERSION:
            return plural == "devicetaintrules"
        return plural != "devicetaintrules"

    # -- lifecycle -----------------------------------------------------------------------

    @property
    def url(self) -> str:
        assert self._httpd is not None, "server not started"
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeApiServer:
        server = self

        class Handler(_Handler):
            fake = server

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        with self._lock:
            self._stopping = True
            self._lock.notify_all()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> FakeApiServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- test helpers --------------------------------------------------------------------

    @property
    def resource_version(self) -> int:
        """Current global resourceVersion."""
        with self._lock:
            return self._rv

    def inject_faults(
        self,
        status: int = 500,
        count: int = 1,
        *,
        retry_after: int | None = None,
        action: str = "",
        stall_s: float = 0.0,
        method: str | None = None,
        path_contains: str | None = None,
    ) -> Fault:
        """Make the next ``count`` matching requests fail (see :class:`Fault`)."""
        if action not in ("", "disconnect", "stall"):
            raise ValueError(f"unknown fault action {action!r}")
        fault = Fault(count, status, retry_after, action, stall_s, method, path_contains)
        with self._lock:
            self._faults.append(fault)
        return fault

    def compact(self) -> int:
        """Drop the whole watch history (like etcd compaction); returns the compacted rv."""
        with self._lock:
            self._history.clear()
            self._compacted_rv = self._rv
            return self._rv

    def put(self, obj: dict) -> dict:
        """Create or replace an object directly (e.g. Nodes, ResourceSlices from fixtures).

        ``obj`` must carry apiVersion and kind; resource.k8s.io objects may be in any served
        or unserved version and are converted to storage. Returns the stored object.
        """
        kind, version = _kind_of(obj)
        with self._lock:
            stored = _to_storage(kind, obj, version)
            ns = stored["metadata"].get("namespace", "") if kind.namespaced else ""
            if kind.namespaced and not ns:
                stored["metadata"]["namespace"] = ns = "default"
            validate(kind, stored)
            old = self._store[kind.plural].get((ns, stored["metadata"]["name"]))
            # an object keeps its uid when replaced, a new one gets one (as a create would)
            stored["metadata"].setdefault(
                "uid", old["metadata"].get("uid") if old else str(_uuid.uuid4())
            )
            if kind.plural == "namespaces" and self.namespaces is not None:
                self.namespaces.add(stored["metadata"]["name"])
            self._write(kind, stored, "MODIFIED" if old else "ADDED", old=old)
            return copy.deepcopy(stored)

    def get(self, plural: str, name: str, namespace: str = "") -> dict | None:
        """Stored object (v1 storage shape) or None."""
        with self._lock:
            obj = self._store[plural].get((namespace, name))
            return copy.deepcopy(obj) if obj else None

    def list(self, plural: str) -> list[dict]:
        """All stored objects of a kind (storage shape), sorted by namespace/name."""
        with self._lock:
            return [copy.deepcopy(o) for _, o in sorted(self._store[plural].items())]

    def set_pod_status(self, namespace: str, name: str, status: dict) -> dict:
        """Replace a pod's status (as kubelet would), emitting a MODIFIED event."""
        with self._lock:
            old = self._store["pods"].get((namespace, name))
            if old is None:
                raise KeyError(f"pod {namespace}/{name} not found")
            new = copy.deepcopy(old)
            new["status"] = copy.deepcopy(status)
            self._write(KINDS[("", "pods")], new, "MODIFIED", old=old)
            return copy.deepcopy(new)

    # -- internals (called with self._lock held) ------------------------------------------

    def _take_fault(self, method: str, path: str) -> Fault | None:
        with self._lock:
            for f in self._faults:
                if f.remaining > 0 and f.matches(method, path):
                    f.remaining -= 1
                    return f
            return None

    def _next_rv(self) -> int:
        self._rv += 1
        return self._rv

    def _write(self, kind: _Kind, obj: dict, etype: str, *, old: dict | None) -> dict:
        meta = obj.setdefault("metadata", {})
        rv = self._next_rv()
        key = (meta.get("namespace", "") if kind.namespaced else "", meta["name"])
        if etype == "DELETED":
            self._store[kind.plural].pop(key, None)
            obj = copy.deepcopy(obj)
            obj["metadata"]["resourceVersion"] = str(rv)
        else:
            meta["resourceVersion"] = str(rv)
            self._store[kind.plural][key] = obj
        self._history.append(
            _Event(rv, kind.plural, etype, copy.deepcopy(obj), copy.deepcopy(old) if old else None)
        )
        if len(self._history) > self.history_limit:
            dropped = self._history[: len(self._history) - self.history_limit]
            del self._history[: len(dropped)]
            self._compacted_rv = dropped[-1].rv
        self._lock.notify_all()
        return obj

    def _live_uids(self) -> set[str]:
        return {o["metadata"].get("uid") for objs in self._store.values() for o in objs.values()}

    def _collect_garbage(self) -> None:
        """Delete objects whose owners are all gone (repeat until stable)."""
        while True:
            live = self._live_uids()
            victims = []
            for plural, objs in self._store.items():
                for o in objs.values():
                    refs = o["metadata"].get("ownerReferences") or []
                    if refs and not any(r.get("uid") in live for r in refs):
                        victims.append((plural, o))
            if not victims:
                return
            for plural, o in victims:
                self._write(_kind_by_plural(plural), copy.deepcopy(o), "DELETED", old=o)

    def _orphan(self, owner_uid: str) -> None:
        for plural, objs in self._store.items():
            for o in list(objs.values()):
                refs = o["metadata"].get("ownerReferences") or []
                if any(r.get("uid") == owner_uid for r in refs):
                    new = copy.deepcopy(o)
                    new["metadata"]["ownerReferences"] = [
                        r for r in refs if r.get("uid") != owner_uid
                    ]
                    if not new["metadata"]["ownerReferences"]:
                        del new["metadata"]["ownerReferences"]
                    self._write(_kind_by_plural(plural), new, "MODIFIED", old=o)

    # -- verbs ---------------------------------------------------------------------------

    def _check_namespace(self, ns: str) -> None:
        if self.namespaces is not None and ns not in self.namespaces:
            raise ApiError(
                404,
                "NotFound",
                f'namespaces "{ns}" not found',
                details={"name": ns, "kind": "namespaces"},
            )

    def create(self, kind: _Kind, version: str, ns: str, body: dict) -> dict:
        if not isinstance(body, dict):
            raise ApiError(400, "BadRequest", "the body of the request was not a JSON object")
        obj = _to_storage(kind, body, version)
        meta = obj.setdefault("metadata", {})
        if meta.get("generateName") and not meta.get("name"):
            meta["name"] = meta["generateName"] + _uuid.uuid4().hex[:5]
        if kind.namespaced:
            if meta.get("namespace") and meta["namespace"] != ns:
                raise ApiError(
                    400,
                    "BadRequest",
                    "the namespace of the provided object does "
                    "not match the namespace sent on the request",
                )
            meta["namespace"] = ns
        validate(kind, obj)
        with self._lock:
            if kind.namespaced:
                self._check_namespace(ns)
            key = (ns if kind.namespaced else "", meta["name"])
            if key in self._store[kind.plural]:
                raise ApiError(
                    409,
                    "AlreadyExists",
                    f"{kind.plural}{'.' + kind.group if kind.group else ''} "
                    f'"{meta["name"]}" already exists',
                    details={"name": meta["name"], "group": kind.group, "kind": kind.plural},
                )
            meta["uid"] = str(_uuid.uuid4())
            meta["creationTimestamp"] = _now()
            meta.setdefault("generation", 1)
            if kind.plural != "nodes":
                obj.pop("status", None)
            if kind.plural == "pods":
                spec = obj["spec"]
                spec.setdefault("restartPolicy", "Always")
                spec.setdefault("schedulerName", "default-scheduler")
                spec.setdefault("terminationGracePeriodSeconds", 30)
                spec.setdefault("dnsPolicy", "ClusterFirst")
                obj["status"] = {"phase": "Pending", "qosClass": _qos_class(spec)}
            if kind.plural == "namespaces":
                obj["status"] = {"phase": "Active"}
                if self.namespaces is not None:
                    self.namespaces.add(meta["name"])
            stored = self._write(kind, obj, "ADDED", old=None)
            self._collect_garbage()
            return _from_storage(kind, stored, version)

    def read(self, kind: _Kind, version: str, ns: str, name: str) -> dict:
        with self._lock:
            obj = self._store[kind.plural].get((ns if kind.namespaced else "", name))
            if obj is None:
                raise _not_found(kind, name)
            return _from_storage(kind, obj, version)

    def list_objects(self, kind: _Kind, version: str, ns: str | None, query: dict) -> dict:
        labels = parse_label_selector(query.get("labelSelector", ""))
        fields = parse_field_selector(query.get("fieldSelector", ""))
        with self._lock:
            items = []
            for (ons, _name), o in sorted(self._store[kind.plural].items()):
                if ns is not None and ons != ns:
                    continue
                if labels(o["metadata"].get("labels") or {}) and fields(o):
                    items.append(_from_storage(kind, o, version))
            for it in items:
                it.pop("apiVersion", None)
                it.pop("kind", None)
            return {
                "kind": kind.kind + "List",
                "apiVersion": f"{kind.group}/{version}" if kind.group else "v1",
                "metadata": {"resourceVersion": str(self._rv)},
                "items": items,
            }

    def delete(self, kind: _Kind, version: str, ns: str, name: str, body: dict | None) -> dict:
        policy = (body or {}).get("propagationPolicy") or "Background"
        if policy not in ("Background", "Foreground", "Orphan"):
            raise ApiError(400, "BadRequest", f"unsupported propagationPolicy {policy!r}")
        pre = (body or {}).get("preconditions") or {}
        with self._lock:
            key = (ns if kind.namespaced else "", name)
            obj = self._store[kind.plural].get(key)
            if obj is None:
                raise _not_found(kind, name)
            if pre.get("uid") and pre["uid"] != obj["metadata"]["uid"]:
                raise ApiError(
                    409,
                    "Conflict",
                    f"Precondition failed: UID in precondition: "
                    f"{pre['uid']}, UID in object meta: {obj['metadata']['uid']}",
                )
            if (
                pre.get("resourceVersion")
                and pre["resourceVersion"] != obj["metadata"]["resourceVersion"]
            ):
                raise ApiError(409, "Conflict", "Precondition failed: resourceVersion")
            gone = self._write(kind, copy.deepcopy(obj), "DELETED", old=obj)
            if kind.plural == "namespaces":
                self._empty_namespace(name)
            if policy == "Orphan":
                self._orphan(obj["metadata"]["uid"])
            self._collect_garbage()
            return _from_storage(kind, gone, version)

    def _empty_namespace(self, ns: str) -> None:
        """A deleted namespace takes its objects with it (at once here; the namespace
        controller does it while the namespace is Terminating)."""
        if self.namespaces is not None:
            self.namespaces.discard(ns)
        for other in KINDS.values():
            if other.namespaced:
                for key, obj in list(self._store[other.plural].items()):
                    if key[0] == ns:
                        self._write(other, copy.deepcopy(obj), "DELETED", old=obj)

    def patch(
        self,
        kind: _Kind,
        version: str,
        ns: str,
        name: str,
        content_type: str,
        body: Any,
        subresource: str,
    ) -> dict:
        if subresource not in ("", "status") or (subresource and not kind.status_subresource):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        with self._lock:
            key = (ns if kind.namespaced else "", name)
            old = self._store[kind.plural].get(key)
            if old is None:
                raise _not_found(kind, name)
            current = _from_storage(kind, old, version)
            ctype = content_type.split(";")[0].strip()
            if ctype == "application/json-patch+json":
                if not isinstance(body, list):
                    raise ApiError(400, "BadRequest", "json patch must be a list")
                patched = json_patch(current, body)
            elif ctype in (
                "application/merge-patch+json",
                "application/strategic-merge-patch+json",
            ):
                if not isinstance(body, dict):
                    raise ApiError(400, "BadRequest", "merge patch must be an object")
                rv = (body.get("metadata") or {}).get("resourceVersion")
                if rv and rv != old["metadata"]["resourceVersion"]:
                    raise ApiError(
                        409,
                        "Conflict",
                        f'Operation cannot be fulfilled on {kind.plural} "{name}": '
                        "the object has been modified; please apply your changes "
                        "to the latest version and try again",
                    )
                patched = merge_patch(
                    current, body, strategic=ctype.startswith("application/strategic")
                )
            else:
                raise ApiError(
                    415,
                    "UnsupportedMediaType",
                    f"the body of the request was in an unknown format: {ctype}",
                )
            new = _to_storage(kind, patched, version)
            new.pop("apiVersion", None)
            new.pop("kind", None)
            meta = new.setdefault("metadata", {})
            for f in ("name", "namespace", "uid", "creationTimestamp"):
                if old["metadata"].get(f) is not None:
                    meta[f] = old["metadata"][f]
            if subresource == "status":
                keep = copy.deepcopy(old)
                keep["status"] = new.get("status", {})
                new = keep
            elif kind.status_subresource and "status" in old:
                new["status"] = copy.deepcopy(old["status"])
            validate(kind, new)
            if new.get("spec") != old.get("spec"):
                meta["generation"] = int(old["metadata"].get("generation", 1)) + 1
            stored = self._write(kind, new, "MODIFIED", old=old)
            self._collect_garbage()  # may delete it at once when its owner does not exist
            return _from_storage(kind, stored, version)

    def watch(
        self, handler: _Handler, kind: _Kind, version: str, ns: str | None, query: dict
    ) -> None:
        req = _WatchRequest(
            kind,
            version,
            ns,
            parse_label_selector(query.get("labelSelector", "")),
            parse_field_selector(query.get("fieldSelector", "")),
        )
        timeout = float(query.get("timeoutSeconds") or self.watch_timeout_s)
        bookmarks = query.get("allowWatchBookmarks") == "true"
        rv_param = query.get("resourceVersion", "")
        deadline = time.monotonic() + timeout
        handler.start_stream()
        with self._lock:
            self.watches_started += 1
            if rv_param in ("", "0"):
                cursor = self._rv
                initial = [o for o in self._store[kind.plural].values() if req.matches(o)]
                initial = [
                    {"type": "ADDED", "object": _from_storage(kind, o, version)}
                    for o in sorted(initial, key=lambda o: int(o["metadata"]["resourceVersion"]))
                ]
            else:
                try:
                    cursor = int(rv_param)
                except ValueError:
                    cursor = -1
                if cursor < 0:
                    initial = [
                        {
                            "type": "ERROR",
                            "object": ApiError(
                                400, "BadRequest", f"invalid resource version {rv_param!r}"
                            ).status(),
                        }
                    ]
                elif cursor < self._compacted_rv:
                    initial = [
                        {
                            "type": "ERROR",
                            "object": ApiError(
                                410,
                                "Expired",
                                f"too old resource version: {cursor} ({self._compacted_rv})",
                            ).status(),
                        }
                    ]
                else:
                    initial = []
        for ev in initial:
            if not handler.send_event(ev):
                return
            if ev["type"] == "ERROR":
                handler.end_stream()
                return
        while True:
            with self._lock:
                while True:
                    pending = [
                        e for e in self._history if e.rv > cursor and e.plural == kind.plural
                    ]
                    left = deadline - time.monotonic()
                    if pending or left <= 0 or self._stopping:
                        break
                    self._lock.wait(min(left, 0.5))
                if self._stopping or (not pending and left <= 0):
                    current = self._rv
                    break
                cursor = self._history[-1].rv
                out = []
                for e in pending:
                    now_match, was_match = req.matches(e.obj), req.matches(e.old)
                    etype = e.type
                    if etype == "MODIFIED" and now_match and not was_match:
                        etype = "ADDED"
                    elif etype == "MODIFIED" and was_match and not now_match:
                        etype, now_match = "DELETED", True
                    elif etype == "DELETED":
                        now_match = req.matches(e.obj)
                    if now_match:
                        obj = _from_storage(kind, e.obj, version)
                        obj["metadata"]["resourceVersion"] = str(e.rv)
                        out.append({"type": etype, "object": obj})
            for ev in out:
                if not handler.send_event(ev):
                    return
        if bookmarks and not self._stopping:
            handler.send_event(
                {
                    "type": "BOOKMARK",
                    "object": {
                        "kind": kind.kind,
                        "apiVersion": f"{kind.group}/{version}" if kind.group else "v1",
                        "metadata": {"resourceVersion": str(current)},
                    },
                }
            )
        handler.end_stream()


def _qos_class(spec: dict) -> str:
    cs = spec.get("containers") or []
    has_any = any((c.get("resources") or {}).get(p) for c in cs for p in ("limits", "requests"))
    if not has_any:
        return "BestEffort"
    for c in cs:
        res = c.get("resources") or {}
        lim, req = res.get("limits") or {}, res.get("requests") or {}
        for r in ("cpu", "memory"):
            if r not in lim or str(req.get(r, lim[r])) != str(lim[r]):
                return "Burstable"
    return "Guaranteed"


def _not_found(kind: _Kind, name: str) -> ApiError:
    plural = kind.plural + ("." + kind.group if kind.group else "")
    return ApiError(
        404,
        "NotFound",
        f'{plural} "{name}" not found',
        details={"name": name, "group": kind.group, "kind": kind.plural},
    )


def _kind_by_plural(plural: str) -> _Kind:
    for k in KINDS.values():
        if k.plural == plural:
            return k
    raise KeyError(plural)


def _kind_of(obj: dict) -> tuple[_Kind, str]:
    api_version, kind_name = obj.get("apiVersion", ""), obj.get("kind", "")
    group, _, version = api_version.rpartition("/")
    for k in KINDS.values():
        if k.kind == kind_name and k.group == group:
            return k, version
    raise ValueError(f"unsupported object {api_version} {kind_name}")


# ------------------------------------------------------------------------------------------
# HTTP
# ------------------------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    fake: FakeApiServer
    protocol_version = "HTTP/1.1"
    server_version = "fake-kube-apiserver"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        return

    # ---- responses ----

    def _send_json(self, code: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _send_text(self, code: int, text: str) -> None:
        data = text.encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()

    def send_event(self, event: dict) -> bool:
        data = (json.dumps(event) + "\n").encode()
        try:
            self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()
            return True
        except OSError:
            self.close_connection = True
            return False

    def end_stream(self) -> None:
        try:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            pass
        self.close_connection = True

    # ---- dispatch ----

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        self._dispatch("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._dispatch("POST")

    def do_PUT(self) -> None:  # noqa: N802
        self._dispatch("PUT")

    def do_PATCH(self) -> None:  # noqa: N802
        self._dispatch("PATCH")

    def do_DELETE(self) -> None:  # noqa: N802
        self._dispatch("DELETE")

    def _read_body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return None
        try:
            return json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ApiError(400, "BadRequest", f"invalid JSON body: {exc}") from None

    def _dispatch(self, method: str) -> None:
        fake = self.fake
        parts = urlsplit(self.path)
        path = parts.path.rstrip("/") or "/"
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        with fake._lock:
            fake.requests.append((method, self.path))
            fake.request_log.append(RecordedRequest(method, self.path, dict(self.headers)))
        try:
            body = self._read_body()
            fault = fake._take_fault(method, self.path)
            if fault is not None:
                if fault.action == "disconnect":
                    self.close_connection = True
                    with contextlib.suppress(OSError):
                        self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if fault.action == "stall":
                    time.sleep(fault.stall_s)
                else:
                    headers = {}
                    if fault.retry_after is not None:
                        headers["Retry-After"] = str(fault.retry_after)
                    reason = _REASONS.get(fault.status, "InternalError")
                    raise ApiError(
                        fault.status,
                        reason,
                        f"injected fault: {fault.status} {reason}",
                        headers=headers,
                    )
            self._route(method, path, query, body)
        except ApiError as err:
            self._send_json(err.code, err.status(), err.headers)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _route(self, method: str, path: str, query: dict, body: Any) -> None:
        fake = self.fake
        segs = [s for s in path.split("/") if s]
        if path == "/version" and method == "GET":
            major, minor = fake.server_version
            self._send_json(
                200,
                {
                    "major": str(major),
                    "minor": str(minor),
                    "gitVersion": f"v{major}.{minor}.0",
                    "gitCommit": "0" * 40,
                    "gitTreeState": "clean",
                    "buildDate": "2025-08-27T00:00:00Z",
                    "goVersion": "go1.24.6",
                    "compiler": "gc",
                    "platform": "linux/amd64",
                    "emulationMajor": str(major),
                    "emulationMinor": str(minor),
                },
            )
            return
        if segs == ["api"]:
            self._send_json(
                200,
                {
                    "kind": "APIVersions",
                    "versions": ["v1"],
                    "serverAddressByClientCIDRs": [
                        {"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}
                    ],
                },
            )
            return
        if segs == ["apis"]:
            groups = [self._group_doc(g) for g in fake.served_groups()]
            self._send_json(200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
            return
        served = fake.served_groups()
        if len(segs) == 2 and segs[0] == "apis":
            if segs[1] not in served:
                self._send_text(404, "404 page not found\n")
                return
            self._send_json(
                200, {"kind": "APIGroup", "apiVersion": "v1", **self._group_doc(segs[1])}
            )
            return
        if segs == ["api", "v1"]:
            self._send_json(200, self._resource_list("", "v1"))
            return
        if len(segs) == 3 and segs[0] == "apis":
            if segs[2] not in served.get(segs[1], ()):
                self._send_text(404, "404 page not found\n")
                return
            self._send_json(200, self._resource_list(segs[1], segs[2]))
            return
        # resource paths
        if segs[:2] == ["api", "v1"]:
            group, version, rest = "", "v1", segs[2:]
        elif len(segs) >= 3 and segs[0] == "apis":
            group, version, rest = segs[1], segs[2], segs[3:]
            if version not in served.get(group, ()):
                self._send_text(404, "404 page not found\n")
                return
        else:
            self._send_text(404, "404 page not found\n")
            return
        ns: str | None = None
        if len(rest) >= 3 and rest[0] == "namespaces":
            ns, rest = rest[1], rest[2:]
        if not rest:
            self._send_text(404, "404 page not found\n")
            return
        kind = KINDS.get((group, rest[0]))
        if kind is not None and not fake.kind_served(group, version, kind.plural):
            kind = None
        if kind is None or (ns is not None and not kind.namespaced):
            self._send_text(404, "404 page not found\n")
            return
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else ""
        if len(rest) > 3 or (sub and sub != "status"):
            self._send_text(404, "404 page not found\n")
            return
        if kind.namespaced and name is not None and ns is None:
            self._send_text(404, "404 page not found\n")
            return
        if name is None:
            if method == "GET":
                if query.get("watch") in ("true", "1"):
                    fake.watch(self, kind, version, ns, query)
                else:
                    self._send_json(200, fake.list_objects(kind, version, ns, query))
                return
            if method == "POST":
                if kind.namespaced and ns is None:
                    raise ApiError(
                        405,
                        "MethodNotAllowed",
                        "the server does not allow this method on the requested resource",
                    )
                self._send_json(201, fake.create(kind, version, ns or "", body))
                return
            raise ApiError(
                405,
                "MethodNotAllowed",
                "the server does not allow this method on the requested resource",
            )
        if method == "GET":
            self._send_json(200, fake.read(kind, version, ns or "", name))
        elif method == "DELETE" and not sub:
            self._send_json(200, fake.delete(kind, version, ns or "", name, body))
        elif method == "PATCH":
            self._send_json(
                200,
                fake.patch(
                    kind, version, ns or "", name, self.headers.get("Content-Type", ""), body, sub
                ),
            )
        else:
            raise ApiError(
                405,
                "MethodNotAllowed",
                "the server does not allow this method on the requested resource",
            )

    def _group_doc(self, group: str) -> dict:
        vs = self.fake.served_groups()[group]
        versions = [{"groupVersion": f"{group}/{v}", "version": v} for v in vs]
        return {"name": group, "versions": versions, "preferredVersion": versions[0]}

    def _resource_list(self, group: str, version: str) -> dict:
        resources = []
        for k in KINDS.values():
            if k.group != group or not self.fake.kind_served(group, version, k.plural):
                continue
            verbs = ["create", "delete", "get", "list", "patch", "watch"]
            resources.append(
                {
                    "name": k.plural,
                    "singularName": k.kind.lower(),
                    "namespaced": k.namespaced,
                    "kind": k.kind,
                    "verbs": verbs,
                    "shortNames": list(k.short),
                }
            )
            if k.status_subresource:
                resources.append(
                    {
                        "name": k.plural + "/status",
                        "singularName": "",
                        "namespaced": k.namespaced,
                        "kind": k.kind,
                        "verbs": ["get", "patch"],
                    }
                )
        return {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": f"{group}/{version}" if group else version,
            "resources": resources,
        }
