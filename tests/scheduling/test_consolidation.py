"""Consolidation through the admission cycle (step 7): a job blocked only by fragmentation
gets room by moving opted-in, preemptible jobs; moves are explained, budgeted and never
name another tenant."""

from datetime import timedelta

import pytest
from django.db.models import Sum
from django.utils import timezone

from scheduling.choices import BOOKED_PLACEMENT_STATES, ConsolidationPin, JobState, PlacementState
from scheduling.devices.defaults import default_device_configs
from scheduling.kube import workloads as wl
from scheduling.models import (
    Cluster,
    ConsolidationMove,
    Device,
    DeviceModel,
    Job,
    JobEvent,
    Node,
    Placement,
    PlacementDevice,
)
from scheduling.selectors.inadmissible import release as release_inadmissible
from scheduling.selectors.placement_profile import forget_workloads
from scheduling.services import cycle as cycle_service
from scheduling.services.consolidation_pins import CyclePins
from scheduling.services.cycle import run_admission_cycle
from scheduling.services.eviction import release_terminated
from scheduling.services.intake_spec import job_spec
from scheduling.services.usage import check_usage
from tenants.models import ResourceGroup
from tests.builders import gpu_job, make_cluster, make_group, make_tenant

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_workloads():
    forget_workloads()
    yield
    forget_workloads()


def _group(**options):
    make_cluster("c1", nodes=2, gpus=2)
    group = make_group("g1")
    group.consolidation_enabled = True
    for key, value in options.items():
        setattr(group, key, value)
    group.save()
    return group


def _halves(queue, n=2, **job_fields):
    jobs = [gpu_job(queue, f"h{i}", count=1, memory_percent=50, cores=50) for i in range(n)]
    Job.objects.filter(pk__in=[j.pk for j in jobs]).update(
        **{"allow_consolidation": True, **job_fields}
    )
    return jobs


def _wholes(queue, n, prefix="w"):
    return [
        gpu_job(queue, f"{prefix}{i}", count=1, memory_percent=100, cores=100) for i in range(n)
    ]


def _devices(job, states=BOOKED_PLACEMENT_STATES):
    return sorted(
        PlacementDevice.objects.filter(placement__job=job, placement__state__in=states).values_list(
            "device__uuid", flat=True
        )
    )


def _assert_invariants(group):
    for row in (
        PlacementDevice.objects.filter(placement__state__in=BOOKED_PLACEMENT_STATES)
        .values("device_id")
        .annotate(cores=Sum("cores_percent"), mem=Sum("memory_mib"))
    ):
        device = Device.objects.get(pk=row["device_id"])
        assert row["cores"] <= device.cores_percent
        assert row["mem"] <= device.memory_mib
    check = check_usage(group.pk)
    assert check.drift == [] and check.violations == [], (check.drift, check.violations)


def _fragmented(group, queue, **half_fields):
    """Halves on both GPUs of n0 (HAMi binpack / spread), then three whole-GPU jobs: two fit
    on n1, the third is blocked by fragmentation (2 x 50 % free on n0)."""
    halves = _halves(queue, **half_fields)
    assert len(run_admission_cycle(group.pk).admitted) == 2
    assert _devices(halves[0]) != _devices(halves[1])
    wholes = _wholes(queue, 3)
    return halves, wholes


