"""A resource group's placement profile in the live admission cycle: node / device policy,
FragGuard against the group's recent job shapes, per-job HAMi annotations where allowed."""

import pytest

from scheduling.choices import JobState
from scheduling.models import Job, Placement, PlacementDevice
from scheduling.selectors.admission import build_admission_snapshot
from scheduling.selectors.placement_profile import forget_workloads, group_profile
from scheduling.services.cycle import run_admission_cycle
from scheduling.services.jobs import ContainerSpec, JobSpec, enqueue_job
from tests.builders import gpu_job, make_cluster, make_group, make_tenant

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_workloads():
    forget_workloads()
    yield
    forget_workloads()


def _group(**policy):
    make_cluster("c1", nodes=2, gpus=2)
    group = make_group("g1")
    for key, value in policy.items():
        setattr(group, key, value)
    group.save()
    _, queue = make_tenant("team-a", group, devices_milli=100_000)
    return group, queue


def _nodes(job):
    return sorted(Placement.objects.filter(job=job).values_list("node__name", flat=True))


def _devices(job):
    return sorted(
        PlacementDevice.objects.filter(placement__job=job).values_list("device__uuid", flat=True)
    )


def _annotated(queue, name, annotations, *, pct=100):
    spec = JobSpec(
        name=name,
        cpu_milli=1000,
        host_memory_mib=1024,
        annotations=annotations,
        containers=[ContainerSpec(device_count=1, memory_percent=pct, cores_percent=pct)],
    )
    return enqueue_job(queue, spec, enqueue=False)


def test_spread_node_policy_alternates_nodes():
    group, queue = _group(node_policy="spread")
    jobs = [gpu_job(queue, f"j{i}", count=1, memory_percent=100, cores=100) for i in range(3)]
    report = run_admission_cycle(group.pk)
    assert report.admitted == [j.pk for j in jobs]
    # spread: the idlest node (ties to the smaller name) — n0, then n1, then n0 again
    assert [_nodes(j) for j in jobs] == [["c1-n0"], ["c1-n1"], ["c1-n0"]]


@pytest.mark.parametrize(("device_policy", "shared"), [("spread", False), ("binpack", True)])
def test_device_policy_chooses_the_device_within_the_node(device_policy, shared):
    group, queue = _group(device_policy=device_policy)
    first = gpu_job(queue, "a", count=1, memory_percent=30, cores=30)
    other = gpu_job(queue, "b", count=1, memory_percent=30, cores=30)
    run_admission_cycle(group.pk)
    assert _nodes(first) == _nodes(other) == ["c1-n0"]  # node binpack
    # spread: the less used device of the node; binpack: the more used one
    assert (_devices(first) == _devices(other)) is shared


def test_pod_annotation_overrides_the_group_policy_when_allowed():
    group, queue = _group()  # binpack / spread, overrides allowed
    first = gpu_job(queue, "a", count=1, memory_percent=100, cores=100)
    spread = _annotated(queue, "b", {"hami.io/node-scheduler-policy": "spread"})
    packed = gpu_job(queue, "c", count=1, memory_percent=100, cores=100)
    run_admission_cycle(group.pk)
    assert _nodes(first) == ["c1-n0"]
    assert _nodes(spread) == ["c1-n1"]  # the idle node, against the group's binpack
    assert _nodes(packed) == ["c1-n0"]


def test_pod_annotation_is_ignored_where_the_group_forbids_it():
    group, queue = _group(pod_policy_override=False)
    first = gpu_job(queue, "a", count=1, memory_percent=100, cores=100)
    second = _annotated(queue, "b", {"hami.io/node-scheduler-policy": "spread"})
    run_admission_cycle(group.pk)
    assert _nodes(first) == _nodes(second) == ["c1-n0"]


def test_pod_device_policy_annotation():
    group, queue = _group()  # device spread
    first = gpu_job(queue, "a", count=1, memory_percent=30, cores=30)
    packed = _annotated(queue, "b", {"hami.io/gpu-scheduler-policy": "binpack"}, pct=30)
    run_admission_cycle(group.pk)
    assert _devices(first) == _devices(packed)


def _fragmenting_mix(queue):
    """Two half GPUs then three whole GPUs: 4 GPUs of demand on 4 GPUs."""
    halves = [gpu_job(queue, f"h{i}", count=1, memory_percent=50, cores=50) for i in range(2)]
    wholes = [gpu_job(queue, f"w{i}", count=1, memory_percent=100, cores=100) for i in range(3)]
    return halves, wholes


