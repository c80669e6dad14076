"""Consolidation moves: a running job restarted elsewhere to make room for a pending one."""

from django.db import models

from scheduling.choices import ConsolidationPin


class ConsolidationMove(models.Model):
    """One move made by consolidation (append-only; the move budget of a resource group counts
    these rows over the last hour).

    ``source`` / ``target`` name the node and devices before and after
    (``"node-1 [GPU-aa, GPU-bb]"``); ``for_job`` is the pending job the room was made for
    (kept even when that job is deleted: ``for_job_id`` null then); ``job_tenant`` and
    ``for_tenant`` are tenant names as they were at the time (the moved job's tenant sees the
    other only as "another tenant"). ``target_pods`` is the planned target as data (one
    :meth:`scheduling.placement.pin.PodPin.to_json` object per pod): the moved job's next
    placement is pinned to it while it still fits (``pin``).
    """

    job = models.ForeignKey(
        "scheduling.Job", on_delete=models.CASCADE, related_name="consolidation_moves"
    )
    for_job = models.ForeignKey(
        "scheduling.Job",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="consolidated_for",
    )
    resource_group = models.ForeignKey(
        "tenants.ResourceGroup", on_delete=models.CASCADE, related_name="consolidation_moves"
    )
    job_tenant = models.CharField(max_length=63)
    for_tenant = models.CharField(max_length=63)
    source = models.TextField()
    target = models.TextField()
    time = models.DateTimeField()
    target_pods = models.JSONField(
        default=list,
        blank=True,
        help_text="The planned target per pod: node and device uuids per container.",
    )
    pin = models.CharField(
        max_length=16,
        choices=ConsolidationPin.choices,
        default=ConsolidationPin.NONE,
        blank=True,
        help_text="Whether the moved job's next placement used the planned target.",
    )

    class Meta:
        ordering = ["time", "id"]
        indexes = [
            models.Index(fields=["resource_group", "time"]),
            models.Index(fields=["job", "pin"]),
        ]

    def __str__(self) -> str:
        return f"job {self.job_id} moved for {self.for_job_id} at {self.time:%Y-%m-%d %H:%M:%S}"
