"""The group placement policy → profile translation (pure core): validation, annotations,
FragGuard's fast path and its HAMi fallback for pods it does not model."""

import pytest
from placement_builders import trace_node

from scheduling.placement import place
from scheduling.placement.fragmentation import TargetWorkload, TaskClass
from scheduling.placement.group_profile import (
    DEVICE_POLICY_ANNOTATION,
    NODE_POLICY_ANNOTATION,
    PlacementPolicy,
    annotation_errors,
    policy_profile,
)
from scheduling.placement.types import (
    ClusterSnapshot,
    ContainerRequest,
    DeviceRequest,
    PlacementRequest,
    PodRequest,
)

WL = TargetWorkload((TaskClass(1000, 1000, 1),), (1.0,))


def _req(pct, *, memory_mib=0, node_policy=""):
    dev = DeviceRequest(
        "NVIDIA",
        1,
        memory_mib=memory_mib,
        memory_percent=None if memory_mib else pct,
        cores_percent=pct,
    )
    pod = PodRequest("p", 1000, 1024, (ContainerRequest("main", (dev,)),), node_policy=node_policy)
    return PlacementRequest("r", (pod,))


def _snap():
    # n0: one GPU half used, one free; n1: two free GPUs
    return ClusterSnapshot.from_nodes(
        [
            trace_node("n0", [500, 1000], cpu=16000, memory_mib=262144),
            trace_node("n1", [1000, 1000], cpu=16000, memory_mib=262144),
        ]
    )


@pytest.mark.parametrize(
    ("field", "value"),
    [("node_policy", "random"), ("device_policy", "mutex"), ("fragmentation", "fgd")],
)
def test_bad_values_name_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        PlacementPolicy(**{field: value})


def test_pod_overrides_only_where_allowed():
    ann = {NODE_POLICY_ANNOTATION: "spread", DEVICE_POLICY_ANNOTATION: "binpack"}
    assert PlacementPolicy().pod_overrides(ann) == ("spread", "binpack")
    assert PlacementPolicy(pod_override=False).pod_overrides(ann) == ("", "")
    assert PlacementPolicy().pod_overrides(None) == ("", "")


def test_annotation_errors():
    assert annotation_errors({"x/y": "1"}, False) == []
    assert annotation_errors({NODE_POLICY_ANNOTATION: "spread"}, True) == []
    assert annotation_errors({NODE_POLICY_ANNOTATION: "spread"}, False) == [
        "hami.io/node-scheduler-policy: the resource group does not allow per-job policies"
    ]
    assert annotation_errors({DEVICE_POLICY_ANNOTATION: "mutex"}, True) == [
        "hami.io/gpu-scheduler-policy: 'mutex' is not one of binpack, spread, topology-aware"
    ]


def test_fragguard_needs_a_workload():
    with pytest.raises(ValueError, match="target workload"):
        policy_profile(PlacementPolicy(fragmentation="FragGuard"))


def test_hami_profile_carries_the_policies():
    prof = policy_profile(PlacementPolicy("spread", "topology-aware"))
    assert (prof.node_policy, prof.device_policy, prof.scores) == (
        "spread",
        "topology-aware",
        (("HAMiNodeScore", 1.0),),
    )


def test_fragguard_answers_trace_shaped_pods_on_the_fast_path():
    fw = policy_profile(PlacementPolicy(fragmentation="FragGuard"), workload=WL).build()
    assert fw.select_plugin is not None and fw.select_plugin.name == "FragGuard"
    # M is whole GPUs: a half GPU goes to n0's half-used GPU, keeping three whole GPUs
    dec = place(_snap(), _req(50), fw)
    assert dec.schedulable
    assert dec.pods[0].node == "n0"
    assert [g.uuid for g in dec.pods[0].containers[0].devices] == ["n0-0"]


@pytest.mark.parametrize(("node_policy", "node"), [("binpack", "n0"), ("spread", "n1")])
def test_fragguard_falls_back_to_hami_scores_in_the_groups_direction(node_policy, node):
    fw = policy_profile(
        PlacementPolicy(node_policy, fragmentation="FragGuard"), workload=WL
    ).build()
    # a memory_mib request is not trace-shaped: HAMi node score, group direction
    dec = place(_snap(), _req(10, memory_mib=1000), fw)
    assert dec.schedulable and dec.pods[0].node == node


def test_pod_node_policy_wins_over_the_groups_direction():
    fw = policy_profile(PlacementPolicy("binpack", fragmentation="FragGuard"), workload=WL).build()
    dec = place(_snap(), _req(50, node_policy="spread"), fw)
    assert dec.schedulable and dec.pods[0].node == "n1"
