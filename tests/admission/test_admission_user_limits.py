"""Per-user limits and budget hard actions in the admission core (issue 33)."""

from scheduling.admission import BudgetAction, BudgetGateSpec, PendingCode, UserLimitSpec, run_cycle
from tests.admission.admission_builders import World, a100s, ids, quota, verdicts


def _world() -> World:
    return World(a100s(4), quotas=(quota("team-a", 16000), quota("team-b", 16000)))


def test_running_jobs_limit_blocks_the_users_next_job_with_the_exact_reason():
    w = _world()
    for n in range(3):
        w.submit(f"a{n}", "team-a", user="alice", created=60 - n)
    w.submit("b0", "team-a", user="bob", created=1)
    limit = UserLimitSpec("team-a", "alice", max_running_jobs=8, running_jobs=6)
    result = run_cycle(w.snapshot(user_limits=(limit,)), w.placer)
    assert sorted(ids(result)) == ["a0", "a1", "b0"]
    code, reason, position, _ = verdicts(result)["a2"]
    assert (code, reason, position) == (
        PendingCode.USER_LIMIT_EXCEEDED,
        "user alice: 8 of 8 running jobs",
        1,
    )


def test_limit_below_current_usage_refuses_new_admissions_and_stops_nothing():
    w = _world()
    w.run("r0", "team-a", pods=2)
    w.submit("a0", "team-a", user="alice")
    limit = UserLimitSpec("team-a", "alice", max_running_jobs=0, running_jobs=1)
    result = run_cycle(w.snapshot(user_limits=(limit,)), w.placer)
    assert result.admitted == () and result.preempted == ()
    assert verdicts(result)["a0"][1] == "user alice: 1 of 0 running jobs"


def test_devices_limit_in_device_equivalents_counts_this_cycles_admissions():
    w = _world()
    w.submit("a0", "team-a", pods=2, user="alice", created=60)
    w.submit("a1", "team-a", pods=2, user="alice", created=50)
    w.submit("a2", "team-a", pods=1, user="alice", created=40)
    limit = UserLimitSpec("team-a", "alice", max_devices=4000, used_devices=500)
    result = run_cycle(w.snapshot(user_limits=(limit,)), w.placer)
    assert ids(result) == ["a0", "a2"]
    code, reason, _, _ = verdicts(result)["a1"]
    assert (code, reason) == (
        PendingCode.USER_LIMIT_EXCEEDED,
        "user alice: 2.5 of 4 devices, needs 2",
    )


def test_per_model_devices_limit_ignores_other_flavors():
    w = _world()
    w.submit("a0", "team-a", pods=2, user="alice")
    other_model = UserLimitSpec(
        "team-a", "alice", max_devices=0, flavors=("h100",), device_model="H100"
    )
    assert ids(run_cycle(w.snapshot(user_limits=(other_model,)), w.placer)) == ["a0"]
    w2 = _world()
    w2.submit("a0", "team-a", pods=2, user="alice")
    this_model = UserLimitSpec(
        "team-a", "alice", max_devices=1000, flavors=("a100",), device_model="A100"
    )
    result = run_cycle(w2.snapshot(user_limits=(this_model,)), w2.placer)
    assert verdicts(result)["a0"][1] == "user alice: 0 of 1 devices A100, needs 2"


def test_limits_are_per_tenant_and_user():
    w = _world()
    w.submit("a0", "team-a", user="alice")
    w.submit("b0", "team-b", user="alice")
    limit = UserLimitSpec("team-a", "alice", max_running_jobs=0)
    assert ids(run_cycle(w.snapshot(user_limits=(limit,)), w.placer)) == ["b0"]


def test_stop_budget_names_the_budget_and_covers_only_its_scope():
    w = _world()
    w.submit("a0", "team-a", user="alice", created=60)
    w.submit("a1", "team-a", user="bob", created=50)
    w.submit("b0", "team-b", user="alice", created=40)
    label = "budget alice-monthly: 101 of 100 GPU-hours spent (hard action stop)"
    gate = BudgetGateSpec("team-a", "alice", BudgetAction.STOP, label)
    result = run_cycle(w.snapshot(budget_gates=(gate,)), w.placer)
    assert sorted(ids(result)) == ["a1", "b0"]
    assert verdicts(result)["a0"][:2] == (PendingCode.BUDGET_EXHAUSTED, label)
    tenant_gate = BudgetGateSpec("team-a", None, BudgetAction.STOP, "budget team-a: spent")
    fresh = _world()
    fresh.pending = list(w.pending)
    assert ids(run_cycle(fresh.snapshot(budget_gates=(tenant_gate,)), fresh.placer)) == ["b0"]


def test_preemptible_budget_admits_a_non_preemptible_job_as_preemptible_and_borrowing():
    w = World(a100s(2), quotas=(quota("team-a", 2000), quota("team-b", 6000)))
    w.submit("a0", "team-a", pods=4, user="alice", preemptible=False)
    # without the gate a non-preemptible job never borrows
    assert run_cycle(w.snapshot(), w.placer).admitted == ()
    gate = BudgetGateSpec("team-a", "alice", BudgetAction.PREEMPTIBLE, "budget spent")
    (admission,) = run_cycle(w.snapshot(budget_gates=(gate,)), w.placer).admitted
    assert (admission.workload_id, admission.preemptible, admission.borrowing) == ("a0", True, True)


def test_notify_budget_changes_nothing():
    w = _world()
    w.submit("a0", "team-a", user="alice", preemptible=False)
    gate = BudgetGateSpec("team-a", "alice", BudgetAction.NOTIFY, "budget spent")
    (admission,) = run_cycle(w.snapshot(budget_gates=(gate,)), w.placer).admitted
    assert admission.preemptible is False