def test_a_fragmented_group_moves_one_job_and_the_waiting_job_then_fits():
    group = _group()
    _, queue = make_tenant("team-a", group, devices_milli=100_000)
    halves, wholes = _fragmented(group, queue)
    before = {h.pk: _devices(h) for h in halves}

    report = run_admission_cycle(group.pk)

    assert report.admitted == [wholes[0].pk, wholes[1].pk]
    assert len(report.moved) == 1
    moved = Job.objects.get(pk=report.moved[0])
    stayed = next(h for h in halves if h.pk != moved.pk)
    assert moved.state == JobState.QUEUED
    assert not Placement.objects.filter(job=moved, state__in=BOOKED_PLACEMENT_STATES).exists()
    assert Placement.objects.filter(job=moved, state=PlacementState.RELEASED).count() == 1
    waiting = Job.objects.get(pk=wholes[2].pk)
    assert waiting.state == JobState.QUEUED and waiting.preempting_since is not None
    assert waiting.pending_reason == "waiting for 1 job(s) moved by consolidation to make room"
    event = JobEvent.objects.get(job=moved, kind="moved")
    source, target = before[moved.pk][0], before[stayed.pk][0]
    assert event.message == (
        f"moved by consolidation from c1-n0 ({source}) to c1-n0 ({target}) to make room for "
        f"job w2 of your tenant team-a"
    )
    row = ConsolidationMove.objects.get()
    assert (row.job_id, row.for_job_id, row.resource_group_id) == (moved.pk, waiting.pk, group.pk)

    # the next cycle admits the waiting job on the freed GPU and restarts the moved one
    # beside the job that stayed
    report = run_admission_cycle(group.pk)
    assert sorted(report.admitted) == sorted([waiting.pk, moved.pk])
    assert report.moved == []
    assert _devices(waiting) == [source]
    assert _devices(moved) == [target] == _devices(stayed)
    assert Job.objects.filter(state=JobState.ADMITTED).count() == 5
    _assert_invariants(group)


@pytest.mark.parametrize(
    ("group_options", "half_fields"),
    [
        ({"consolidation_enabled": False}, {}),  # consolidation off
        ({}, {"allow_consolidation": False}),  # no opt-in
        ({}, {"preemptible": False}),  # not preemptible
        ({}, {"min_runtime_s": 3600.0}),  # within its minimum runtime
        ({}, {"priority": 5}),  # more important than the waiting job
    ],
    ids=["off", "no-opt-in", "not-preemptible", "min-runtime", "higher-priority"],
)
def test_nothing_moves_unless_every_condition_holds(group_options, half_fields, request):
    group = _group(**group_options)
    _, queue = make_tenant("team-a", group, devices_milli=100_000)
    halves, wholes = _fragmented(group, queue, **half_fields)
    report = run_admission_cycle(group.pk)
    assert report.moved == []
    assert ConsolidationMove.objects.count() == 0
    assert all(Job.objects.get(pk=h.pk).state == JobState.ADMITTED for h in halves)
    waiting = Job.objects.get(pk=wholes[2].pk)
    reason = waiting.pending_reason
    assert reason.startswith("unschedulable: 0/2 nodes fit")
    # one cause per line, the consolidation note appended to both (issue 30)
    assert [c["rule"] for c in waiting.pending_causes] == reason.splitlines()
    assert waiting.pending_causes[0]["kind"] == "capacity"
    if request.node.callspec.id == "off":
        assert "consolidation" not in reason
    else:
        assert reason.endswith("\nconsolidation: no running job may be moved")
        assert waiting.pending_causes[-1] == {
            "kind": "capacity",
            "resource": None,
            "needed": None,
            "free": None,
            "borrowable": None,
            "unit": None,
            "rule": "consolidation: no running job may be moved",
        }


def test_nothing_moves_when_contiguous_capacity_is_enough():
    group = _group()
    _, queue = make_tenant("team-a", group, devices_milli=100_000)
    _halves(queue)
    run_admission_cycle(group.pk)
    _wholes(queue, 2)
    report = run_admission_cycle(group.pk)
    assert len(report.admitted) == 2
    assert report.moved == []


def test_the_budget_of_moves_per_hour_is_respected():
    group = _group(consolidation_max_moves_per_hour=1, node_policy="spread")
    _, queue = make_tenant("team-a", group, devices_milli=100_000)
    halves = _halves(queue, n=4)  # spread: one half on each of the four GPUs
    run_admission_cycle(group.pk)
    assert len({tuple(_devices(h)) for h in halves}) == 4
    wholes = _wholes(queue, 2)  # each needs one move; the budget allows one

    report = run_admission_cycle(group.pk)
    assert len(report.moved) == 1
    assert ConsolidationMove.objects.filter(resource_group=group).count() == 1
    run_admission_cycle(group.pk)  # admits the first waiting job and the moved one
    release_inadmissible(group.pk)
    report = run_admission_cycle(group.pk)
    assert report.considered == 1
    assert report.moved == []  # the hour's budget is spent
    assert Job.objects.get(pk=wholes[1].pk).pending_reason.endswith(
        "\nconsolidation: the move budget (1 per hour) is spent"
    )
    states = sorted(
        Job.objects.filter(pk__in=[w.pk for w in wholes]).values_list("state", flat=True)
    )
    assert states == [JobState.ADMITTED, JobState.QUEUED]

    # an hour later the budget is back
    ConsolidationMove.objects.update(time=timezone.now() - timedelta(hours=1, seconds=1))
    release_inadmissible(group.pk)  # (the set-aside job is otherwise looked at within a minute)
    report = run_admission_cycle(group.pk)
    assert len(report.moved) == 1
    _assert_invariants(group)


