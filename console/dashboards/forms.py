"""Forms of the pages. Job submission validates through the API's serializer, so the form
and ``POST /api/jobs/`` accept exactly the same input."""

from __future__ import annotations

import shlex

from django import forms
from django.contrib.auth import get_user_model

from core.api import flatten_errors
from scheduling.api.serializers import VENDORS, JobSubmitSerializer
from scheduling.choices import JobKind
from scheduling.models import DeviceModel, PriorityClass
from scheduling.selectors.access import queue_runnable_models
from tenants.choices import Role


class JobSubmitForm(forms.Form):
    """One-container job of any kind: host request, device request, the kind's count (pods,
    workers or replicas), image, port, limits and one volume / secret reference."""

    queue = forms.ModelChoiceField(queryset=None, empty_label=None)
    name = forms.CharField(max_length=200)
    priority_class = forms.ChoiceField(
        required=False, label="Priority class (empty = the queue's default)"
    )
    kind = forms.ChoiceField(choices=JobKind.choices, initial=JobKind.BATCH, required=False)
    pod_count = forms.IntegerField(
        initial=1, min_value=1, max_value=1024, label="Pods (gang size) / workers / replicas"
    )
    min_count = forms.IntegerField(
        min_value=1,
        max_value=1024,
        required=False,
        label="Gang minimum (workers) / minimum replicas",
    )
    max_replicas = forms.IntegerField(
        min_value=1, max_value=1024, required=False, label="Maximum replicas (inference)"
    )
    image = forms.CharField(
        max_length=512, required=False, label="Container image (needed on Kubernetes)"
    )
    command = forms.CharField(
        max_length=4096, required=False, label="Command (shell words, empty = image default)"
    )
    port = forms.IntegerField(
        min_value=1,
        max_value=65535,
        required=False,
        label="Port (inference: required; notebook: 8888)",
    )
    non_preemptible = forms.BooleanField(
        required=False, label="Not preemptible (admitted within nominal quota only)"
    )
    max_runtime_s = forms.FloatField(
        min_value=1, required=False, label="Max run time / notebook lifetime (s)"
    )
    idle_cull_s = forms.FloatField(
        min_value=60, required=False, label="Notebook: stop after idle (s)"
    )
    volume_claim = forms.CharField(
        max_length=253, required=False, label="PersistentVolumeClaim (optional)"
    )
    volume_mount_path = forms.CharField(max_length=1024, required=False, label="mounted at")
    secret = forms.CharField(
        max_length=253, required=False, label="Secret (keys as environment, optional)"
    )
    cpu_milli = forms.IntegerField(initial=1000, min_value=0, label="CPU per pod (milli-cores)")
    host_memory_mib = forms.IntegerField(
        initial=4096, min_value=0, label="Host memory per pod (MiB)"
    )
    duration_s = forms.FloatField(initial=600, min_value=0, label="Run time (s, simulated)")
    vendor = forms.ChoiceField(choices=[(v, v) for v in VENDORS])
    device_count = forms.IntegerField(initial=1, min_value=0, max_value=64, label="Devices per pod")
    device_memory_mib = forms.IntegerField(
        initial=0,
        min_value=0,
        required=False,
        label="Device memory per device (MiB, 0 = whole device)",
    )
    device_memory_percent = forms.IntegerField(
        min_value=1, max_value=100, required=False, label="or device memory (% of the device)"
    )
    # the limit (100) and its message are the serializer's (HAMi's words), mapped back here
    cores_percent = forms.IntegerField(
        initial=0,
        min_value=0,
        widget=forms.NumberInput(attrs={"max": 100}),
        label="Device cores per device (%, 0 = any share)",
    )
    device_type = forms.ChoiceField(required=False, label="Device model (empty = any)")
    annotations = forms.CharField(
        required=False,
        max_length=65536,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        label="Pod annotations (key: value per line; e.g. nvidia.com/use-gpuuuid: GPU-...)",
    )
    topology_mode = forms.ChoiceField(
        required=False,
        choices=[
            ("", "none"),
            ("required", "required: all pods in one domain"),
            ("preferred", "preferred: as few domains as possible"),
            ("unconstrained", "unconstrained"),
        ],
        label="Topology (the group's network topology)",
    )
    topology_level = forms.CharField(
        required=False, max_length=316, label="Topology level (e.g. rack, or its label key)"
    )
    topology_slice_size = forms.IntegerField(
        required=False, min_value=1, max_value=1024, label="Slice size (pods; empty = none)"
    )
    topology_slice_level = forms.CharField(
        required=False, max_length=316, label="Slice level (e.g. hostname)"
    )

    def __init__(self, *args, queues, user=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.queues = queues
        self.user = user
        self.fields["priority_class"].choices = [("", "queue default")] + [
            (c.name, f"{c.name} ({c.value}{'' if c.preemptible else ', not preemptible'})")
            for c in PriorityClass.objects.order_by("-value", "name")
        ]
        self.fields["queue"].queryset = queues
        self.fields["queue"].label_from_instance = lambda q: (
            f"{q.tenant.name} / {q.name} (group {q.resource_group.name})"
        )
        self.runnable = queue_runnable_models(queues)
        self.fields["device_type"].choices = [("", "any model")] + [
            (name, name) for name in DeviceModel.objects.values_list("name", flat=True)
        ]
        self._offer(self._chosen_queue_id())
        self.serializer = None

    def _chosen_queue_id(self) -> int | None:
        """The queue the page shows choices for: the posted one, else ``initial["queue"]``
        (``?queue=``), else the first queue; one of ``self.runnable``'s keys or None."""
        raw = self.data.get("queue") if self.is_bound else self.initial.get("queue")
        try:
            chosen = int(raw)
        except (TypeError, ValueError):
            chosen = None
        if chosen not in self.runnable:
            chosen = next(iter(self.runnable), None)
        if not self.is_bound and chosen is not None:
            self.initial["queue"] = chosen
        return chosen

    def _offer(self, queue_id: int | None) -> None:
        """Render the vendor and model selects with what the queue's group can run (the
        fields themselves accept any catalogue value: :meth:`clean` says why one is refused),
        the vendor defaulting to the group's first; ``queue_choices`` feeds job_form.js."""
        models = self.runnable.get(queue_id, [])
        vendors = list(dict.fromkeys(m.vendor for m in models)) or list(VENDORS)
        self.fields["vendor"].widget.choices = [(v, v) for v in vendors]
        self.fields["device_type"].widget.choices = [("", "any model")] + [
            (m.name, f"{m.name} ({m.vendor})") for m in models
        ]
        if not self.is_bound:
            self.initial.setdefault("vendor", vendors[0])
        self.queue_choices = {
            str(pk): {
                "vendors": list(dict.fromkeys(m.vendor for m in group_models)),
                "models": [[m.name, m.vendor] for m in group_models],
            }
            for pk, group_models in self.runnable.items()
        }

    def clean_device_type(self) -> str:
        """The model, when the queue's group runs it and it is of the chosen vendor."""
        name = self.cleaned_data.get("device_type") or ""
        queue = self.cleaned_data.get("queue")
        if not name or queue is None:
            return name
        models = {m.name: m for m in self.runnable.get(queue.pk, [])}
        group = queue.resource_group.name
        if name not in models:
            raise forms.ValidationError(f"Resource group {group} has no {name} device.")
        return name

    def _refuse_vendor(self, data: dict) -> None:
        """A vendor (with devices asked) or a model the queue's group cannot run is a field
        error: the admission would keep the job pending forever."""
        queue, vendor = data.get("queue"), data.get("vendor")
        if queue is None or not vendor or not data.get("device_count"):
            return
        models = self.runnable.get(queue.pk, [])
        if vendor not in {m.vendor for m in models}:
            self.add_error(
                "vendor",
                f"Resource group {queue.resource_group.name} has no {vendor} device "
                f"(it runs: {', '.join(sorted({m.vendor for m in models})) or 'no device'}).",
            )
        model = next((m for m in models if m.name == data.get("device_type")), None)
        if model is not None and model.vendor != vendor:
            self.add_error("device_type", f"{model.name} is a {model.vendor} device, not {vendor}.")

    def clean_command(self) -> str:
        text = self.cleaned_data.get("command") or ""
        try:
            shlex.split(text)
        except ValueError as exc:
            raise forms.ValidationError(f"Not shell words: {exc}.") from exc
        return text

    def clean_annotations(self) -> dict[str, str]:
        """``key: value`` lines as the API's ``annotations`` (blank lines skipped; the API
        checks the keys and HAMi's policy values)."""
        out = {}
        for line in (self.cleaned_data.get("annotations") or "").splitlines():
            if not line.strip():
                continue
            key, sep, value = line.partition(":")
            if not sep or not key.strip():
                raise forms.ValidationError(f"Write key: value, one per line (got {line!r}).")
            out[key.strip()] = value.strip()
        return out

    def clean(self):
        data = super().clean()
        self._refuse_vendor(data)
        if self.errors:
            return data
        payload = {
            "queue": data["queue"].pk,
            "name": data["name"],
            **({"priority_class": data["priority_class"]} if data.get("priority_class") else {}),
            "kind": data.get("kind") or JobKind.BATCH,
            "cpu_milli": data["cpu_milli"],
            "host_memory_mib": data["host_memory_mib"],
            "duration_s": data["duration_s"],
            "preemptible": not data.get("non_preemptible"),
            "containers": [
                {
                    "name": "main",
                    "vendor": data["vendor"],
                    "device_count": data["device_count"],
                    "device_memory_mib": data.get("device_memory_mib") or 0,
                    "memory_percent": data.get("device_memory_percent"),
                    "cores_percent": data["cores_percent"],
                    "device_types": [data["device_type"]] if data.get("device_type") else [],
                    "image": data.get("image") or "",
                    "command": shlex.split(data.get("command") or ""),
                }
            ],
            **_kind_payload(data),
            **({"annotations": data["annotations"]} if data.get("annotations") else {}),
            **_topology_payload(data),
        }
        serializer = JobSubmitSerializer(data=payload, queues=self.queues, user=self.user)
        if not serializer.is_valid():
            mapping = {
                "workers": "pod_count",
                "replicas": "pod_count",
                "min_workers": "min_count",
                "min_pods": "min_count",
                "min_replicas": "min_count",
                "volumes[0].claim": "volume_claim",
                "volumes[0].mount_path": "volume_mount_path",
                "secrets[0].name": "secret",
                "containers[0].image": "image",
                "containers[0].memory_percent": "device_memory_percent",
                "containers[0].device_memory_mib": "device_memory_mib",
                "containers[0].device_count": "device_count",
                "containers[0].cores_percent": "cores_percent",
                "containers[0].vendor": "vendor",
                "containers[0].device_types": "device_type",
                **TOPOLOGY_ERROR_FIELDS,
            }
            for key, messages in flatten_errors(serializer.errors).items():
                field = mapping.get(key, key if key in self.fields else None)
                for message in messages:
                    self.add_error(field, message)
            return data
        self.serializer = serializer
        return data


TOPOLOGY_ERROR_FIELDS = {
    "topology.required": "topology_level",
    "topology.preferred": "topology_level",
    "topology.unconstrained": "topology_mode",
    "topology.topology": "topology_mode",
    "topology.non_field_errors": "topology_mode",
    "topology.slice_size": "topology_slice_size",
    "topology.slice_level": "topology_slice_level",
}
"""The API's topology errors (``JobSubmitSerializer.topology``) -> the form's fields."""


def _topology_payload(data: dict) -> dict:
    """The API's ``topology`` object of the form's topology fields ({} when none is set)."""
    mode, level = data.get("topology_mode") or "", (data.get("topology_level") or "").strip()
    body: dict = {}
    if mode == "unconstrained":
        body["unconstrained"] = True
    elif mode:
        body[mode] = level
    if data.get("topology_slice_size"):
        body["slice_size"] = data["topology_slice_size"]
        body["slice_level"] = (data.get("topology_slice_level") or "").strip()
    return {"topology": body} if body else {}


def _kind_payload(data: dict) -> dict:
    """The form's count, minimum and optional settings under the API names of its kind."""
    kind, count, low = data.get("kind") or JobKind.BATCH, data["pod_count"], data.get("min_count")
    out: dict = {}
    if kind == JobKind.TRAINING:
        out.update(workers=count, **({"min_workers": low} if low else {}))
    elif kind == JobKind.INFERENCE:
        out.update(
            replicas=count,
            **({"min_replicas": low} if low else {}),
            **({"max_replicas": data["max_replicas"]} if data.get("max_replicas") else {}),
        )
    elif kind == JobKind.BATCH:
        out.update(pod_count=count, **({"min_pods": low} if low else {}))
    for name in ("port", "max_runtime_s", "idle_cull_s"):
        if data.get(name):
            out[name] = data[name]
    if data.get("volume_claim") or data.get("volume_mount_path"):
        out["volumes"] = [
            {
                "claim": data.get("volume_claim") or "",
                "mount_path": data.get("volume_mount_path") or "",
            }
        ]
    if data.get("secret"):
        out["secrets"] = [{"name": data["secret"]}]
    return out


class MemberForm(forms.Form):
    """Add a user to a tenant (or change their role)."""

    username = forms.CharField(max_length=150)
    role = forms.ChoiceField(choices=Role.choices, initial=Role.MEMBER)

    def clean_username(self):
        name = self.cleaned_data["username"]
        try:
            self.user = get_user_model().objects.get(username=name)
        except get_user_model().DoesNotExist:
            raise forms.ValidationError("No user with this username.") from None
        return name


class InviteForm(forms.Form):
    """Invite a user to a tenant by username or e-mail (the answer never says whether such a
    user exists)."""

    username = forms.RegexField(
        regex=r"^[\w.@+-]+\Z",
        max_length=254,
        label="Username or e-mail",
        error_messages={"invalid": "A username or an e-mail address."},
    )
    role = forms.ChoiceField(choices=Role.choices, initial=Role.MEMBER)


class RoleForm(forms.Form):
    """Change the role of one membership of the tenant (``membership`` = its id)."""

    membership = forms.IntegerField(min_value=1, max_value=2**63 - 1)
    role = forms.ChoiceField(choices=Role.choices)
