"""Input of the job kinds (``kind`` on ``POST /api/jobs/``) and of the kind actions
(scale, stop, resume): nested Kubernetes settings and the per-kind rules.

Per kind (``validate_job_kind``):

* ``batch``: ``pod_count`` / ``min_pods`` as before; no port, replicas or roles.
* ``training``: ``workers`` (required) and ``min_workers`` instead of ``pod_count`` /
  ``min_pods``; containers with ``role: launcher`` make an extra launcher pod (pod 0, host
  request ``launcher_cpu_milli`` / ``launcher_memory_mib``); ``port`` = MASTER_PORT (29500);
  ``restart_policy`` Never / OnFailure; ``backoff_limit``; ``max_runtime_s``.
* ``inference``: ``port`` (required), ``replicas`` (1), ``min_replicas`` (1) and
  ``max_replicas`` (= replicas); ``preemptible: false`` is admitted only within nominal quota
  (the admission core's rule); pods restart Always.
* ``notebook``: one pod, ``port`` (8888), ``idle_cull_s`` and ``max_runtime_s`` (its maximum
  lifetime; defaults from settings); pods restart Always.
"""

from __future__ import annotations

import re

from rest_framework import serializers

from scheduling.choices import JobKind

LABEL_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$")
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"

KIND_ONLY = {
    "workers": (JobKind.TRAINING,),
    "min_workers": (JobKind.TRAINING,),
    "backoff_limit": (JobKind.TRAINING, JobKind.BATCH),
    "launcher_cpu_milli": (JobKind.TRAINING,),
    "launcher_memory_mib": (JobKind.TRAINING,),
    "replicas": (JobKind.INFERENCE,),
    "min_replicas": (JobKind.INFERENCE,),
    "max_replicas": (JobKind.INFERENCE,),
    "idle_cull_s": (JobKind.NOTEBOOK,),
    "port": (JobKind.TRAINING, JobKind.INFERENCE, JobKind.NOTEBOOK),
    "pod_count": (JobKind.BATCH,),
    "min_pods": (JobKind.BATCH,),
}
"""Input fields that only some kinds take (given for another kind: a field error)."""


class VolumeSerializer(serializers.Serializer):
    """A PersistentVolumeClaim mounted in every app container."""

    claim = serializers.RegexField(
        DNS_SUBDOMAIN, max_length=253, help_text="PersistentVolumeClaim name (same namespace)."
    )
    mount_path = serializers.RegexField(r"^/", max_length=1024)
    read_only = serializers.BooleanField(default=False)


class SecretRefSerializer(serializers.Serializer):
    """A Secret by reference: every key as an environment variable, or files at a path."""

    name = serializers.RegexField(DNS_SUBDOMAIN, max_length=253)
    mount_path = serializers.RegexField(r"^/", max_length=1024, required=False)


class TolerationSerializer(serializers.Serializer):
    """A Kubernetes toleration (``core/v1 Toleration``)."""

    key = serializers.RegexField(LABEL_KEY, max_length=316, required=False)
    operator = serializers.ChoiceField(choices=["Equal", "Exists"], default="Equal")
    value = serializers.RegexField(LABEL_VALUE, max_length=63, required=False, allow_blank=True)
    effect = serializers.ChoiceField(
        choices=["NoSchedule", "PreferNoSchedule", "NoExecute"], required=False
    )
    tolerationSeconds = serializers.IntegerField(min_value=0, required=False)  # noqa: N815

    def validate(self, attrs):
        if attrs["operator"] == "Exists" and attrs.get("value"):
            raise serializers.ValidationError({"value": "Must be empty with operator Exists."})
        if attrs.get("tolerationSeconds") is not None and attrs.get("effect") != "NoExecute":
            raise serializers.ValidationError({"tolerationSeconds": "Only with effect NoExecute."})
        return attrs


def validate_node_selector(value: dict) -> dict:
    """Label keys and values as Kubernetes accepts them."""
    for key, val in value.items():
        if not LABEL_KEY.match(key):
            raise serializers.ValidationError(f"{key!r} is not a label key.")
        if not isinstance(val, str) or not LABEL_VALUE.match(val):
            raise serializers.ValidationError(f"{val!r} is not a label value ({key}).")
    return value


def _check_training(attrs: dict, errors: dict) -> None:
    if not attrs.get("workers"):
        errors["workers"] = "Required for a training job."
        return
    if attrs.get("min_workers") and attrs["min_workers"] > attrs["workers"]:
        errors["min_workers"] = "Must not exceed workers."
    roles = {c.get("role", "") for c in attrs["containers"] if not c.get("init")}
    if roles == {"launcher"}:
        errors["containers"] = "A training job needs worker containers (role worker or blank)."


def validate_job_kind(attrs: dict) -> dict:
    """Apply the per-kind rules (module docstring) to the submission ``attrs``; returns them
    with ``pod_count``, ``min_pods`` and ``restart_policy`` set for the kind.

    Raises:
        serializers.ValidationError: field errors, all at once.
    """
    kind = attrs.get("kind", JobKind.BATCH)
    given = attrs.get("_given", set())
    errors = {
        name: f"Not used by a {kind} job."
        for name, kinds in KIND_ONLY.items()
        if name in given and kind not in kinds
    }
    roles = [c.get("role", "") for c in attrs["containers"] if c.get("role")]
    if roles and kind != JobKind.TRAINING:
        errors["containers"] = "Container roles (launcher/worker) are for training jobs."
    if kind == JobKind.TRAINING:
        _check_training(attrs, errors)
    if kind == JobKind.INFERENCE:
        if not attrs.get("port"):
            errors["port"] = "Required: the port the service listens on."
        replicas = attrs.get("replicas") or 1
        low = attrs.get("min_replicas") or 1
        high = attrs.get("max_replicas") or max(replicas, low)
        if not low <= replicas <= high:
            errors["replicas"] = f"Must be between min_replicas ({low}) and max_replicas ({high})."
        attrs.update(replicas=replicas, min_replicas=low, max_replicas=high)
    if kind in (JobKind.INFERENCE, JobKind.NOTEBOOK):
        if "restart_policy" in given:
            errors["restart_policy"] = f"A {kind} pod restarts Always: leave this out."
        attrs["restart_policy"] = "Always"
    if kind == JobKind.NOTEBOOK:
        attrs["port"] = attrs.get("port") or 8888
    if errors:
        raise serializers.ValidationError(errors)
    if kind == JobKind.TRAINING:
        launcher = any(c.get("role") == "launcher" for c in attrs["containers"])
        attrs["pod_count"] = attrs["workers"] + int(launcher)
        if attrs.get("min_workers"):
            attrs["min_pods"] = attrs["min_workers"] + int(launcher)
    elif kind != JobKind.BATCH:
        attrs["pod_count"], attrs["min_pods"] = 1, None
    return attrs


class ScaleSerializer(serializers.Serializer):
    """Input of ``POST /api/jobs/<id>/scale/``."""

    replicas = serializers.IntegerField(min_value=1, max_value=1024)
