"""The Kubernetes cluster backend: placements become Pods (and ResourceClaims) in a real cluster.

Connection per :class:`~scheduling.models.Cluster` row (:func:`connection_source`): the pod's
service account (``in_cluster``), a kubeconfig file (``kubeconfig_path`` + ``kube_context``),
or the kubeconfig file named by the environment variable ``CLUSTER_<NAME>_KUBECONFIG``.
Credentials stay in the file / service-account mount; the database holds only where they are.

Submission (:class:`KubernetesBackend`): the placement's stored assignment (node + per-container
device grants) and the job's containers (image, command, args, env) go through the pure
manifest builders (:mod:`scheduling.kube.manifests`) in the cluster's ``submission_mode``
(``hami`` | ``dra`` | ``whole``); :class:`~scheduling.kube.gateway.KubernetesGateway` creates
the ResourceClaim first, then the Pod, then makes the Pod own the claim. Object names derive
from the placement id, so a retried submit (after a crash or a timeout) meets 409
AlreadyExists, which counts as success. Failures are classified by
:mod:`scheduling.kube.errors`: Retryable (429, 5xx, timeouts; already retried with backoff by
the gateway) -> ``SubmissionError(retryable=True)``; Permanent (other 4xx, with the server's
message, or a placement that cannot be expressed in the mode) ->
``SubmissionError(retryable=False)``, which fails the job and releases its reservation
(:func:`scheduling.services.cluster_submission.submit_to_cluster`).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from django.conf import settings
from django.utils import timezone

from core.exceptions import Conflict
from scheduling.backends.base import SubmissionError
from scheduling.choices import BOOKED_PLACEMENT_STATES, JobKind
from scheduling.devices.overlay import Catalogue, build_catalogue
from scheduling.kube import manifests as mf
from scheduling.kube.client import ClusterInfo, build_api_client, test_connection
from scheduling.kube.errors import KubeError, Permanent, Retryable
from scheduling.kube.gateway import KubernetesGateway, RetryPolicy
from scheduling.kube.inventory import RUNNING, pod_state
from scheduling.kube.job_kind_pods import WorkloadSpec, apply_workload, build_service, pod_ready
from scheduling.kube.namespaces import build_namespace
from scheduling.models import Device, DeviceModel, Placement
from scheduling.placement.codec import AssignmentError, assignment_from_json, granted_uuids
from scheduling.placement.types import PodAssignment
from tenants.selectors import tenant_namespace
from tenants.services import record_tenant_namespace

logger = logging.getLogger(__name__)

__all__ = [
    "KubernetesBackend",
    "ConnectionConfigError",
    "connection_source",
    "gateway_for",
    "forget_gateways",
    "check_connection",
    "build_manifests",
    "job_meta",
    "pod_assignment",
    "placement_pod_name",
    "placement_namespace",
]


class ConnectionConfigError(Permanent):
    """The Cluster row does not say how to reach the cluster (message says what is missing)."""


def connection_source(cluster, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Where a cluster's credentials are: keyword arguments for ``build_api_client``.

    Order: ``in_cluster`` -> ``{"in_cluster": True}``; ``kubeconfig_path`` ->
    ``{"kubeconfig": path, "context": kube_context or None}``; else the environment variable
    ``cluster.kubeconfig_env()`` (e.g. ``CLUSTER_PROD_A_KUBECONFIG``) holding a path.

    Raises:
        ConnectionConfigError: none of them is set.
    """
    environ = os.environ if environ is None else environ
    if cluster.in_cluster:
        return {"in_cluster": True}
    context = cluster.kube_context or None
    if cluster.kubeconfig_path:
        return {"kubeconfig": cluster.kubeconfig_path, "context": context}
    env_name = cluster.kubeconfig_env()
    path = (environ.get(env_name) or "").strip()
    if path:
        return {"kubeconfig": path, "context": context}
    raise ConnectionConfigError(
        0,
        "ConfigError",
        f"cluster {cluster.name!r} has no connection: set 'in cluster', a kubeconfig path, or "
        f"the environment variable {env_name}",
    )


