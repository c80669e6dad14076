"""Pure builders and checks of the tenant namespaces the console creates (one per tenant and
cluster; the name comes from ``tenants.selectors.tenant_namespace``).

A tenant namespace carries the console's labels, so that ``kubectl get ns -l
app.kubernetes.io/managed-by=llmops-console`` lists them and a namespace is never shared by
two tenants:

* ``app.kubernetes.io/managed-by: llmops-console``
* ``console.llmops.io/tenant: <tenant slug as a label value>``, and the annotation of the same
  key with the tenant name as is;
* ``pod-security.kubernetes.io/enforce: <level>`` (:mod:`scheduling.kube.pod_security`): Pod
  Security Admission enforces that level on the tenant's pods (``TENANT_POD_SECURITY_LEVEL``,
  default ``baseline``: no privileged containers, host namespaces, host paths or ports).

An existing namespace is adopted when it has no tenant label (an operator created it ahead of
time): the console adds its labels with a merge patch, keeping an enforced Pod Security level
stricter than its own. A namespace labelled for another tenant
is refused (:class:`~scheduling.kube.device_resources.ManifestError`): pods of one tenant never
land in another's namespace.
"""

from __future__ import annotations

from collections.abc import Mapping

from scheduling.kube.device_resources import ManifestError
from scheduling.kube.manifests import ANNOTATION_TENANT, LABEL_MANAGED_BY, LABEL_TENANT, MANAGED_BY
from scheduling.kube.names import dns_label, label_value
from scheduling.kube.pod_security import LABEL_ENFORCE, LEVELS, stricter

__all__ = ["build_namespace", "namespace_labels_patch"]


def build_namespace(name: str, tenant: str, pod_security: str) -> dict:
    """The Namespace object of ``tenant`` named ``name``, enforcing the Pod Security level
    ``pod_security`` (one of :data:`~scheduling.kube.pod_security.LEVELS`).

    Raises:
        ManifestError: ``name`` is not a DNS-1123 label (RFC 1123, at most 63 characters), or
            ``pod_security`` is no level.
    """
    if dns_label(name) != name:
        raise ManifestError(f"namespace name {name!r} is not a DNS-1123 label")
    if pod_security not in LEVELS:
        raise ManifestError(f"Pod Security level {pod_security!r} is not one of {LEVELS}")
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": name,
            "labels": {
                LABEL_MANAGED_BY: MANAGED_BY,
                LABEL_TENANT: label_value(tenant),
                LABEL_ENFORCE: pod_security,
            },
            "annotations": {ANNOTATION_TENANT: tenant},
        },
    }


def namespace_labels_patch(existing: Mapping, wanted: Mapping) -> dict | None:
    """The merge patch that gives an existing namespace the console's labels, or None when it
    already has them. An enforced Pod Security level stricter than the wanted one stays (an
    operator hardened the namespace); a laxer one is raised.

    Args:
        existing: the Namespace as the server holds it.
        wanted: the :func:`build_namespace` object.

    Raises:
        ManifestError: the namespace is labelled for another tenant.
    """
    meta = existing.get("metadata") or {}
    labels = meta.get("labels") or {}
    want = wanted["metadata"]
    theirs = labels.get(LABEL_TENANT)
    if theirs is not None and theirs != want["labels"][LABEL_TENANT]:
        raise ManifestError(
            f"namespace {want['name']!r} belongs to tenant {theirs!r}, not "
            f"{want['labels'][LABEL_TENANT]!r}"
        )
    wanted_labels = dict(want["labels"])
    if LABEL_ENFORCE in labels and LABEL_ENFORCE in wanted_labels:
        wanted_labels[LABEL_ENFORCE] = stricter(
            str(labels[LABEL_ENFORCE]), wanted_labels[LABEL_ENFORCE]
        )
    missing = {k: v for k, v in wanted_labels.items() if labels.get(k) != v}
    notes = meta.get("annotations") or {}
    missing_notes = {k: v for k, v in want["annotations"].items() if notes.get(k) != v}
    if not missing and not missing_notes:
        return None
    patch: dict = {"metadata": {}}
    if missing:
        patch["metadata"]["labels"] = missing
    if missing_notes:
        patch["metadata"]["annotations"] = missing_notes
    return patch