def test_the_moved_jobs_tenant_never_sees_the_other_tenant():
    group = _group()
    _, other = make_tenant("team-b", group, devices_milli=100_000)
    _, mine = make_tenant("team-a", group, devices_milli=100_000)
    halves = _halves(other)
    run_admission_cycle(group.pk)
    wholes = _wholes(mine, 3, prefix="secret-")
    report = run_admission_cycle(group.pk)
    assert len(report.moved) == 1
    moved = Job.objects.get(pk=report.moved[0])
    assert moved.pk in {h.pk for h in halves}
    event = JobEvent.objects.get(job=moved, kind="moved")
    assert event.message.endswith("to make room for a job of another tenant")
    for text in (event.message, moved.pending_reason):
        assert "team-a" not in text and "secret" not in text
    row = ConsolidationMove.objects.get()
    assert (row.job_tenant, row.for_tenant) == ("team-b", "team-a")
    assert Job.objects.get(pk=wholes[2].pk).preempting_since is not None


def test_on_kubernetes_the_old_pods_terminate_first_and_nothing_more_moves_meanwhile():
    group = _group()
    _, queue = make_tenant("team-a", group, devices_milli=100_000)
    halves, wholes = _fragmented(group, queue)
    Cluster.objects.filter(name="c1").update(backend="kubernetes")
    report = run_admission_cycle(group.pk)
    assert len(report.moved) == 1
    moved = Job.objects.get(pk=report.moved[0])
    (old,) = Placement.objects.filter(job=moved)
    assert old.state == PlacementState.TERMINATING  # pods deleted after commit, still booked
    assert old.evict_by > timezone.now()
    assert moved.state == JobState.QUEUED

    # while the old pods terminate: the waiting job does not fit, and no other job moves
    release_inadmissible(group.pk)
    report = run_admission_cycle(group.pk)
    assert report.admitted == [] and report.moved == []
    assert ConsolidationMove.objects.count() == 1
    assert Job.objects.get(pk=wholes[2].pk).preempting_since is not None  # still first in line

    # the reconcile sees the pods gone: the waiting job takes the freed GPU, the moved one
    # restarts beside the job that stayed
    release_terminated([old.pk], now=timezone.now(), reason="pods gone")
    report = run_admission_cycle(group.pk)
    assert sorted(report.admitted) == sorted([wholes[2].pk, moved.pk])
    stayed = next(h for h in halves if h.pk != moved.pk)
    assert _devices(moved) == _devices(stayed)
    _assert_invariants(group)


@pytest.mark.parametrize(("value", "allowed"), [("true", True), ("false", False), (None, False)])
def test_objects_taken_in_opt_in_with_the_annotation(value, allowed):
    annotations = {} if value is None else {wl.ANNOTATION_ALLOW_CONSOLIDATION: value}
    obj = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "t", "annotations": annotations},
        "spec": {
            "suspend": True,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "main",
                            "image": "busybox:1.37",
                            "resources": {"limits": {"nvidia.com/gpu": "1"}},
                        }
                    ],
                }
            },
        },
    }
    workload = wl.read_workload("Job", obj, default_device_configs())
    assert job_spec(workload).allow_consolidation is allowed


# -- the moved job restarts on the planned target (pins) ----------------------------------------


def _add_node(name="c1-n2", gpus=1):
    """One more node of cluster c1 with ``gpus`` free A100s (``GPU-<name>-<j>``)."""
    node = Node.objects.create(
        cluster=Cluster.objects.get(name="c1"),
        name=name,
        cpu_milli=64000,
        host_memory_mib=262144,
        labels={"pool": "c1"},
    )
    model = DeviceModel.objects.get()
    for j in range(gpus):
        Device.objects.create(
            uuid=f"GPU-{name}-{j}", node=node, model=model, index=j, memory_mib=81920
        )


