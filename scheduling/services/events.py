"""The scheduling app's domain events (:mod:`core.events`): job failures and preemptions,
written for each tenant's eyes (a preemption across tenants names neither side to the
other). Called inside the services' transactions; sent after commit."""

from __future__ import annotations

from core.events import JOB_FAILED, JOB_PREEMPTED, emit
from scheduling.models import Job

__all__ = ["announce_job_failed", "announce_preemption"]


def announce_job_failed(job_id: int, message: str) -> None:
    """``job.failed`` for the job's tenant and submitter."""
    job = Job.objects.select_related("queue").filter(pk=job_id).first()
    if job is None:
        return
    emit(
        JOB_FAILED,
        tenant_id=job.tenant_id,
        user_id=job.submitted_by_id,
        payload={
            "job": job.pk,
            "job_name": job.name,
            "queue": job.queue.name,
            "message": message[:2000],
        },
    )


def announce_preemption(
    victim: Job,
    preemptor: Job | None,
    *,
    reason: str,
    outcome: str,
    victim_message: str,
    cross_tenant: bool,
) -> None:
    """Two ``job.preempted`` events: to the victim's tenant (its job lost its devices) and to
    the preemptor's (its job took them). Across tenants each side only reads "another
    tenant": no tenant, job name or message of the other side."""
    other = "another tenant" if cross_tenant else "own tenant"
    emit(
        JOB_PREEMPTED,
        tenant_id=victim.tenant_id,
        user_id=victim.submitted_by_id,
        payload={
            "job": victim.pk,
            "job_name": victim.name,
            "role": "victim",
            "reason": reason,
            "outcome": outcome,
            "other": other,
            "message": victim_message,
            "preemptor_job": None if cross_tenant or preemptor is None else preemptor.name,
        },
    )
    if preemptor is None:
        return
    emit(
        JOB_PREEMPTED,
        tenant_id=preemptor.tenant_id,
        user_id=preemptor.submitted_by_id,
        payload={
            "job": preemptor.pk,
            "job_name": preemptor.name,
            "role": "preemptor",
            "reason": reason,
            "outcome": outcome,
            "other": other,
            "message": f"{preemptor.name} preempted a job of {other}"
            if cross_tenant
            else f"{preemptor.name} preempted {victim.name}",
            "victim_job": None if cross_tenant else victim.name,
        },
    )
