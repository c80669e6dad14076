"""Build a ``kubernetes.client.ApiClient`` from explicit configuration, and probe a cluster.

Nothing here reads global state: no ``~/.kube/config`` fallback and no process-wide default
``Configuration`` is touched. The console stores which cluster to talk to (kubeconfig path +
context, or "in-cluster") and passes it here.

Retries are switched off in urllib3 (``Configuration.retries = False``) so that one call is
one HTTP request; :mod:`scheduling.kube.gateway` owns retrying with backoff and honours
``Retry-After`` (urllib3 would otherwise silently re-send GETs and sleep on 429).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.config.config_exception import ConfigException
from kubernetes.config.incluster_config import (
    SERVICE_CERT_FILENAME,
    SERVICE_TOKEN_FILENAME,
    InClusterConfigLoader,
)

from scheduling.kube.errors import NotFound, Permanent, classify

__all__ = [
    "RESOURCE_GROUP",
    "DRA_VERSIONS",
    "ClusterInfo",
    "build_api_client",
    "test_connection",
    "served_resource_versions",
    "preferred_dra_version",
]

RESOURCE_GROUP = "resource.k8s.io"
DRA_VERSIONS = ("v1", "v1beta2", "v1beta1")
"""resource.k8s.io versions we can emit, best first (v1 GA in 1.34, v1beta2 1.33, v1beta1
1.32; KEP-4381)."""


@dataclass(frozen=True, slots=True)
class ClusterInfo:
    """What :func:`test_connection` found.

    Attributes:
        git_version: server version string, e.g. ``"v1.34.1"``.
        major / minor: numeric version parts (``minor`` stripped of a trailing ``+``).
        resource_versions: resource.k8s.io versions the server serves, in server order
            (preferred first); empty when the cluster has no DRA API.
        dra_version: best version we can use (v1 > v1beta2 > v1beta1), or None.
    """

    git_version: str
    major: int
    minor: int
    resource_versions: tuple[str, ...]
    dra_version: str | None


def build_api_client(
    *,
    kubeconfig: str | None = None,
    context: str | None = None,
    in_cluster: bool = False,
    request_timeout_s: float | None = None,
    token_path: str = SERVICE_TOKEN_FILENAME,
    ca_path: str = SERVICE_CERT_FILENAME,
    environ: Mapping[str, str] | None = None,
) -> k8s.ApiClient:
    """Create an ApiClient for exactly one of: a kubeconfig file (+ context) or in-cluster.

    Args:
        kubeconfig: path of a kubeconfig file (required unless ``in_cluster``).
        context: context name in the kubeconfig; None = its ``current-context``.
        in_cluster: use the pod's service account (token, CA, ``KUBERNETES_SERVICE_HOST``/
            ``_PORT``).
        request_timeout_s: stored on the client as ``request_timeout_s`` attribute for the
            gateway to use as default per-request timeout (None = no timeout).
        token_path / ca_path / environ: in-cluster sources (defaults: the standard service
            account mount and ``os.environ``); overridable for tests.

    Returns:
        A configured ``kubernetes.client.ApiClient`` (urllib3 retries disabled).

    Raises:
        ValueError: neither or both of ``kubeconfig`` and ``in_cluster`` given.
        Permanent: the configuration cannot be loaded (missing file, unknown context, no
            service account) - message says why.
    """
    if in_cluster == bool(kubeconfig):
        raise ValueError("give exactly one of kubeconfig=<path> or in_cluster=True")
    cfg = k8s.Configuration()
    try:
        if in_cluster:
            InClusterConfigLoader(
                token_filename=token_path,
                cert_filename=ca_path,
                environ=os.environ if environ is None else environ,
            ).load_and_set(cfg)
        else:
            if not os.path.isfile(kubeconfig or ""):
                raise ConfigException(f"kubeconfig file {kubeconfig!r} does not exist")
            k8s_config.load_kube_config(
                config_file=kubeconfig,
                context=context,
                client_configuration=cfg,
                persist_config=False,
            )
    except ConfigException as exc:
        raise Permanent(0, "ConfigError", f"cannot load Kubernetes configuration: {exc}") from exc
    cfg.retries = False
    api = k8s.ApiClient(cfg)
    api.request_timeout_s = request_timeout_s  # type: ignore[attr-defined]
    api.user_agent = "llmops-console/0.1 " + api.user_agent
    return api


def served_resource_versions(api: k8s.ApiClient) -> tuple[str, ...]:
    """resource.k8s.io versions the server serves (preferred first); () if the group is absent.

    Raises:
        KubeError: the discovery call failed (other than the group being absent).
    """
    try:
        groups = k8s.ApisApi(api).get_api_versions(
            _request_timeout=getattr(api, "request_timeout_s", None)
        )
    except Exception as exc:  # noqa: BLE001 - classified below
        err = classify(exc)
        if err is None:
            raise
        raise err from exc
    for g in groups.groups or []:
        if g.name != RESOURCE_GROUP:
            continue
        versions = [v.version for v in g.versions or []]
        pref = g.preferred_version.version if g.preferred_version else None
        if pref in versions:
            versions.remove(pref)
            versions.insert(0, pref)
        return tuple(versions)
    return ()


def preferred_dra_version(served: tuple[str, ...]) -> str | None:
    """Best version we can emit among ``served``: v1 > v1beta2 > v1beta1 (None if none)."""
    for v in DRA_VERSIONS:
        if v in served:
            return v
    return None


def test_connection(api: k8s.ApiClient) -> ClusterInfo:
    """Probe the server: ``GET /version`` then ``GET /apis`` (discovery).

    Returns:
        :class:`ClusterInfo` with the server version and the served resource.k8s.io versions.

    Raises:
        Retryable / Permanent: classified failure (e.g. 401 Unauthorized is Permanent with the
            server's message; connection refused is Retryable).
    """
    try:
        info = k8s.VersionApi(api).get_code(
            _request_timeout=getattr(api, "request_timeout_s", None)
        )
    except Exception as exc:  # noqa: BLE001 - classified below
        err = classify(exc)
        if err is None:
            raise
        if isinstance(err, NotFound):
            err = Permanent(404, "NotFound", "no /version endpoint: not a Kubernetes API server")
        raise err from exc
    served = served_resource_versions(api)
    minor_digits = "".join(ch for ch in str(info.minor) if ch.isdigit())
    major_digits = "".join(ch for ch in str(info.major) if ch.isdigit())
    return ClusterInfo(
        git_version=str(info.git_version),
        major=int(major_digits or 0),
        minor=int(minor_digits or 0),
        resource_versions=served,
        dra_version=preferred_dra_version(served),
    )


test_connection.__test__ = False  # type: ignore[attr-defined]  # not a pytest test
