"""Forms of the pages. Job submission validates through the API's serializer, so the form
and ``POST /api/jobs/`` accept exactly the same input."""

from __future__ import annotations

from django import forms
from django.contrib.auth import get_user_model

from scheduling.api.serializers import VENDORS, JobSubmitSerializer
from scheduling.models import DeviceModel, PriorityClass
from tenants.choices import Role


class JobSubmitForm(forms.Form):
    """One-container job: host request, device request, gang size."""

    queue = forms.ModelChoiceField(queryset=None, empty_label=None)
    name = forms.CharField(max_length=200)
    priority_class = forms.ChoiceField(
        required=False, label="Priority class (empty = the queue's default)")
    pod_count = forms.IntegerField(initial=1, min_value=1, max_value=1024,
                                   label="Pods (gang size)")
    cpu_milli = forms.IntegerField(initial=1000, min_value=0, label="CPU per pod (milli-cores)")
    memory_mib = forms.IntegerField(initial=4096, min_value=0, label="Host memory per pod (MiB)")
    duration_s = forms.FloatField(initial=600, min_value=0, label="Run time (s, simulated)")
    vendor = forms.ChoiceField(choices=[(v, v) for v in VENDORS], initial="NVIDIA")
    device_count = forms.IntegerField(initial=1, min_value=0, max_value=64,
                                      label="Devices per pod")
    device_memory_mib = forms.IntegerField(
        initial=0, min_value=0, required=False,
        label="Device memory per device (MiB, 0 = whole device)")
    device_memory_percent = forms.IntegerField(
        min_value=1, max_value=100, required=False, label="or device memory (% of the device)")
    cores_percent = forms.IntegerField(initial=0, min_value=0, max_value=100,
                                       label="Device cores per device (%, 0 = any share)")
    device_type = forms.ChoiceField(required=False, label="Device model (empty = any)")

    def __init__(self, *args, queues, user=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.queues = queues
        self.user = user
        self.fields["priority_class"].choices = [("", "queue default")] + [
            (c.name, f"{c.name} ({c.value}{'' if c.preemptible else ', not preemptible'})")
            for c in PriorityClass.objects.order_by("-value", "name")]
        self.fields["queue"].queryset = queues
        self.fields["queue"].label_from_instance = (
            lambda q: f"{q.tenant.name} / {q.name} (group {q.resource_group.name})")
        self.fields["device_type"].choices = [("", "any model")] + [
            (name, name) for name in DeviceModel.objects.values_list("name", flat=True)]
        self.serializer = None

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        payload = {
            "queue": data["queue"].pk, "name": data["name"],
            **({"priority_class": data["priority_class"]} if data.get("priority_class") else {}),
            "pod_count": data["pod_count"], "cpu_milli": data["cpu_milli"],
            "memory_mib": data["memory_mib"], "duration_s": data["duration_s"],
            "containers": [{
                "name": "main", "vendor": data["vendor"], "device_count": data["device_count"],
                "memory_mib": data.get("device_memory_mib") or 0,
                "memory_percent": data.get("device_memory_percent"),
                "cores_percent": data["cores_percent"],
                "device_types": [data["device_type"]] if data.get("device_type") else [],
            }],
        }
        serializer = JobSubmitSerializer(data=payload, queues=self.queues, user=self.user)
        if not serializer.is_valid():
            mapping = {"containers[0].memory_percent": "device_memory_percent",
                       "containers[0].memory_mib": "device_memory_mib",
                       "containers[0].device_count": "device_count",
                       "containers[0].cores_percent": "cores_percent",
                       "containers[0].vendor": "vendor",
                       "containers[0].device_types": "device_type"}
            for key, messages in _flatten(serializer.errors).items():
                field = mapping.get(key, key if key in self.fields else None)
                for message in messages:
                    self.add_error(field, message)
            return data
        self.serializer = serializer
        return data


def _flatten(errors, prefix="") -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    if isinstance(errors, dict):
        for key, value in errors.items():
            out.update(_flatten(value, f"{prefix}.{key}" if prefix else str(key)))
    elif isinstance(errors, list) and errors and isinstance(errors[0], dict | list):
        for i, value in enumerate(errors):
            out.update(_flatten(value, f"{prefix}[{i}]"))
    else:
        out[prefix or "non_field_errors"] = [str(e) for e in errors]
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