def test_hami_default_strands_half_devices_and_leaves_a_whole_job_pending():
    group, queue = _group()
    halves, wholes = _fragmenting_mix(queue)
    report = run_admission_cycle(group.pk)
    # device spread puts the halves on two devices of n0: only 2 devices remain whole
    assert _nodes(halves[0]) == _nodes(halves[1]) == ["c1-n0"]
    assert _devices(halves[0]) != _devices(halves[1])
    assert len(report.admitted) == 4
    assert Job.objects.get(pk=wholes[1].pk).state == JobState.ADMITTED
    assert Job.objects.get(pk=wholes[2].pk).state == JobState.QUEUED


def test_fragguard_packs_halves_on_one_device_and_places_everything():
    group, queue = _group(fragmentation_policy="FragGuard")
    halves, wholes = _fragmenting_mix(queue)
    report = run_admission_cycle(group.pk)
    assert sorted(report.admitted) == sorted(j.pk for j in [*halves, *wholes])
    assert _devices(halves[0]) == _devices(halves[1])
    booked = PlacementDevice.objects.values_list("device__uuid", flat=True)
    assert len(set(booked)) == 4


def test_fragguard_profile_reads_the_groups_recent_job_shapes():
    group, queue = _group(fragmentation_policy="FragGuard")
    _fragmenting_mix(queue)
    profile = group_profile(group)
    assert profile.scores == (("FragGuard", 1.0),)
    workload = profile.plugin_args["FragGuard"]["workload"]
    # 2 tasks of 500 milli-GPU and 3 of 1000, one GPU each (the overview's M)
    shapes = {
        (c.gpu_milli, c.num_gpu): round(p, 3)
        for c, p in zip(workload.classes, workload.weights, strict=True)
    }
    assert shapes == {(500, 1): 0.4, (1000, 1): 0.6}


def test_context_placer_uses_the_groups_profile():
    group, queue = _group(node_policy="spread", device_policy="binpack")
    job = gpu_job(queue, "a", count=1, memory_percent=50, cores=50)
    from django.utils import timezone

    ctx = build_admission_snapshot(group, timezone.now(), pending=[job])
    profile = ctx.placer().framework.profile
    assert (profile.node_policy, profile.device_policy) == ("spread", "binpack")


def test_a_stored_value_outside_the_choices_falls_back_for_that_field_only():
    from scheduling.selectors.placement_profile import group_policy
    from tenants.models import ResourceGroup

    group, queue = _group(node_policy="spread")
    ResourceGroup.objects.filter(pk=group.pk).update(fragmentation_policy="bogus")
    group.refresh_from_db()
    policy = group_policy(group)
    assert (policy.node_policy, policy.device_policy, policy.fragmentation) == (
        "spread",
        "spread",
        "none",
    )
    job = gpu_job(queue, "a", count=1, memory_percent=100, cores=100)
    assert run_admission_cycle(group.pk).admitted == [job.pk]  # the group keeps working


def test_policy_words_written_around_validation_are_normalised_in_use():
    """Stray spaces or case in a stored group policy or a job's policy annotation mean the
    word (issue 29): the same normaliser as the API's validation, not a silent fallback."""
    from scheduling.selectors.placement_profile import group_policy
    from tenants.models import ResourceGroup

    group, queue = _group()
    ResourceGroup.objects.filter(pk=group.pk).update(
        node_policy=" Spread ", device_policy="BINPACK"
    )
    group.refresh_from_db()
    policy = group_policy(group)
    assert (policy.node_policy, policy.device_policy) == ("spread", "binpack")
    first = gpu_job(queue, "s0", count=1, memory_percent=50, cores=50)
    packed = _annotated(queue, "p", {"hami.io/node-scheduler-policy": " Binpack "}, pct=50)
    second = gpu_job(queue, "s1", count=1, memory_percent=50, cores=50)
    report = run_admission_cycle(group.pk)
    assert report.admitted == [first.pk, packed.pk, second.pk]
    assert _nodes(first) == ["c1-n0"]
    assert _nodes(packed) == ["c1-n0"]  # its own binpack: the busier node
    assert _nodes(second) == ["c1-n1"]  # the group's spread: the idler node