def _moved_once(group, queue):
    """The fragmented group after its consolidation cycle: (moved job, its move row)."""
    _fragmented(group, queue)
    report = run_admission_cycle(group.pk)
    assert len(report.moved) == 1
    moved = Job.objects.get(pk=report.moved[0])
    return moved, ConsolidationMove.objects.get(job=moved)


@pytest.mark.parametrize("pinned", [True, False])
def test_the_moved_job_restarts_on_the_planned_devices(pinned, monkeypatch):
    group = _group()
    _, queue = make_tenant("team-a", group, devices_milli=100_000)
    moved, move = _moved_once(group, queue)
    (planned,) = move.target_pods
    assert move.pin == ConsolidationPin.PENDING
    assert planned["node"] == "c1-n0" and len(planned["devices"]["main"]) == 1
    target = planned["devices"]["main"][0]
    assert move.target == f"c1-n0 ({target})"
    # before the next cycle the cluster changes: an idle node appears and the group's node
    # policy becomes spread, so the normal placement would now put the moved job elsewhere
    _add_node()
    ResourceGroup.objects.filter(pk=group.pk).update(node_policy="spread")
    if not pinned:  # the same cycle without the pin: where the normal placement puts it
        monkeypatch.setattr(cycle_service, "pin_moved_jobs", lambda ctx, placer: CyclePins())

    report = run_admission_cycle(group.pk)

    assert moved.pk in report.admitted
    if not pinned:
        assert _devices(moved) != [target]
        return
    assert _devices(moved) == [target]
    move.refresh_from_db()
    assert move.pin == ConsolidationPin.PLACED
    event = JobEvent.objects.get(job=moved, kind="consolidation")
    assert event.message == f"placed on the target planned by consolidation: c1-n0 ({target})"
    _assert_invariants(group)


def test_the_moved_job_falls_back_when_its_target_was_taken():
    group = _group()
    tenant, queue = make_tenant("team-a", group, devices_milli=100_000)
    moved, move = _moved_once(group, queue)
    target = move.target_pods[0]["devices"]["main"][0]
    # a more urgent half-GPU job arrives and takes the planned target first
    urgent = gpu_job(queue, "urgent", count=1, memory_percent=50, cores=50, priority=10)
    report = run_admission_cycle(group.pk)
    assert urgent.pk in report.admitted and moved.pk not in report.admitted
    assert _devices(urgent) == [target]
    move.refresh_from_db()
    assert move.pin == ConsolidationPin.PENDING  # overtaken in the cycle: checked again

    _add_node()  # room elsewhere
    release_inadmissible(group.pk)
    report = run_admission_cycle(group.pk)

    assert moved.pk in report.admitted
    assert _devices(moved) == ["GPU-c1-n2-0"]
    move.refresh_from_db()
    assert move.pin == ConsolidationPin.FELL_BACK
    event = JobEvent.objects.get(job=moved, kind="consolidation")
    assert event.message == (
        f"not placed on the target planned by consolidation (c1-n0 ({target})): the planned "
        f"target is no longer free; it is placed wherever it fits instead"
    )
    _assert_invariants(group)


def test_an_unreadable_planned_target_falls_back_and_the_cycle_goes_on():
    group = _group()
    _, queue = make_tenant("team-a", group, devices_milli=100_000)
    moved, move = _moved_once(group, queue)
    ConsolidationMove.objects.filter(pk=move.pk).update(target_pods={"node": "c1-n0"})

    report = run_admission_cycle(group.pk)

    assert moved.pk in report.admitted  # placed by the normal placement
    move.refresh_from_db()
    assert move.pin == ConsolidationPin.FELL_BACK
    event = JobEvent.objects.get(job=moved, kind="consolidation")
    assert event.message.startswith(
        f"not placed on the target planned by consolidation ({move.target}): the planned "
        f"target could not be read (a pin is a list of pods)"
    )
    _assert_invariants(group)
