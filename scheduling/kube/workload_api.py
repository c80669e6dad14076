"""API calls for workloads users create with kubectl, for Events and for device cordons.

:class:`WorkloadApi` sits on a :class:`~scheduling.kube.gateway.KubernetesGateway` and uses its
retries and error classification; it returns plain dicts. Every call is a literal client
method with literal group / plural arguments, so ``tests/deploy/test_rbac.py`` can check that
the ClusterRole grants exactly these calls.

Patches are JSON merge patches (``application/merge-patch+json``); the ones that carry
``metadata.resourceVersion`` answer 409 Conflict after a concurrent write, which the gateway
retries only for idempotent bodies - callers here re-read and rebuild the patch instead
(:meth:`WorkloadApi.patch_workload` is called with a patch built from a fresh read).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from kubernetes import client as k8s
from kubernetes import watch

from scheduling.kube.errors import AlreadyExists, NotFound, classify
from scheduling.kube.gateway import KubernetesGateway
from scheduling.kube.transport import ObjectList, as_body, read_json
from scheduling.kube.workloads import LABEL_QUEUE

__all__ = ["WorkloadApi", "JOBSET_GROUP", "KUBEFLOW_GROUP", "MERGE_PATCH"]

JOBSET_GROUP = "jobset.x-k8s.io"
JOBSET_VERSION = "v1alpha2"
JOBSET_PLURAL = "jobsets"
KUBEFLOW_GROUP = "kubeflow.org"
KUBEFLOW_VERSION = "v1"
PYTORCHJOB_PLURAL = "pytorchjobs"
MERGE_PATCH = "application/merge-patch+json"
TAINT_RULE_VERSIONS = ("v1", "v1beta2", "v1alpha3")
"""resource.k8s.io versions that may serve DeviceTaintRule (KEP-5055: v1alpha3 in 1.33-1.34,
later ones as it graduates), best first; discovery says which one does."""


class WorkloadApi:
    """Workload, Pod, Event, Node and DeviceTaintRule calls over one gateway."""

    def __init__(self, gateway: KubernetesGateway) -> None:
        self.gw = gateway
        self.batch = k8s.BatchV1Api(gateway.api)
        self.apps = k8s.AppsV1Api(gateway.api)
        self.custom = k8s.CustomObjectsApi(gateway.api)
        self.core = gateway.core
        self._taint_version: str | None | bool = False

    def _kw(self) -> dict[str, Any]:
        return self.gw._kw()

    def _list(self, fn: Any) -> ObjectList:
        """The list answer of ``fn()``; a kind the server does not serve (CRD not installed)
        is empty."""
        try:
            data = read_json(self.gw._call(fn))
        except NotFound:
            return ObjectList(items=[], resource_version="")
        return ObjectList(
            items=list(data.get("items") or []),
            resource_version=str((data.get("metadata") or {}).get("resourceVersion", "")),
        )

    # -- labelled workloads ---------------------------------------------------------------

    def list_workloads(self, kind: str) -> ObjectList:
        """Objects of ``kind`` carrying the queue label, in every namespace.

        Raises:
            KeyError: a kind the console does not take in.
            KubeError: the list failed (other than the kind not being served).
        """
        sel, kw = LABEL_QUEUE, self._kw()
        if kind == "Job":
            return self._list(
                lambda: self.batch.list_job_for_all_namespaces(label_selector=sel, **kw)
            )
        if kind == "Deployment":
            return self._list(
                lambda: self.apps.list_deployment_for_all_namespaces(label_selector=sel, **kw)
            )
        if kind == "StatefulSet":
            return self._list(
                lambda: self.apps.list_stateful_set_for_all_namespaces(label_selector=sel, **kw)
            )
        if kind == "JobSet":
            return self._list(
                lambda: self.custom.list_cluster_custom_object(
                    JOBSET_GROUP, JOBSET_VERSION, JOBSET_PLURAL, label_selector=sel, **kw
                )
            )
        if kind == "PyTorchJob":
            return self._list(
                lambda: self.custom.list_cluster_custom_object(
                    KUBEFLOW_GROUP, KUBEFLOW_VERSION, PYTORCHJOB_PLURAL, label_selector=sel, **kw
                )
            )
        raise KeyError(kind)

    def watch_workloads(
        self, kind: str, resource_version: str, timeout_s: int
    ) -> Iterator[tuple[str, dict]]:
        """Changes of labelled objects of ``kind`` (``"Pod"``: the queued replicas) since
        ``resource_version``, for about ``timeout_s`` seconds: ``(type, object)`` pairs
        (ADDED / MODIFIED / DELETED; bookmarks are skipped).

        Raises:
            Expired: the resourceVersion is too old (410): list again.
            KubeError: classified failure (a kind the server does not serve: NotFound).
        """
        kw: dict[str, Any] = {
            "label_selector": LABEL_QUEUE,
            "timeout_seconds": timeout_s,
            "resource_version": resource_version,
            "allow_watch_bookmarks": True,
        }
        if self.gw.timeout:
            kw["_request_timeout"] = (self.gw.timeout, timeout_s + self.gw.timeout)
        w = watch.Watch()
        try:
            if kind == "Job":
                stream = w.stream(self.batch.list_job_for_all_namespaces, **kw)
            elif kind == "Deployment":
                stream = w.stream(self.apps.list_deployment_for_all_namespaces, **kw)
            elif kind == "StatefulSet":
                stream = w.stream(self.apps.list_stateful_set_for_all_namespaces, **kw)
            elif kind == "JobSet":
                stream = w.stream(
                    self.custom.list_cluster_custom_object,
                    JOBSET_GROUP,
                    JOBSET_VERSION,
                    JOBSET_PLURAL,
                    **kw,
                )
            elif kind == "PyTorchJob":
                stream = w.stream(
                    self.custom.list_cluster_custom_object,
                    KUBEFLOW_GROUP,
                    KUBEFLOW_VERSION,
                    PYTORCHJOB_PLURAL,
                    **kw,
                )
            elif kind == "Pod":
                stream = w.stream(self.core.list_pod_for_all_namespaces, **kw)
            else:
                raise KeyError(kind)
            for event in stream:
                if event.get("type") in ("ADDED", "MODIFIED", "DELETED"):
                    # raw_object: the JSON as sent (the client also builds model objects)
                    yield str(event["type"]), dict(event.get("raw_object") or {})
        except Exception as exc:  # noqa: BLE001 - classified, unknowns re-raised
            err = classify(exc)
            if err is None:
                raise
            raise err from exc
        finally:
            w.stop()

    def get_workload(self, kind: str, namespace: str, name: str) -> dict | None:
        """The object, or None when it is gone."""
        resp: Any  # the raw HTTP response (``_preload_content=False``), not the hinted model
        try:
            if kind == "Job":
                resp = self.gw._call(
                    lambda: self.batch.read_namespaced_job(name, namespace, **self._kw())
                )
            elif kind == "JobSet":
                resp = self.gw._call(
                    lambda: self.custom.get_namespaced_custom_object(
                        JOBSET_GROUP, JOBSET_VERSION, namespace, JOBSET_PLURAL, name, **self._kw()
                    )
                )
            elif kind == "PyTorchJob":
                resp = self.gw._call(
                    lambda: self.custom.get_namespaced_custom_object(
                        KUBEFLOW_GROUP,
                        KUBEFLOW_VERSION,
                        namespace,
                        PYTORCHJOB_PLURAL,
                        name,
                        **self._kw(),
                    )
                )
            else:
                raise KeyError(kind)
        except NotFound:
            return None
        return read_json(resp)

    def patch_workload(self, kind: str, namespace: str, name: str, patch: dict) -> dict:
        """Merge-patch a Job, JobSet, PyTorchJob, Deployment or StatefulSet.

        Raises:
            KubeError: classified (409 Conflict after a concurrent write is Retryable).
        """
        kw = {"_content_type": MERGE_PATCH, **self._kw()}
        fn: Callable[[], Any]  # each answers the raw HTTP response (``_preload_content=False``)
        if kind == "Job":
            fn = lambda: self.batch.patch_namespaced_job(name, namespace, patch, **kw)  # noqa: E731
        elif kind == "Deployment":
            fn = lambda: self.apps.patch_namespaced_deployment(name, namespace, patch, **kw)  # noqa: E731
        elif kind == "StatefulSet":
            fn = lambda: self.apps.patch_namespaced_stateful_set(name, namespace, patch, **kw)  # noqa: E731
        elif kind == "JobSet":
            fn = lambda: self.custom.patch_namespaced_custom_object(  # noqa: E731
                JOBSET_GROUP, JOBSET_VERSION, namespace, JOBSET_PLURAL, name, patch, **kw
            )
        elif kind == "PyTorchJob":
            fn = lambda: self.custom.patch_namespaced_custom_object(  # noqa: E731
                KUBEFLOW_GROUP, KUBEFLOW_VERSION, namespace, PYTORCHJOB_PLURAL, name, patch, **kw
            )
        else:
            raise KeyError(kind)
        return read_json(self.gw._call(fn))

    # -- gated pods (Deployment / StatefulSet replicas) ------------------------------------

    def list_queued_pods(self) -> ObjectList:
        """Pods carrying the queue label (replicas of labelled Deployments / StatefulSets)."""
        return self._list(
            lambda: self.core.list_pod_for_all_namespaces(label_selector=LABEL_QUEUE, **self._kw())
        )

    def patch_pod(self, namespace: str, name: str, patch: dict) -> dict:
        """Merge-patch a Pod (annotations, labels, affinity, schedulingGates)."""
        return read_json(
            self.gw._call(
                lambda: self.core.patch_namespaced_pod(
                    name, namespace, patch, _content_type=MERGE_PATCH, **self._kw()
                )
            )
        )

    def delete_pod(self, namespace: str, name: str) -> bool:
        """Delete a Pod (its controller makes a new, gated one); False when already gone."""
        try:
            self.gw._call(lambda: self.core.delete_namespaced_pod(name, namespace, **self._kw()))
        except NotFound:
            return False
        return True

    # -- DRA claim templates ---------------------------------------------------------------

    def ensure_claim_template(self, template: dict) -> None:
        """Create a ResourceClaimTemplate; one already there (a retry) is kept as is."""
        version = template["apiVersion"].rpartition("/")[2]
        api = self.gw._resource_api(version)
        ns = template["metadata"]["namespace"]
        with contextlib.suppress(AlreadyExists):
            self.gw._call(
                lambda: api.create_namespaced_resource_claim_template(ns, template, **self._kw())
            )

    # -- events ----------------------------------------------------------------------------

    def create_event(self, event: dict) -> bool:
        """Create an Event; False when the same event (same name) was already recorded."""
        ns = event["metadata"]["namespace"]
        try:
            self.gw._call(
                lambda: self.core.create_namespaced_event(ns, as_body(event), **self._kw())
            )
        except AlreadyExists:
            return False
        return True

    # -- device cordons ----------------------------------------------------------------------

    def patch_node(self, name: str, patch: dict) -> dict:
        """Merge-patch a Node (the device-cordon annotations)."""
        return read_json(
            self.gw._call(
                lambda: self.core.patch_node(name, patch, _content_type=MERGE_PATCH, **self._kw())
            )
        )

    def taint_rule_version(self) -> str | None:
        """The best resource.k8s.io version whose discovery lists ``devicetaintrules``, or
        None (discovered once per :class:`WorkloadApi`)."""
        if self._taint_version is False:
            self._taint_version = None
            served = set(self.gw.served_versions())
            for version in TAINT_RULE_VERSIONS:
                if version in served and self._serves_taint_rules(version):
                    self._taint_version = version
                    break
        return self._taint_version  # type: ignore[return-value]

    def _serves_taint_rules(self, version: str) -> bool:
        """Whether discovery of resource.k8s.io/``version`` lists ``devicetaintrules``."""
        found = self.gw._call(
            lambda: self._taint_api(version).get_api_resources(_request_timeout=self.gw.timeout)
        )
        return any(r.name == "devicetaintrules" for r in found.resources or [])

    def list_taint_rules(self, version: str, label_selector: str) -> ObjectList:
        """DeviceTaintRules matching ``label_selector``."""
        api = self._taint_api(version)
        return self._list(
            lambda: api.list_device_taint_rule(label_selector=label_selector, **self._kw())
        )

    def create_taint_rule(self, version: str, rule: dict) -> None:
        """Create a DeviceTaintRule; one already there (same name) is kept."""
        api = self._taint_api(version)
        with contextlib.suppress(AlreadyExists):
            self.gw._call(lambda: api.create_device_taint_rule(rule, **self._kw()))

    def delete_taint_rule(self, version: str, name: str) -> None:
        """Delete a DeviceTaintRule (gone already is fine)."""
        api = self._taint_api(version)
        with contextlib.suppress(NotFound):
            self.gw._call(lambda: api.delete_device_taint_rule(name, **self._kw()))

    def _taint_api(self, version: str) -> Any:
        apis = {
            "v1alpha3": getattr(k8s, "ResourceV1alpha3Api", None),
            "v1beta2": k8s.ResourceV1beta2Api,
            "v1": k8s.ResourceV1Api,
        }
        cls = apis.get(version)
        if cls is None or not hasattr(cls, "create_device_taint_rule"):
            raise KeyError(f"this client has no DeviceTaintRule API in {version}")
        return cls(self.gw.api)