_gateways: dict[int, tuple[tuple, KubernetesGateway]] = {}
_gateways_lock = threading.Lock()


def _retry_policy() -> RetryPolicy:
    return RetryPolicy(
        max_attempts=settings.KUBE_RETRY_MAX_ATTEMPTS,
        base_delay_s=settings.KUBE_RETRY_BASE_DELAY_S,
        max_delay_s=settings.KUBE_RETRY_MAX_DELAY_S,
        max_retry_after_s=settings.KUBE_RETRY_MAX_RETRY_AFTER_S,
    )


def gateway_for(cluster) -> KubernetesGateway:
    """The (per-process cached) gateway of a kubernetes cluster.

    The cache key holds the connection fields and the source, so editing the Cluster row or
    the environment variable takes effect on the next call.

    Raises:
        ConnectionConfigError: no connection configured.
        Permanent: the kubeconfig / service account cannot be loaded.
    """
    source = connection_source(cluster)
    key = (tuple(sorted(source.items())), cluster.request_timeout_s, _retry_policy())
    with _gateways_lock:
        cached = _gateways.get(cluster.pk)
        if cached is not None and cached[0] == key:
            return cached[1]
    api = build_api_client(**source, request_timeout_s=cluster.request_timeout_s)
    gw = KubernetesGateway(api, retry=key[2])
    with _gateways_lock:
        old = _gateways.get(cluster.pk)
        _gateways[cluster.pk] = (key, gw)
    if old is not None and old[1] is not gw:
        old[1].api.close()
    return gw


def forget_gateways() -> None:
    """Drop every cached gateway (tests; after credentials were rotated)."""
    with _gateways_lock:
        olds = list(_gateways.values())
        _gateways.clear()
    for _key, gw in olds:
        gw.api.close()


def check_connection(cluster) -> ClusterInfo:
    """Probe the cluster (``GET /version``, discovery) and record what was found on the row.

    Saves ``server_version``, ``resource_versions`` and ``connection_checked_at``.

    Raises:
        KubeError: the connection is not configured or the probe failed (message says why).
    """
    source = connection_source(cluster)
    api = build_api_client(**source, request_timeout_s=cluster.request_timeout_s)
    try:
        info = test_connection(api)
    finally:
        api.close()
    cluster.server_version = info.git_version
    cluster.resource_versions = list(info.resource_versions)
    cluster.connection_checked_at = timezone.now()
    type(cluster).objects.filter(pk=cluster.pk).update(
        server_version=cluster.server_version,
        resource_versions=cluster.resource_versions,
        connection_checked_at=cluster.connection_checked_at,
    )
    return info


# ------------------------------------------------------------------------------------------
# Placement -> manifests
# ------------------------------------------------------------------------------------------


def placement_pod_name(placement) -> str:
    """Deterministic Pod name of a placement (``p-<placement id>-<pod>``, a DNS label)."""
    pod = (placement.assignment or {}).get("pod") or f"{placement.job_id}-{placement.pod_index}"
    return mf.pod_name(str(placement.pk), str(pod))


def placement_namespace(placement) -> str:
    """Namespace of the placement's objects: from ``backend_ref`` (``ns/name``) once
    submitted, else its tenant's namespace in the cluster
    (:func:`tenants.selectors.tenant_namespace`)."""
    if "/" in (placement.backend_ref or ""):
        return placement.backend_ref.split("/", 1)[0]
    return tenant_namespace(placement.job.tenant, placement.node.cluster)


def pod_assignment(placement) -> PodAssignment:
    """The placement's stored assignment as a ``PodAssignment``.

    A grant without ``vendor`` gets its device model's vendor (looked up by uuid); the node is
    the placement's node name.

    Raises:
        ManifestError: a granted device is unknown to the inventory.
    """
    data = placement.assignment or {}
    uuids = granted_uuids(data)
    vendors = dict(Device.objects.filter(uuid__in=uuids).values_list("uuid", "model__vendor"))
    try:
        return assignment_from_json(
            data,
            pod=f"{placement.job_id}-{placement.pod_index}",
            node=placement.node.name,
            cpu_milli=placement.cpu_milli,
            memory_mib=placement.host_memory_mib,
            vendor_of=vendors.get,
        )
    except AssignmentError as exc:
        raise mf.ManifestError(str(exc)) from None


