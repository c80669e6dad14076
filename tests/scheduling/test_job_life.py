"""The table of job and placement state moves (:mod:`scheduling.services.job_life`, issue 28)
walked on the real database: each move's function moves a row from every from-state of the
table and refuses every other state (the row is left as it was, 0 returned)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from core.models import AuditEntry
from scheduling.choices import ACTIVE_PLACEMENT_STATES, FINAL_JOB_STATES, JobState, PlacementState
from scheduling.models import Job, JobEvent, Node, Placement
from scheduling.services import job_life as life
from tests.builders import gpu_job, make_cluster, make_group, make_tenant, make_user

NOW = timezone.now().replace(microsecond=0)
LATER = NOW + timedelta(seconds=30)

JOB_FUNCTIONS = {
    life.ADMIT: (life.admit_jobs, {"now": NOW}, {"admitted_at": NOW}),
    life.START: (life.start_jobs, {"now": NOW}, {"started_at": NOW}),
    life.SUCCEED: (life.succeed_jobs, {"now": NOW}, {"finished_at": NOW}),
    life.FAIL: (life.fail_jobs, {"now": NOW}, {"finished_at": NOW}),
    life.CANCEL: (life.cancel_jobs, {"now": NOW}, {"finished_at": NOW}),
    life.REQUEUE: (life.requeue_jobs, {}, {"admitted_at": None, "started_at": None}),
    life.STOP: (life.stop_jobs, {"now": NOW}, {"stopped_at": NOW}),
    life.RESUME: (life.resume_jobs, {}, {"admitted_at": None, "started_at": None}),
}
"""Each job move: its function, the arguments it needs, the timestamps it sets."""

PLACEMENT_FUNCTIONS = {
    life.POD_SUBMIT: (life.submit_placements, {"now": NOW}, {"submitted_at": NOW}),
    life.POD_RUN: (life.run_placements, {"now": NOW}, {"started_at": NOW}),
    life.POD_TERMINATE: (life.terminate_placements, {"evict_by": LATER}, {"evict_by": LATER}),
    life.POD_RELEASE: (life.release_placements, {"now": NOW}, {"ended_at": NOW}),
    life.POD_SUCCEED: (life.succeed_placements, {"now": NOW}, {"ended_at": NOW}),
    life.POD_FAIL: (life.fail_placements, {"now": NOW}, {"ended_at": NOW}),
}


@pytest.fixture
def job_and_placement(db):
    """One job of a one-GPU simulated cluster and one placement of it (states set per case
    by the test itself)."""
    make_cluster(nodes=1, gpus=1)
    group = make_group()
    _, queue = make_tenant("team-a", group, devices_milli=4000)
    job = gpu_job(queue, "walked")
    placement = Placement.objects.create(job=job, node=Node.objects.get())
    return job, placement


def _put(model, pk, state):
    """Set a row's state directly (the test's own setup; product code moves it via
    job_life only)."""
    if model is Job:
        Job.objects.filter(pk=pk).update(
            state=state, admitted_at=None, started_at=None, finished_at=None, stopped_at=None
        )
    else:
        Placement.objects.filter(pk=pk).update(
            state=state, started_at=None, ended_at=None, submitted_at=None, evict_by=None
        )


def test_the_functions_cover_the_whole_table():
    assert set(JOB_FUNCTIONS) == set(life.JOB_MOVES)
    assert set(PLACEMENT_FUNCTIONS) == set(life.PLACEMENT_MOVES)
    assert {m.name for m in life.JOB_MOVES} == {
        "admit",
        "start",
        "succeed",
        "fail",
        "cancel",
        "requeue",
        "stop",
        "resume",
    }


def test_the_table_never_leaves_a_final_state_and_reaches_every_state():
    for move in life.JOB_MOVES:
        assert not set(move.sources) & set(FINAL_JOB_STATES), move
    assert {m.target for m in life.JOB_MOVES} == set(JobState)
    assert {s for m in life.JOB_MOVES for s in m.sources} == set(JobState) - set(FINAL_JOB_STATES)
    ended = {PlacementState.RELEASED, PlacementState.SUCCEEDED, PlacementState.FAILED}
    for move in life.PLACEMENT_MOVES:
        assert not set(move.sources) & ended, move
    assert {m.target for m in life.PLACEMENT_MOVES} | {PlacementState.RESERVED} == set(
        PlacementState
    )
    assert set(life.ACTIVE_PLACEMENTS_OF) == set(JobState)
    for state, held in life.ACTIVE_PLACEMENTS_OF.items():
        assert set(held) <= set(ACTIVE_PLACEMENT_STATES), state


@pytest.mark.parametrize("move", life.JOB_MOVES, ids=lambda m: m.name)
def test_each_job_move_goes_from_its_states_only(job_and_placement, move):
    job, _ = job_and_placement
    function, args, stamps = JOB_FUNCTIONS[move]
    for state in JobState:
        _put(Job, job.pk, state)
        before = Job.objects.get(pk=job.pk)
        moved = function(job.pk, **args)
        after = Job.objects.get(pk=job.pk)
        if state in move.sources:
            assert (moved, after.state) == (1, move.target), (move.name, state)
            assert {f: getattr(after, f) for f in stamps} == stamps, (move.name, state)
        else:
            assert (moved, after.state) == (0, state), (move.name, state)
            assert (after.admitted_at, after.started_at, after.finished_at) == (
                before.admitted_at,
                before.started_at,
                before.finished_at,
            )


@pytest.mark.parametrize("move", life.PLACEMENT_MOVES, ids=lambda m: m.name)
def test_each_placement_move_goes_from_its_states_only(job_and_placement, move):
    _, placement = job_and_placement
    function, args, stamps = PLACEMENT_FUNCTIONS[move]
    for state in PlacementState:
        _put(Placement, placement.pk, state)
        moved = function(placement.pk, **args)
        after = Placement.objects.get(pk=placement.pk)
        if state in move.sources:
            assert (moved, after.state) == (1, move.target), (move.name, state)
            assert {f: getattr(after, f) for f in stamps} == stamps, (move.name, state)
        else:
            assert (moved, after.state) == (0, state), (move.name, state)
            assert (after.ended_at, after.evict_by) == (None, None)


def test_a_bulk_move_moves_only_the_rows_in_a_from_state(job_and_placement):
    job, _ = job_and_placement
    others = [gpu_job(job.queue, f"other-{i}") for i in range(3)]
    _put(Job, others[0].pk, JobState.RUNNING)
    ids = [job.pk] + [o.pk for o in others]
    assert life.admit_jobs(ids, now=NOW) == 3
    states = dict(Job.objects.filter(pk__in=ids).values_list("pk", "state"))
    assert states == {
        job.pk: JobState.ADMITTED,
        others[0].pk: JobState.RUNNING,
        others[1].pk: JobState.ADMITTED,
        others[2].pk: JobState.ADMITTED,
    }
    assert life.admit_jobs(ids, now=NOW) == 0


def test_only_from_narrows_the_table_and_never_widens_it(job_and_placement):
    job, placement = job_and_placement
    _put(Job, job.pk, JobState.STOPPED)
    assert life.cancel_jobs(job.pk, now=NOW, only_from=[JobState.RUNNING]) == 0
    assert Job.objects.get(pk=job.pk).state == JobState.STOPPED
    with pytest.raises(ValueError, match="start does not move from queued"):
        life.start_jobs(job.pk, now=NOW, only_from=[JobState.QUEUED])
    with pytest.raises(ValueError, match="is not a placement move"):
        life.move_placements(placement.pk, life.CANCEL)
    with pytest.raises(ValueError, match="is not a job move"):
        life.move_jobs(job.pk, life.POD_RELEASE)
    assert Job.objects.get(pk=job.pk).state == JobState.STOPPED


def test_the_event_and_the_audit_entry_are_written_when_the_job_moved(job_and_placement):
    job, _ = job_and_placement
    user = make_user("ann", job.tenant)
    audit = life.Audit("job.cancel", user)
    assert life.cancel_jobs(job, now=NOW, event="cancelled by ann", audit=audit) == 1
    assert life.cancel_jobs(job, now=NOW, event="cancelled by ann", audit=audit) == 0
    events = list(JobEvent.objects.filter(job=job).values_list("kind", "message"))
    assert events[-1] == ("cancelled", "cancelled by ann")
    assert [k for k, _ in events].count("cancelled") == 1
    entries = list(AuditEntry.objects.filter(action="job.cancel", object_id=str(job.pk)))
    assert [(e.before, e.after, e.actor_id, e.tenant_id) for e in entries] == [
        ({"state": "queued"}, {"state": "cancelled"}, user.pk, job.tenant_id)
    ]


def test_bulk_events_are_written_once_per_moved_job(job_and_placement):
    job, _ = job_and_placement
    other = gpu_job(job.queue, "other")
    _put(Job, job.pk, JobState.ADMITTED)
    _put(Job, other.pk, JobState.ADMITTED)
    messages = {job.pk: "all pods running", other.pk: "all pods running"}
    assert life.start_jobs([job.pk, other.pk], now=NOW, events=messages) == 2
    assert sorted(
        JobEvent.objects.filter(kind="running").values_list("job_id", flat=True)
    ) == sorted([job.pk, other.pk])


def test_a_move_with_a_cause_of_its_own_writes_its_event_under_that_kind(job_and_placement):
    job, _ = job_and_placement
    _put(Job, job.pk, JobState.RUNNING)
    moved = life.requeue_jobs(job, event="node cordoned; requeue", event_kind="drained")
    assert moved == 1
    assert life.requeue_jobs(job, event="again", event_kind="drained") == 0
    assert list(
        JobEvent.objects.filter(job=job, kind__in=["drained", "requeued"]).values_list(
            "kind", "message"
        )
    ) == [("drained", "node cordoned; requeue")]
