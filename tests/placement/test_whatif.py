"""The what-if replay (scheduling.placement.whatif.run): BestEffortFIFO admission with tenant
quotas over the placement core, hand-worked on one 2-GPU node. Pure, no Django."""

import pytest

from scheduling.placement.whatif.run import SimPod, jain_index, replay_policy
from scheduling.placement.whatif.trace import NodeRecord, PodRecord

NODES = [NodeRecord("n0", 32000, 131072, 2, "G")]


def pod(name, tenant, arrival, duration, gpus=1, milli=1000):
    return SimPod(tenant, arrival, duration, PodRecord(name, 1000, 1024, gpus, milli))


PODS = [pod("a1", "a", 0, 100), pod("a2", "a", 0, 100), pod("b1", "b", 10, 50)]


@pytest.mark.parametrize("policy", ["BestFit", "FGD"])
def test_no_quota_b_waits_for_a_gpu(policy):
    r = replay_policy(policy, NODES, PODS)
    assert (r.pods, r.never_ran, r.span_s, r.capacity_milli) == (3, 0, 150, 2000)
    assert (r.mean_wait_s, r.p95_wait_s) == (30.0, 90.0)  # waits 0, 0, 90
    assert r.mean_allocation_pct == pytest.approx((100 * 100 + 50 * 50) / 150)
    assert r.tenants["b"].mean_wait_s == 90 and r.fairness == 1.0
    assert r.allocation[0] == (0, 100.0) and r.allocation[-1] == (150, 0.0)


def test_quota_holds_a_back_and_lets_b_in():
    progress = []
    r = replay_policy(
        "BestFit",
        NODES,
        PODS,
        quotas={"a": 1000},
        progress=lambda done, total: progress.append((done, total)),
    )
    assert r.tenants["a"].mean_wait_s == 50.0  # a2 waits 100 s for a1
    assert r.tenants["b"].mean_wait_s == 0.0
    assert r.span_s == 200
    assert r.mean_allocation_pct == pytest.approx(12500 / 200)
    assert progress[-1] == (6, 6)


def test_never_ran_and_fairness():
    big = [pod("huge", "a", 0, 10, gpus=4), pod("ok", "b", 0, 10)]
    r = replay_policy("BestFit", NODES, big)
    assert r.never_ran == 1 and r.tenants["a"].started == 0
    assert r.fairness == pytest.approx(jain_index([0.0, 1.0])) == 0.5
    assert r.as_dict()["tenants"]["a"]["mean_wait_s"] is None


def test_bad_input():
    with pytest.raises(ValueError):
        replay_policy("BestFit", NODES, [])
    with pytest.raises(KeyError):
        replay_policy("NoSuchPolicy", NODES, PODS)