def granted_catalogue(assignment: PodAssignment) -> Catalogue:
    """The device catalogue of the granted devices' models (HAMi defaults overlaid by those
    ``DeviceModel`` rows), for the manifest builders' per-model names and units."""
    uuids = {g.uuid for c in assignment.containers for g in c.devices}
    models = DeviceModel.objects.filter(devices__uuid__in=uuids).distinct()
    return build_catalogue((m.vendor, m.name, m.config) for m in models)


def _container_spec(c) -> mf.ContainerSpec:
    env = c.env if isinstance(c.env, dict) else {}
    return mf.ContainerSpec(
        image=c.image,
        command=tuple(str(x) for x in c.command or ()),
        args=tuple(str(x) for x in c.args or ()),
        env=tuple((str(k), str(v)) for k, v in sorted(env.items())),
    )


def workload_spec(placement) -> WorkloadSpec:
    """What the placement's job kind adds to its pod (:mod:`scheduling.kube.job_kind_pods`).

    Training: pod 0 is the launcher when the job has launcher containers; a worker's rank is
    its pod index among the workers, ``world_size`` the workers booked now (a gang admitted
    with its minimum runs with fewer). An inference replica shares its service's id and
    name (one Service over every replica).
    """
    job = placement.job
    owner = job.parent if job.parent_id else job
    role, rank, world = "", 0, 1
    if job.kind == JobKind.TRAINING:
        launcher = any(c.role == "launcher" for c in job.containers.all())
        booked = Placement.objects.filter(job=job, state__in=BOOKED_PLACEMENT_STATES).count()
        world = max(1, booked - (1 if launcher else 0))
        if launcher and placement.pod_index == 0:
            role = "launcher"
        else:
            role, rank = "worker", placement.pod_index - (1 if launcher else 0)
    deadline = job.max_runtime_s if job.kind in (JobKind.BATCH, JobKind.TRAINING) else None
    return WorkloadSpec(
        kind=job.kind,
        workload_id=str(owner.pk),
        workload_name=owner.name,
        role=role,
        rank=rank,
        world_size=world,
        port=job.port,
        volumes=tuple(job.volumes or ()),
        secrets=tuple(job.secrets or ()),
        tolerations=tuple(job.tolerations or ()),
        node_selector=dict(job.node_selector or {}),
        active_deadline_s=int(deadline) if deadline else None,
    )


def job_meta(placement) -> mf.JobMeta:
    """Job identity and workload for the manifest builders.

    Each job container with an image is its own spec; containers without one use the first
    app container's (the default). The pod's restartPolicy is the job's ``restart_policy``
    (``Always`` for inference replicas and notebooks).
    """
    job = placement.job
    containers = list(job.containers.all())
    specs = {c.name: _container_spec(c) for c in containers if c.image}
    default = next(
        (specs[c.name] for c in containers if not c.init and c.name in specs),
        next(iter(specs.values()), mf.ContainerSpec(image="")),
    )
    return mf.JobMeta(
        tenant=job.tenant.name,
        job_id=str(job.pk),
        placement_id=str(placement.pk),
        namespace=placement_namespace(placement),
        default=default,
        containers=specs,
        restart_policy=job.restart_policy or "Never",
        extra_annotations=dict(job.annotations or {}),
    )


