"""Pure builders for what a job kind adds to a pod, and the Service in front of it.

The device part of a pod comes from :mod:`scheduling.kube.manifests`; :func:`apply_workload`
adds, on a copy, what the kind and the user's Kubernetes settings need:

* ``training``: ``hostname`` (``worker-<rank>``, ``launcher``) and ``subdomain`` = the job's
  headless Service, so every pod resolves as ``<hostname>.<service>.<namespace>.svc``
  (Kubernetes "Pod's hostname and subdomain fields"); the environment PyTorch's
  ``env://`` rendezvous reads (``torch.distributed``: ``MASTER_ADDR``, ``MASTER_PORT``,
  ``WORLD_SIZE``, ``RANK``; ``LOCAL_RANK`` = 0, one rank per pod) and ``WORKER_HOSTS`` (the
  workers' DNS names, comma separated, for an MPI launcher's host file). The headless
  Service (``clusterIP: None``, ``publishNotReadyAddresses``: ranks find each other before
  they are ready) publishes those names.
* ``inference`` replicas and ``notebook``: the container port, a TCP readiness probe on it
  and a ClusterIP Service selecting every replica of the service
  (``console.llmops.io/workload``).
* every kind: PersistentVolumeClaim volumes, Secrets by reference (``envFrom`` or a secret
  volume), tolerations, ``nodeSelector`` and ``activeDeadlineSeconds`` (``max_runtime_s``;
  not for services and notebooks, whose lifetime the console enforces by stopping them).

A Service is owned by the pods that use it (one ownerReference per pod, added by the
gateway), so garbage collection deletes it with the last of them.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from scheduling.kube.device_resources import ManifestError
from scheduling.kube.manifests import LABEL_MANAGED_BY, LABEL_TENANT, MANAGED_BY
from scheduling.kube.names import dns_label, label_value
from scheduling.kube.workloads import LABEL_WORKLOAD  # every pod of one workload: its job id

__all__ = [
    "LABEL_WORKLOAD",
    "LABEL_ROLE",
    "DEFAULT_MASTER_PORT",
    "WorkloadSpec",
    "service_name",
    "apply_workload",
    "build_service",
    "pod_ready",
    "workload_labels",
]

LABEL_ROLE = "console.llmops.io/role"
DEFAULT_MASTER_PORT = 29500
"""``torch.distributed`` default rendezvous port."""


@dataclass(frozen=True, slots=True)
class WorkloadSpec:
    """What a pod's kind adds (see the module docstring).

    Attributes:
        kind: ``batch`` | ``training`` | ``inference`` | ``notebook``.
        workload_id: id shared by the workload's pods (the training job, the service).
        workload_name: the user's name for it (the Service name derives from it).
        role: ``launcher`` | ``worker`` (training), else "".
        rank / world_size: the worker's rank and the number of workers (training).
        port: the container port (inference, notebook) or the rendezvous port (training).
        volumes: ``[{"claim", "mount_path", "read_only"}]`` PersistentVolumeClaims.
        secrets: ``[{"name", "mount_path"}]``; no mount path = environment from every key.
        tolerations: Kubernetes tolerations, as given.
        node_selector: node labels (the node is also pinned by affinity).
        active_deadline_s: ``activeDeadlineSeconds`` (None = none).
    """

    kind: str
    workload_id: str
    workload_name: str
    role: str = ""
    rank: int = 0
    world_size: int = 1
    port: int | None = None
    volumes: Sequence[Mapping] = field(default_factory=tuple)
    secrets: Sequence[Mapping] = field(default_factory=tuple)
    tolerations: Sequence[Mapping] = field(default_factory=tuple)
    node_selector: Mapping[str, str] = field(default_factory=dict)
    active_deadline_s: int | None = None

    @property
    def has_service(self) -> bool:
        return self.kind in ("training", "inference", "notebook")


def service_name(name: str, workload_id: str) -> str:
    """The Service name of a workload: ``<name>-<id>`` as an RFC 1035 label (a Service name
    must start with a letter: ``w-`` is put in front otherwise)."""
    label = dns_label(name, workload_id)
    return label if label[0].isalpha() else dns_label("w", label)


def workload_labels(spec: WorkloadSpec) -> dict[str, str]:
    """Labels the kind adds to the pod (and its Service selector)."""
    labels = {LABEL_WORKLOAD: label_value(spec.workload_id)}
    if spec.role:
        labels[LABEL_ROLE] = spec.role
    return labels


def _rank_env(spec: WorkloadSpec, namespace: str) -> list[tuple[str, str]]:
    svc = service_name(spec.workload_name, spec.workload_id)
    hosts = [f"worker-{r}.{svc}.{namespace}.svc" for r in range(spec.world_size)]
    env = [
        ("MASTER_ADDR", hosts[0]),
        ("MASTER_PORT", str(spec.port or DEFAULT_MASTER_PORT)),
        ("WORLD_SIZE", str(spec.world_size)),
        ("WORKER_HOSTS", ",".join(hosts)),
    ]
    if spec.role == "worker":
        env += [("RANK", str(spec.rank)), ("LOCAL_RANK", "0")]
    return env


def _volumes(spec: WorkloadSpec) -> tuple[list[dict], list[dict], list[dict]]:
    """(pod volumes, volume mounts, envFrom) of the PVCs and secrets."""
    volumes, mounts, env_from = [], [], []
    for i, v in enumerate(spec.volumes):
        name = dns_label("pvc", str(i), str(v["claim"]))
        volumes.append(
            {
                "name": name,
                "persistentVolumeClaim": {
                    "claimName": v["claim"],
                    "readOnly": bool(v.get("read_only")),
                },
            }
        )
        mounts.append(
            {"name": name, "mountPath": v["mount_path"], "readOnly": bool(v.get("read_only"))}
        )
    for i, sec in enumerate(spec.secrets):
        if sec.get("mount_path"):
            name = dns_label("secret", str(i), str(sec["name"]))
            volumes.append({"name": name, "secret": {"secretName": sec["name"]}})
            mounts.append({"name": name, "mountPath": sec["mount_path"], "readOnly": True})
        else:
            env_from.append({"secretRef": {"name": sec["name"]}})
    return volumes, mounts, env_from


def apply_workload(pod: Mapping, spec: WorkloadSpec) -> dict:
    """A copy of ``pod`` with what ``spec``'s kind and settings add (module docstring).

    Raises:
        ManifestError: a volume without claim or mount path, a secret without name.
    """
    for v in spec.volumes:
        if not v.get("claim") or not str(v.get("mount_path", "")).startswith("/"):
            raise ManifestError(f"volume {v!r}: needs a claim and an absolute mount_path")
    if any(not s.get("name") for s in spec.secrets):
        raise ManifestError("a secret reference needs a name")
    out = copy.deepcopy(dict(pod))
    meta, pod_spec = out["metadata"], out["spec"]
    meta["labels"].update(workload_labels(spec))
    namespace = meta["namespace"]
    env: list[tuple[str, str]] = []
    if spec.kind == "training":
        pod_spec["hostname"] = "launcher" if spec.role == "launcher" else f"worker-{spec.rank}"
        pod_spec["subdomain"] = service_name(spec.workload_name, spec.workload_id)
        env = _rank_env(spec, namespace)
    volumes, mounts, env_from = _volumes(spec)
    for c in pod_spec["containers"]:
        given = {e["name"] for e in c.get("env", [])}
        extra = [{"name": k, "value": v} for k, v in env if k not in given]
        if extra:
            c["env"] = [*c.get("env", []), *extra]
        if mounts:
            c["volumeMounts"] = [*c.get("volumeMounts", []), *mounts]
        if env_from:
            c["envFrom"] = [*c.get("envFrom", []), *env_from]
    if spec.port and spec.kind in ("inference", "notebook"):
        first = pod_spec["containers"][0]
        first["ports"] = [{"name": "http", "containerPort": spec.port, "protocol": "TCP"}]
        first["readinessProbe"] = {"tcpSocket": {"port": spec.port}, "periodSeconds": 10}
    elif spec.kind == "training" and spec.role == "worker":
        pod_spec["containers"][0]["ports"] = [
            {
                "name": "rendezvous",
                "containerPort": spec.port or DEFAULT_MASTER_PORT,
                "protocol": "TCP",
            }
        ]
    if volumes:
        pod_spec["volumes"] = [*pod_spec.get("volumes", []), *volumes]
    if spec.tolerations:
        pod_spec["tolerations"] = [dict(t) for t in spec.tolerations]
    if spec.node_selector:
        pod_spec["nodeSelector"] = dict(spec.node_selector)
    if spec.active_deadline_s:
        pod_spec["activeDeadlineSeconds"] = int(spec.active_deadline_s)
    return out


def build_service(spec: WorkloadSpec, *, namespace: str, tenant: str) -> dict | None:
    """The Service of the workload, or None for a kind without one (batch).

    Training: headless (``clusterIP: None``), ``publishNotReadyAddresses``, port
    ``rendezvous``. Inference / notebook: ClusterIP, port ``http`` to the container port.
    The selector is the workload label (every replica of a service, every pod of a job).
    """
    if not spec.has_service:
        return None
    selector = {LABEL_MANAGED_BY: MANAGED_BY, LABEL_WORKLOAD: label_value(spec.workload_id)}
    meta = {
        "name": service_name(spec.workload_name, spec.workload_id),
        "namespace": namespace,
        "labels": {**selector, LABEL_TENANT: label_value(tenant)},
    }
    if spec.kind == "training":
        port = spec.port or DEFAULT_MASTER_PORT
        body = {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": selector,
            "ports": [{"name": "rendezvous", "port": port, "targetPort": port, "protocol": "TCP"}],
        }
    else:
        if not spec.port:
            raise ManifestError(f"{spec.kind} {spec.workload_id}: no port to expose")
        body = {
            "type": "ClusterIP",
            "selector": selector,
            "ports": [
                {"name": "http", "port": spec.port, "targetPort": spec.port, "protocol": "TCP"}
            ],
        }
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": body}


def pod_ready(pod: Mapping) -> bool:
    """The pod's ``Ready`` condition is True (it passes its readiness probe)."""
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return False
