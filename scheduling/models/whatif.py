"""What-if simulation runs (the simulation page): input, progress and result of one run."""

from django.conf import settings
from django.db import models

from core.models import BaseModel


class SimulationState(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class SimulationRun(BaseModel):
    """One what-if run: a workload replayed on a resource group's nodes under several policies.

    Attributes:
        resource_group: whose nodes (and, without a trace, whose recent jobs) are replayed;
            null once the group is deleted.
        source: ``"group"`` (the group's recent jobs) or ``"trace"`` (``trace_csv``, an
            Alibaba ``openb_pod_list`` file; tenants are its ``qos`` classes).
        trace_csv: the uploaded pod list (text, at most ``MAX_TRACE_BYTES``).
        policies: placement policy names (``POLICY_NAMES`` of the placement lab).
        quotas: ``{tenant: nominal milli-GPU}`` applied in the replay ({} = none).
        state / progress_percent / error: where the worker is (0..100) and why it failed.
        result: ``{"policies": [WhatIfResult.as_dict(), ...], "workload": {...}}``.
    """

    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    resource_group = models.ForeignKey(
        "tenants.ResourceGroup", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    source = models.CharField(max_length=8, default="group")
    trace_name = models.CharField(max_length=255, blank=True)
    trace_csv = models.TextField(blank=True)
    policies = models.JSONField(default=list)
    quotas = models.JSONField(default=dict, blank=True)
    state = models.CharField(
        max_length=8, choices=SimulationState.choices, default=SimulationState.QUEUED
    )
    progress_percent = models.PositiveSmallIntegerField(default=0)
    error = models.TextField(blank=True)
    result = models.JSONField(default=dict, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"simulation {self.pk} ({self.state})"
