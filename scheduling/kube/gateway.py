"""The console's only door to the API server: :class:`KubeGateway` and its implementation.

:class:`KubernetesGateway` talks through the official ``kubernetes`` client and returns plain
dicts (the API's JSON), never client model objects, so callers and the in-memory fakes share
one shape. Every call:

* retries :class:`~scheduling.kube.errors.Retryable` failures with backoff and raises
  :class:`~scheduling.kube.errors.Permanent` ones at once (:mod:`scheduling.kube.transport`);
* treats 409 AlreadyExists on create as success (our names are deterministic) after checking
  the existing object carries the same ``console.llmops.io/placement`` label - another
  object with that name is a Permanent error, not a silent success.

``submit`` creates in the documented order (``manifests``): claims, then the Pod, then
patches each claim with an ownerReference to the Pod. Every step is idempotent, so a submit
interrupted anywhere is finished by calling it again. ``watch_pods`` follows the watch
contract of :mod:`scheduling.kube.pod_watch` (bookmarks, 410 Expired and relists).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from kubernetes import client as k8s

from scheduling.kube.client import DRA_VERSIONS, served_resource_versions
from scheduling.kube.device_resources import ManifestError
from scheduling.kube.errors import AlreadyExists, NotFound, Permanent
from scheduling.kube.manifests import CONSOLE_SELECTOR, LABEL_PLACEMENT, Manifests
from scheduling.kube.namespaces import namespace_labels_patch
from scheduling.kube.pod_watch import WatchEvent, watch_pod_events
from scheduling.kube.transport import ObjectList, RetryPolicy, as_body, call_with_retry, read_json
from scheduling.kube.workloads import LABEL_WORKLOAD

__all__ = [
    "KubeGateway",
    "KubernetesGateway",
    "RetryPolicy",
    "SubmitResult",
    "ObjectList",
    "WatchEvent",
]

T = TypeVar("T")
MERGE_PATCH = "application/merge-patch+json"


@dataclass(frozen=True, slots=True)
class SubmitResult:
    """Outcome of :meth:`KubeGateway.submit`.

    Attributes:
        pod: the Pod as the server holds it (with uid, resourceVersion).
        claims: the claims as the server holds them after the owner patch.
        created: names (``"Pod/x"``, ``"ResourceClaim/y"``) created by this call; objects
            that already existed (AlreadyExists) are not listed.
    """

    pod: dict
    claims: tuple[dict, ...] = ()
    created: tuple[str, ...] = ()


class KubeGateway(Protocol):
    """What services need from a cluster (implemented by :class:`KubernetesGateway`)."""

    def dra_version(self) -> str | None:
        """Best served resource.k8s.io version (``"v1"`` > ``"v1beta2"`` > ``"v1beta1"``)."""
        ...

    def ensure_namespace(self, namespace: dict) -> dict:
        """Create the Namespace, or label an existing unlabelled one; idempotent."""
        ...

    def submit(self, manifests: Manifests) -> SubmitResult:
        """Ensure the namespace, create claims, then the Pod, then owner references;
        idempotent."""
        ...

    def delete(self, namespace: str, pod_name: str, claim_names: tuple[str, ...] = ()) -> bool:
        """Delete the Pod (claims follow by GC) and any listed claims; False if all absent."""
        ...

    def get_pod(self, namespace: str, name: str) -> dict | None:
        """The Pod or None."""
        ...

    def list_pods(
        self, namespace: str | None = None, label_selector: str = CONSOLE_SELECTOR
    ) -> ObjectList:
        """Pods matching the selector (all namespaces when ``namespace`` is None)."""
        ...

    def watch_pods(
        self,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        timeout_s: int = 60,
        label_selector: str = CONSOLE_SELECTOR,
    ) -> Iterator[WatchEvent]:
        """Changes since ``resource_version``; relists on 410."""
        ...

    def list_nodes(self) -> ObjectList:
        """All Nodes."""
        ...

    def list_resource_slices(self) -> ObjectList:
        """All ResourceSlices (empty when the cluster has no DRA API)."""
        ...


class KubernetesGateway:
    """:class:`KubeGateway` over the official client.

    Args:
        api: a configured ``kubernetes.client.ApiClient`` (see :func:`client.build_api_client`).
        retry: backoff policy.
        request_timeout_s: per request timeout (None = the client's attribute
            ``request_timeout_s`` if set, else none).
        sleep: called with seconds to wait between retries (tests pass a recorder).
    """

    def __init__(
        self,
        api: k8s.ApiClient,
        *,
        retry: RetryPolicy | None = None,
        request_timeout_s: float | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.api = api
        self.retry = retry or RetryPolicy()
        self.timeout = (
            request_timeout_s
            if request_timeout_s is not None
            else getattr(api, "request_timeout_s", None)
        )
        self.sleep = sleep
        self.core = k8s.CoreV1Api(api)
        self._dra: str | None | bool = False  # False = not discovered yet
        self._served: tuple[str, ...] | None = None
        self._namespaces: set[str] = set()  # ensured by this gateway (process cache)

    # -- plumbing ------------------------------------------------------------------------

    def _call(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` with retries; raise classified errors (AlreadyExists included)."""
        return call_with_retry(fn, self.retry, self.sleep)

    def _kw(self) -> dict[str, Any]:
        kw: dict[str, Any] = {"_preload_content": False}
        if self.timeout:
            kw["_request_timeout"] = self.timeout
        return kw

    def _resource_api(self, version: str) -> Any:
        apis = {
            "v1": k8s.ResourceV1Api,
            "v1beta2": k8s.ResourceV1beta2Api,
            "v1beta1": k8s.ResourceV1beta1Api,
        }
        if version not in apis:
            raise Permanent(
                0,
                "UnsupportedVersion",
                f"resource.k8s.io/{version} is not supported by this console",
            )
        return apis[version](self.api)

    # -- discovery -----------------------------------------------------------------------

    def served_versions(self) -> tuple[str, ...]:
        """Every served resource.k8s.io version (preferred first), discovered once."""
        if self._served is None:
            self._served = self._call(lambda: served_resource_versions(self.api))
        return self._served

    def dra_version(self) -> str | None:
        """Best served resource.k8s.io version, discovered once and cached."""
        if self._dra is False:
            served = self.served_versions()
            self._dra = next((v for v in DRA_VERSIONS if v in served), None)
        return self._dra  # type: ignore[return-value]

    # -- writes --------------------------------------------------------------------------

    def _create(
        self,
        create: Callable[[], Any],
        read: Callable[[], Any],
        kind: str,
        obj: dict,
        key: str = LABEL_PLACEMENT,
    ) -> tuple[dict, bool]:
        """Create ``obj``; on AlreadyExists return the existing one if it is ours (same
        ``key`` label: the placement's, or the workload's for a shared Service)."""
        try:
            return read_json(self._call(create)), True
        except AlreadyExists:
            existing = read_json(self._call(read))
        mine = (obj["metadata"].get("labels") or {}).get(key)
        theirs = (existing.get("metadata", {}).get("labels") or {}).get(key)
        if mine != theirs:
            owner = "placement" if key == LABEL_PLACEMENT else "workload"
            raise Permanent(
                409,
                "AlreadyExists",
                f"{kind} {obj['metadata']['name']!r} already exists and belongs to "
                f"{owner} {theirs!r}, not {mine!r}",
            )
        return existing, False

    def ensure_namespace(self, namespace: dict) -> dict:
        """Create ``namespace`` (a :func:`~scheduling.kube.namespaces.build_namespace`
        object); when it exists, add the console's labels it lacks (merge patch).

        Returns:
            The Namespace as the server holds it.

        Raises:
            Permanent: the server refused, or the namespace is labelled for another tenant.
            Retryable: still failing after ``retry.max_attempts`` tries.
        """
        name = namespace["metadata"]["name"]
        try:
            created = read_json(
                self._call(lambda: self.core.create_namespace(as_body(namespace), **self._kw()))
            )
        except AlreadyExists:
            existing = read_json(self._call(lambda: self.core.read_namespace(name, **self._kw())))
            try:
                patch = namespace_labels_patch(existing, namespace)
            except ManifestError as exc:
                raise Permanent(409, "AlreadyExists", str(exc)) from exc
            if patch is not None:
                body = as_body(patch)
                existing = read_json(
                    self._call(
                        lambda: self.core.patch_namespace(
                            name, body, _content_type=MERGE_PATCH, **self._kw()
                        )
                    )
                )
            created = existing
        self._namespaces.add(name)
        return created

    def submit(self, manifests: Manifests) -> SubmitResult:
        """Ensure the tenant's namespace (``manifests.namespace_object``, once per gateway),
        create the claims, then the Pod, then make the Pod own each claim.

        A namespace deleted behind the console's back (the create answers 404 for it) is
        created again and the objects retried once.

        Returns:
            :class:`SubmitResult` with the server's objects.

        Raises:
            Permanent: rejected by the server (message from the server), a name already used
                by another placement, a namespace of another tenant, or a claim apiVersion the
                server does not serve.
            Retryable: still failing after ``retry.max_attempts`` tries.
        """
        wanted = manifests.namespace_object
        if wanted is not None and wanted["metadata"]["name"] not in self._namespaces:
            self.ensure_namespace(wanted)
        try:
            return self._submit_objects(manifests)
        except NotFound:
            if wanted is None:
                raise
            self._namespaces.discard(wanted["metadata"]["name"])
            self.ensure_namespace(wanted)
            return self._submit_objects(manifests)

    def _submit_objects(self, manifests: Manifests) -> SubmitResult:
        """Create the services, the claims and the Pod, then make the Pod own the claims and
        the services (each step idempotent)."""
        ns = manifests.namespace
        created: list[str] = []
        for service in manifests.services:
            self._create_service(ns, service, created)
        claim_apis = [self._create_claim(ns, claim, created) for claim in manifests.claims]
        pod, new = self._create(
            lambda: self.core.create_namespaced_pod(ns, as_body(manifests.pod), **self._kw()),
            lambda: self.core.read_namespaced_pod(manifests.pod_name, ns, **self._kw()),
            "Pod",
            manifests.pod,
        )
        if new:
            created.append(f"Pod/{manifests.pod_name}")
        owner = {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": pod["metadata"]["name"],
            "uid": pod["metadata"]["uid"],
        }
        claims = [self._own_claim(api, ns, name, owner) for api, name in claim_apis]
        for service in manifests.services:
            self._own_service(ns, service["metadata"]["name"], owner)
        return SubmitResult(pod=pod, claims=tuple(claims), created=tuple(created))

    def _create_service(self, ns: str, service: dict, created: list[str]) -> None:
        """Create the workload's Service (shared by its pods: ownership by workload label);
        its name goes to ``created`` when this call made it."""
        name = service["metadata"]["name"]
        _obj, new = self._create(
            lambda: self.core.create_namespaced_service(ns, as_body(service), **self._kw()),
            lambda: self.core.read_namespaced_service(name, ns, **self._kw()),
            "Service",
            service,
            key=LABEL_WORKLOAD,
        )
        if new:
            created.append(f"Service/{name}")

    def _create_claim(self, ns: str, claim: dict, created: list[str]) -> tuple[Any, str]:
        """Create the ResourceClaim through the API of its apiVersion; returns that API and
        the claim's name (for the owner patch)."""
        api = self._resource_api(claim["apiVersion"].rpartition("/")[2])
        name = claim["metadata"]["name"]
        _obj, new = self._create(
            lambda: api.create_namespaced_resource_claim(ns, claim, **self._kw()),
            lambda: api.read_namespaced_resource_claim(name, ns, **self._kw()),
            "ResourceClaim",
            claim,
        )
        if new:
            created.append(f"ResourceClaim/{name}")
        return api, name

    def _own_claim(self, api: Any, ns: str, name: str, owner: dict) -> dict:
        """The claim after adding ``owner`` to its ownerReferences (:meth:`_ensure_owner`)."""
        return self._call(
            lambda: self._ensure_owner(
                lambda: api.read_namespaced_resource_claim(name, ns, **self._kw()),
                lambda patch: api.patch_namespaced_resource_claim(
                    name, ns, patch, _content_type=MERGE_PATCH, **self._kw()
                ),
                owner,
            )
        )

    def _own_service(self, ns: str, name: str, owner: dict) -> dict:
        """The Service after adding ``owner`` to its ownerReferences (:meth:`_ensure_owner`)."""
        return self._call(
            lambda: self._ensure_owner(
                lambda: self.core.read_namespaced_service(name, ns, **self._kw()),
                lambda patch: self.core.patch_namespaced_service(
                    name, ns, as_body(patch), _content_type=MERGE_PATCH, **self._kw()
                ),
                owner,
            )
        )

    @staticmethod
    def _ensure_owner(read: Callable[[], Any], patch: Callable[[dict], Any], owner: dict) -> dict:
        """Read the object (a claim, a Service) and add ``owner`` to its ownerReferences
        unless present.

        A JSON merge patch replaces the whole list, so it carries the resourceVersion read:
        a concurrent change answers 409 Conflict and :meth:`_call` re-runs read + patch.
        """
        current = read_json(read())
        refs = current["metadata"].get("ownerReferences") or []
        if any(r.get("uid") == owner["uid"] for r in refs):
            return current
        return read_json(
            patch(
                {
                    "metadata": {
                        "ownerReferences": [*refs, owner],
                        "resourceVersion": current["metadata"]["resourceVersion"],
                    }
                }
            )
        )

    def delete(self, namespace: str, pod_name: str, claim_names: tuple[str, ...] = ()) -> bool:
        """Delete the Pod (background propagation: owned claims are garbage-collected) and
        the named claims (in case the owner patch never happened).

        Returns:
            True when something was deleted, False when all were already gone (404).

        Raises:
            Permanent / Retryable: as classified.
        """
        body = as_body({"propagationPolicy": "Background"})
        deleted = False
        try:
            self._call(
                lambda: self.core.delete_namespaced_pod(
                    pod_name, namespace, body=body, **self._kw()
                )
            )
            deleted = True
        except NotFound:
            pass
        if claim_names:
            version = self.dra_version()
            if version is None:
                raise Permanent(0, "NoDRA", "the cluster serves no resource.k8s.io version")
            api = self._resource_api(version)
            for name in claim_names:
                deleted = self._delete_claim(api, namespace, name, body) or deleted
        return deleted

    def _delete_claim(self, api: Any, namespace: str, name: str, body: Any) -> bool:
        """Delete one ResourceClaim; False when it was already gone (404)."""
        try:
            self._call(
                lambda: api.delete_namespaced_resource_claim(
                    name, namespace, body=body, **self._kw()
                )
            )
        except NotFound:
            return False
        return True

    # -- reads ---------------------------------------------------------------------------

    def get_pod(self, namespace: str, name: str) -> dict | None:
        """The Pod, or None when it does not exist."""
        try:
            return read_json(
                self._call(lambda: self.core.read_namespaced_pod(name, namespace, **self._kw()))
            )
        except NotFound:
            return None

    def get_claim(self, namespace: str, name: str) -> dict | None:
        """The ResourceClaim (in the preferred served version), or None."""
        version = self.dra_version()
        if version is None:
            return None
        api = self._resource_api(version)
        try:
            return read_json(
                self._call(
                    lambda: api.read_namespaced_resource_claim(name, namespace, **self._kw())
                )
            )
        except NotFound:
            return None

    def _list(self, fn: Callable[..., Any], *args: Any, **kw: Any) -> ObjectList:
        data = read_json(self._call(lambda: fn(*args, **kw, **self._kw())))
        return ObjectList(
            items=list(data.get("items") or []),
            resource_version=str((data.get("metadata") or {}).get("resourceVersion", "")),
        )

    def list_pods(
        self, namespace: str | None = None, label_selector: str = CONSOLE_SELECTOR
    ) -> ObjectList:
        """Pods with the console's label (or ``label_selector``)."""
        if namespace is None:
            return self._list(self.core.list_pod_for_all_namespaces, label_selector=label_selector)
        return self._list(self.core.list_namespaced_pod, namespace, label_selector=label_selector)

    def list_nodes(self) -> ObjectList:
        """All Nodes."""
        return self._list(self.core.list_node)

    def list_resource_slices(self) -> ObjectList:
        """All ResourceSlices in the preferred served version; empty without DRA."""
        version = self.dra_version()
        if version is None:
            return ObjectList(items=[], resource_version="")
        return self._list(self._resource_api(version).list_resource_slice)

    # -- watch ---------------------------------------------------------------------------

    def watch_pods(
        self,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        timeout_s: int = 60,
        label_selector: str = CONSOLE_SELECTOR,
    ) -> Iterator[WatchEvent]:
        """Stream pod changes for about ``timeout_s`` seconds.

        Starts at ``resource_version`` (None: list first and yield a ``RELISTED`` event).
        A 410 Expired - as an HTTP status or a watch ``ERROR`` event, whichever the server
        uses - triggers a relist (yielded as ``RELISTED``) and the watch resumes from the
        list's resourceVersion. BOOKMARK events advance the resume point without being
        yielded. Ends when the server closes the stream at the timeout
        (:func:`~scheduling.kube.pod_watch.watch_pod_events`).

        Raises:
            Permanent / Retryable: as classified (after retries for opening the stream).
        """
        return watch_pod_events(
            lambda rv, left: self._open_pod_watch(namespace, label_selector, rv, left),
            lambda: self._relisted(namespace, label_selector),
            resource_version=resource_version,
            timeout_s=timeout_s,
        )

    def _relisted(self, namespace: str | None, label_selector: str) -> WatchEvent:
        """List the pods again: the ``RELISTED`` event that replaces the caller's view."""
        lst = self.list_pods(namespace, label_selector)
        return WatchEvent("RELISTED", None, lst.resource_version, lst.items)

    def _open_pod_watch(
        self, namespace: str | None, label_selector: str, rv: str, left: int
    ) -> Any:
        """Open one watch stream of ``left`` seconds from ``rv`` (raises Expired on 410)."""
        kw: dict[str, Any]
        kw = {  # a plain assignment: tests/deploy/kube_calls.py reads the "watch" key from it
            "label_selector": label_selector,
            "watch": True,
            "resource_version": rv,
            "timeout_seconds": left,
            "allow_watch_bookmarks": True,
            "_preload_content": False,
        }
        if self.timeout:
            kw["_request_timeout"] = (self.timeout, left + self.timeout)
        if namespace is None:
            return self._call(lambda: self.core.list_pod_for_all_namespaces(**kw))
        return self._call(lambda: self.core.list_namespaced_pod(namespace, **kw))
