"""Labels and annotations the console puts on every Kubernetes object it creates.

Labels are for selecting (values cleaned to DNS labels, :func:`~scheduling.kube.names.label_value`);
annotations keep the same identities verbatim. ``app.kubernetes.io/managed-by`` is the
Kubernetes recommended label; the ``console.llmops.io/`` keys are the console's own.
"""

from __future__ import annotations

__all__ = [
    "LABEL_MANAGED_BY",
    "MANAGED_BY",
    "LABEL_TENANT",
    "LABEL_JOB",
    "LABEL_PLACEMENT",
    "LABEL_POD",
    "ANNOTATION_TENANT",
    "ANNOTATION_JOB",
    "ANNOTATION_PLACEMENT",
    "CONSOLE_SELECTOR",
]

LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGED_BY = "llmops-console"
LABEL_TENANT = "console.llmops.io/tenant"
LABEL_JOB = "console.llmops.io/job"
LABEL_PLACEMENT = "console.llmops.io/placement"
LABEL_POD = "console.llmops.io/pod"
ANNOTATION_TENANT = "console.llmops.io/tenant"
ANNOTATION_JOB = "console.llmops.io/job"
ANNOTATION_PLACEMENT = "console.llmops.io/placement"
CONSOLE_SELECTOR = f"{LABEL_MANAGED_BY}={MANAGED_BY}"
"""Label selector matching every object the console creates."""
