"""Object names of the console's Kubernetes objects: DNS-1123 labels derived from placement
ids (deterministic, so a retried create meets 409 AlreadyExists) and label values."""

from __future__ import annotations

import hashlib
import re

from scheduling.kube.device_resources import ManifestError

__all__ = ["dns_label", "label_value", "pod_name", "claim_name"]

_NOT_LABEL_CHARS = re.compile(r"[^a-z0-9-]+")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def dns_label(*parts: str, max_len: int = 63) -> str:
    """Join ``parts`` with '-' into a DNS-1123 label (RFC 1123: ``[a-z0-9]([-a-z0-9]*[a-z0-9])?``).

    Lower-cases, replaces runs of other characters by '-', trims '-' at the ends. When that
    changed the text or it is longer than ``max_len``, it is cut and suffixed with
    ``-<first 8 hex of sha256(original joined text)>`` so distinct inputs stay distinct.

    Raises:
        ManifestError: nothing usable is left (e.g. all parts empty).
    """
    raw = "-".join(p for p in parts if p != "")
    clean = _NOT_LABEL_CHARS.sub("-", raw.lower()).strip("-")
    clean = re.sub(r"-{2,}", "-", clean)
    if not clean:
        raise ManifestError(f"cannot make a DNS-1123 label from {parts!r}")
    if clean == raw and len(clean) <= max_len:
        return clean
    digest = hashlib.sha256(raw.encode()).hexdigest()[:8]
    head = clean[: max_len - 9].rstrip("-")
    return f"{head}-{digest}" if head else digest


def label_value(value: str) -> str:
    if len(value) <= 63 and _LABEL_VALUE.match(value):
        return value
    return dns_label(value)


def pod_name(placement_id: str, pod: str) -> str:
    """Pod name for one pod of a placement: ``p-<placement id>-<pod>`` as a DNS label.

    ``pod`` is ``PodAssignment.pod`` (a ``namespace/name`` prefix is dropped).
    """
    return dns_label("p", placement_id, pod.rsplit("/", 1)[-1])


def claim_name(pod: str) -> str:
    """ResourceClaim name of a pod: ``<pod name>-dev`` (DNS label, <= 63)."""
    return dns_label(pod, "dev")