def build_manifests(placement, gateway: KubernetesGateway | None = None) -> mf.Manifests:
    """Manifests of one placement in its cluster's submission mode.

    Args:
        placement: a Placement with ``node__cluster`` and ``job__tenant`` reachable.
        gateway: needed in ``dra`` mode to pick the served resource.k8s.io version.

    Raises:
        ManifestError: the placement cannot be expressed in the mode.
        Permanent: dra mode on a cluster that serves no resource.k8s.io version.
    """
    cluster = placement.node.cluster
    assignment = pod_assignment(placement)
    meta = job_meta(placement)
    namespace = build_namespace(meta.namespace, meta.tenant, settings.TENANT_POD_SECURITY_LEVEL)
    if cluster.submission_mode == "dra":
        version = gateway.dra_version() if gateway is not None else "v1"
        if version is None:
            raise Permanent(
                0,
                "NoDRA",
                f"cluster {cluster.name!r} serves no resource.k8s.io "
                "version; use submission mode hami or whole",
            )
        built = mf.build_dra(
            assignment,
            meta,
            api_version=f"resource.k8s.io/{version}",
            drivers=mf.dra_drivers_for(assignment, granted_catalogue(assignment)),
        )
    elif cluster.submission_mode == "hami":
        built = mf.build_hami(
            assignment,
            meta,
            scheduler_name=cluster.hami_scheduler_name or mf.HAMI_SCHEDULER_NAME,
            catalogue=granted_catalogue(assignment),
        )
    else:
        built = mf.build(
            cluster.submission_mode, assignment, meta, catalogue=granted_catalogue(assignment)
        )
    workload = workload_spec(placement)
    service = build_service(workload, namespace=meta.namespace, tenant=meta.tenant)
    return replace(
        built,
        pod=apply_workload(built.pod, workload),
        namespace_object=namespace,
        services=(service,) if service else (),
    )


def _as_submission_error(exc: KubeError) -> SubmissionError:
    text = exc.message if exc.reason in ("", "ConfigError") else f"{exc.reason}: {exc.message}"
    if exc.status:
        text = f"HTTP {exc.status} {text}"
    return SubmissionError(text, retryable=isinstance(exc, Retryable))


def _record_namespace(placement, name: str) -> None:
    """Remember the tenant's namespace in the cluster (``tenants.TenantNamespace``) once the
    gateway ensured it; a conflict is logged (the pod is already in the namespace the
    labels say is the tenant's)."""
    try:
        record_tenant_namespace(
            tenant_id=placement.job.tenant_id,
            cluster_id=placement.node.cluster_id,
            name=name,
            now=timezone.now(),
        )
    except Conflict as exc:
        logger.warning("placement %s: %s", placement.pk, exc)


class KubernetesBackend:
    """:class:`~scheduling.backends.ClusterBackend` for ``backend = kubernetes`` clusters."""

    def submit(self, placement) -> str:
        """Create the placement's ResourceClaim (dra mode) and Pod; idempotent.

        Sets ``placement.backend_ref`` to ``<namespace>/<pod name>``.

        Returns:
            ``"running"`` when the Pod already runs (a retry found it), else ``"submitted"``.

        Raises:
            SubmissionError: ``retryable`` for 429/5xx/timeouts/connection errors after the
                gateway's retries; not retryable for refused objects (4xx, with the server's
                message), manifests that cannot be built, and missing connection settings.
        """
        try:
            gateway = gateway_for(placement.node.cluster)
            manifests = build_manifests(placement, gateway)
            result = gateway.submit(manifests)
        except mf.ManifestError as exc:
            raise SubmissionError(f"cannot build the pod: {exc}", retryable=False) from exc
        except KubeError as exc:
            raise _as_submission_error(exc) from exc
        placement.backend_ref = f"{manifests.namespace}/{manifests.pod_name}"
        placement.ready = pod_ready(result.pod)
        _record_namespace(placement, manifests.namespace)
        if result.created:
            logger.info("placement %s: created %s", placement.pk, ", ".join(result.created))
        return "running" if pod_state(result.pod).state == RUNNING else "submitted"

    def delete(self, placement) -> None:
        """Delete the placement's Pod (its claim follows by garbage collection) and, in dra
        mode, the claim by name in case the owner reference was never set.

        Never raises: a failure is logged, and the reconciler deletes console pods whose
        placement is no longer booked (:mod:`scheduling.services.kube_reconcile`).
        """
        cluster = placement.node.cluster
        name = placement_pod_name(placement)
        claims = (mf.claim_name(name),) if cluster.submission_mode == "dra" else ()
        try:
            gateway_for(cluster).delete(placement_namespace(placement), name, claims)
        except KubeError as exc:
            logger.warning(
                "placement %s: deleting pod %s failed (%s); the reconciler will retry",
                placement.pk,
                name,
                exc,
            )
