"""The first start estimate shown for a job and how it turned out (issue 30: calibration)."""

from django.db import models


class JobStartEstimate(models.Model):
    """A queued job's first start window and what happened to it.

    ``earliest`` .. ``latest`` is the first window the gauges task computed for the job (what
    the pages and the API first showed: within ``TELEMETRY_GAUGES_S`` of its submission), at
    ``estimated_at``; it is never moved afterwards, so a waiting job past ``latest`` is
    overdue (:func:`scheduling.admission.eta.honest_estimate`). ``head_since``: when the job
    was first seen at position 1 of its queue; ``passed_over``: jobs of its resource group
    admitted since then while it stayed queued (counted by the gauges task). ``started_at`` is
    its first admission after the window (the actual start the estimate is judged on:
    devices and quota given), ``inside`` whether that fell inside the window; both written by
    the admission commit (:func:`scheduling.services.estimates.record_starts`). ``queue`` is
    the job's queue (calibration per queue).
    """

    job = models.OneToOneField(
        "scheduling.Job", on_delete=models.CASCADE, related_name="start_estimate"
    )
    queue = models.ForeignKey(
        "scheduling.Queue", on_delete=models.CASCADE, related_name="start_estimates"
    )
    estimated_at = models.DateTimeField()
    earliest = models.DateTimeField()
    latest = models.DateTimeField()
    head_since = models.DateTimeField(null=True, blank=True)
    passed_over = models.PositiveIntegerField(default=0)
    started_at = models.DateTimeField(null=True, blank=True)
    inside = models.BooleanField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["queue", "started_at"])]

    def __str__(self) -> str:
        return f"job {self.job_id}: {self.earliest:%H:%M:%S} .. {self.latest:%H:%M:%S}"
