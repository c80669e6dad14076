"""Pod Security Standards in tenant namespaces (pure).

Source: Kubernetes, *Pod Security Standards*
(https://kubernetes.io/docs/concepts/security/pod-security-standards/): three cumulative
levels, ``privileged`` < ``baseline`` < ``restricted``, enforced in a namespace by Pod Security
Admission through the label :data:`LABEL_ENFORCE`.

The console labels each tenant namespace with its level (``TENANT_POD_SECURITY_LEVEL``,
default ``baseline``; :func:`scheduling.kube.namespaces.build_namespace`), and the intake
refuses a workload whose pod templates break :func:`baseline_violations` (a Job's pods would
be refused by the API server only once the console had admitted it and booked its devices).
The checks here are baseline's controls that read one field each; the others (AppArmor,
SELinux, /proc mount, seccomp, sysctls) and the ``restricted`` level's extra ones are left to
Pod Security Admission.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["LABEL_ENFORCE", "LEVELS", "BASELINE_CAPABILITIES", "stricter", "baseline_violations"]

LABEL_ENFORCE = "pod-security.kubernetes.io/enforce"
"""Namespace label: the level Pod Security Admission enforces on the namespace's pods."""
LEVELS = ("privileged", "baseline", "restricted")
"""The levels, least strict first."""
BASELINE_CAPABILITIES = frozenset(
    {
        "AUDIT_WRITE",
        "CHOWN",
        "DAC_OVERRIDE",
        "FOWNER",
        "FSETID",
        "KILL",
        "MKNOD",
        "NET_BIND_SERVICE",
        "SETFCAP",
        "SETGID",
        "SETPCAP",
        "SETUID",
        "SYS_CHROOT",
    }
)
"""The capabilities ``baseline`` lets a container add (``securityContext.capabilities.add``),
compared as written (Pod Security Admission does not strip a ``CAP_`` prefix)."""
_CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")


def stricter(a: str, b: str) -> str:
    """The stricter of two levels (an unknown level counts as ``privileged``)."""
    rank = {level: i for i, level in enumerate(LEVELS)}
    return a if rank.get(a, 0) >= rank.get(b, 0) else b


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


def _container_violations(c: Mapping[str, Any], where: str) -> list[str]:
    out = []
    ctx = _map(c.get("securityContext"))
    if ctx.get("privileged") is True:
        out.append(f"{where}.securityContext.privileged: true")
    if _map(ctx.get("windowsOptions")).get("hostProcess") is True:
        out.append(f"{where}.securityContext.windowsOptions.hostProcess: true")
    added = [str(x) for x in _list(_map(ctx.get("capabilities")).get("add"))]
    beyond = [x for x in added if x not in BASELINE_CAPABILITIES]
    if beyond:
        out.append(f"{where}.securityContext.capabilities.add: {', '.join(beyond)}")
    for j, port in enumerate(_list(c.get("ports"))):
        host_port = _map(port).get("hostPort")
        if host_port not in (None, 0):
            out.append(f"{where}.ports[{j}].hostPort: {host_port}")
    return out


def baseline_violations(pod_spec: Any, where: str) -> list[str]:
    """What in a pod spec the ``baseline`` level forbids, each as ``<field path>: <value>``
    (empty when nothing): host namespaces (``hostNetwork``, ``hostPID``, ``hostIPC``),
    privileged and HostProcess containers, capabilities added beyond
    :data:`BASELINE_CAPABILITIES`, ``hostPath`` volumes and host ports, in any container,
    init container or ephemeral container.

    Args:
        pod_spec: a Pod's ``spec`` (or a template's); anything else has no violation.
        where: the spec's path in its object, prefixed to each field (``spec.template.spec``).
    """
    spec = _map(pod_spec)
    out = [
        f"{where}.{key}: true"
        for key in ("hostNetwork", "hostPID", "hostIPC")
        if spec.get(key) is True
    ]
    windows = _map(_map(spec.get("securityContext")).get("windowsOptions"))
    if windows.get("hostProcess") is True:
        out.append(f"{where}.securityContext.windowsOptions.hostProcess: true")
    for i, volume in enumerate(_list(spec.get("volumes"))):
        if _map(volume).get("hostPath") is not None:
            out.append(f"{where}.volumes[{i}].hostPath: {_map(volume).get('name', '')}")
    for key in _CONTAINER_LISTS:
        for i, c in enumerate(_list(spec.get(key))):
            out.extend(_container_violations(_map(c), f"{where}.{key}[{i}]"))
    return out
