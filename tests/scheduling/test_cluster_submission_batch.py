"""Bulk submission of admitted jobs on simulated clusters: the same rows as one-by-one
submission, in one transaction; idempotent; released placements are not started."""

import pytest

from scheduling.choices import JobState, PlacementState
from scheduling.models import Job, JobEvent, Placement
from scheduling.services.cluster_submission import submit_to_cluster
from scheduling.services.cluster_submission_batch import submit_admitted_jobs
from scheduling.services.cycle import run_admission_cycle
from scheduling.services.jobs import cancel_job
from tests.builders import gpu_job, make_cluster, make_group, make_tenant

pytestmark = pytest.mark.django_db


@pytest.fixture
def admitted():
    make_cluster("c1", nodes=2, gpus=2)
    group = make_group("g1")
    _, queue = make_tenant("team-a", group, devices_milli=100_000)
    jobs = [gpu_job(queue, f"j{i}", count=1, memory_percent=50, cores=50, pods=2) for i in range(3)]
    assert len(run_admission_cycle(group.pk).admitted) == 3
    return jobs


def _rows(job):
    return sorted(
        Placement.objects.filter(job=job).values_list("pod_index", "state", "backend_ref")
    )


def test_bulk_submission_starts_every_simulated_job_like_the_single_path(admitted):
    single, *bulk = admitted
    submit_to_cluster(single.pk)
    assert submit_admitted_jobs([p.pk for p in bulk]) == {"bulk": 2, "single": 0}
    for job in admitted:
        job.refresh_from_db()
        assert job.state == JobState.RUNNING and job.started_at is not None
        rows = _rows(job)
        placements = Placement.objects.filter(job=job).order_by("pod_index")
        assert rows == [
            (p.pod_index, PlacementState.RUNNING, f"sim-{job.pk}-{p.pod_index}-{p.pk}")
            for p in placements
        ]
        assert all(p.submitted_at and p.started_at for p in placements)
        assert JobEvent.objects.filter(job=job, kind="running").count() == 1


def test_bulk_submission_is_idempotent_and_skips_released_jobs(admitted):
    first, second, third = admitted
    cancel_job(Job.objects.get(pk=second.pk))
    submit_admitted_jobs([first.pk, second.pk, third.pk])
    before = {j.pk: _rows(j) for j in admitted}
    submit_admitted_jobs([first.pk, second.pk, third.pk])
    assert {j.pk: _rows(j) for j in admitted} == before
    assert Job.objects.get(pk=second.pk).state == JobState.CANCELLED
    assert {s for _, s, _ in before[second.pk]} == {PlacementState.RELEASED}
    assert JobEvent.objects.filter(job_id=first.pk, kind="running").count() == 1
