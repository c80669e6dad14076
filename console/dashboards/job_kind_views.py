"""Pages' side of the job kinds: what the job page shows per kind (service replicas and
readiness, notebook time left) and the kind actions (scale, stop, resume), each posting to
the same service as the REST API."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect
from django.utils import timezone
from django.views.decorators.http import require_POST

from core.exceptions import DomainError
from scheduling.choices import LIVE_JOB_STATES, JobKind, JobState
from scheduling.models import Job, Placement
from scheduling.selectors.access import visible_jobs
from scheduling.services.job_kinds import (
    lifetime_left_s,
    resume_notebook,
    scale_service,
    service_status,
    stop_notebook,
)
from telemetry.services.culling import idle_cull_eta
from tenants.selectors import action_refusal


def workload_context(job: Job) -> dict:
    """Template context of the job page's "Workload" card."""
    now = timezone.now()
    out: dict = {"lifetime_left_s": lifetime_left_s(job, now)}
    if job.is_service:
        out["service"] = service_status(job)
        replicas = list(job.replica_jobs.filter(state__in=LIVE_JOB_STATES).order_by("pk"))
        ready = set(
            Placement.objects.filter(job__in=replicas, ready=True, state="running").values_list(
                "job_id", flat=True
            )
        )
        out["replicas"] = [(r, r.pk in ready) for r in replicas]
    if job.kind == JobKind.NOTEBOOK:
        out["idle_since"], out["cull_in_s"] = idle_cull_eta(job, now=now)
    return out


def _job(request, pk: int, verb: str) -> Job:
    """The job, when the user may ``verb`` it: 404 for a job they may not read, 403 for
    one they read but may not change (the API's rule: ``tenants.selectors.action_refusal``)."""
    job = get_object_or_404(visible_jobs(request.user).select_related("tenant", "queue"), pk=pk)
    why = action_refusal(request.user, job.tenant_id, verb)
    if why is not None:
        raise PermissionDenied(why)
    return job


def _act(request, job: Job, action, done: str):
    try:
        action()
        messages.success(request, done)
    except DomainError as exc:
        messages.error(request, exc.message)
    return redirect("dashboards:job-detail", pk=job.pk)


@login_required
@require_POST
def job_scale(request, pk: int):
    """Set an inference service's replicas."""
    job = _job(request, pk, "scale")
    try:
        replicas = int(request.POST.get("replicas", ""))
    except ValueError:
        messages.error(request, "Replicas must be a whole number.")
        return redirect("dashboards:job-detail", pk=job.pk)
    return _act(
        request,
        job,
        lambda: scale_service(job, replicas, user=request.user),
        f"Service {job.name} scaled to {replicas} replicas.",
    )


@login_required
@require_POST
def job_stop(request, pk: int):
    """Stop a notebook (frees its devices)."""
    job = _job(request, pk, "stop")
    return _act(
        request,
        job,
        lambda: stop_notebook(job, user=request.user),
        f"Notebook {job.name} stopped; its devices are free.",
    )


@login_required
@require_POST
def job_resume(request, pk: int):
    """Resume a stopped notebook (queued for devices again)."""
    job = _job(request, pk, "resume")
    return _act(
        request,
        job,
        lambda: resume_notebook(job, user=request.user),
        f"Notebook {job.name} queued again.",
    )


def can_stop(job: Job) -> bool:
    return job.kind == JobKind.NOTEBOOK and job.state in LIVE_JOB_STATES


def can_resume(job: Job) -> bool:
    return job.kind == JobKind.NOTEBOOK and job.state == JobState.STOPPED
