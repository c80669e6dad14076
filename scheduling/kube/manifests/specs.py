"""What the manifest builders take besides the placement (:class:`JobMeta`,
:class:`ContainerSpec`) and what they return (:class:`Manifests`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["ContainerSpec", "JobMeta", "Manifests"]


@dataclass(frozen=True, slots=True)
class ContainerSpec:
    """What runs in one container (the placement says only which devices it gets).

    Attributes:
        image: container image.
        command / args: entrypoint and arguments (empty = image default).
        env: environment variables as (name, value) pairs, in order.
        cpu_milli / memory_mib: host CPU (millicores) and memory (MiB) requested and limited
            (0 = none); when no container of the pod gives any, the pod's booked
            ``PodAssignment.cpu_milli`` / ``memory_mib`` go on its first app container.
    """

    image: str
    command: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cpu_milli: int = 0
    memory_mib: int = 0


@dataclass(frozen=True, slots=True)
class JobMeta:
    """Job identity and workload, shared by all pods of a placement.

    Attributes:
        tenant: tenant slug (label value is cleaned to a DNS label; annotation keeps it as is).
        job_id: job id (any string).
        placement_id: placement id; every object name derives from it.
        namespace: namespace of the Pods and ResourceClaims.
        default: container spec for containers not named in ``containers``.
        containers: per container name overrides.
        restart_policy: Pod ``restartPolicy`` (``"Never"`` | ``"OnFailure"`` | ``"Always"``).
        priority_class: Pod ``priorityClassName`` ("" = none).
        service_account: Pod ``serviceAccountName`` ("" = namespace default).
        extra_labels / extra_annotations: added to every object (console keys win).
    """

    tenant: str
    job_id: str
    placement_id: str
    namespace: str
    default: ContainerSpec
    containers: Mapping[str, ContainerSpec] = field(default_factory=dict)
    restart_policy: str = "Never"
    priority_class: str = ""
    service_account: str = ""
    extra_labels: Mapping[str, str] = field(default_factory=dict)
    extra_annotations: Mapping[str, str] = field(default_factory=dict)

    def spec_for(self, container: str) -> ContainerSpec:
        """The container's spec (override or default)."""
        return self.containers.get(container, self.default)


@dataclass(frozen=True, slots=True)
class Manifests:
    """Objects to create for one pod, in order: the namespace, ``claims``, then ``pod``.

    Attributes:
        pod: the Pod dict.
        claims: ResourceClaim dicts (dra mode: exactly one; other modes: none).
        mode: ``"hami"`` | ``"dra"`` | ``"whole"``.
        namespace_object: the tenant's Namespace (``scheduling.kube.namespaces``), created
            or labelled before anything else; None = the namespace is not the console's.
        services: the workload's Service (``scheduling.kube.job_kind_pods``), created before
            the claims and owned by every pod that uses it.
    """

    pod: dict
    claims: tuple[dict, ...] = ()
    mode: str = "hami"
    namespace_object: dict | None = None
    services: tuple[dict, ...] = ()

    @property
    def namespace(self) -> str:
        return self.pod["metadata"]["namespace"]

    @property
    def pod_name(self) -> str:
        return self.pod["metadata"]["name"]

    @property
    def claim_names(self) -> tuple[str, ...]:
        return tuple(c["metadata"]["name"] for c in self.claims)
