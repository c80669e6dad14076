"""Phase 2: quota fit per dimension with borrowing/lending limits, kinds, nesting, caps."""

from scheduling.admission import (
    AggregateCapSpec,
    GroupKind,
    PendingCode,
    PreemptionPolicy,
    QuotaTree,
    TenantSpec,
    children_over_parent,
    run_cycle,
)
from scheduling.admission.fake import PodShape
from tests.admission.admission_builders import (
    DEV,
    MEM,
    NO_FAIR,
    World,
    a100s,
    group,
    ids,
    quota,
    verdicts,
)


def test_fits_within_nominal_and_charges_exactly():
    w = World(a100s(3), quotas=(quota("team-a", 4000), quota("team-b", 4000)))
    w.submit("a1", "team-a", pods=2)
    result = run_cycle(w.snapshot(), w.placer)
    assert ids(result) == ["a1"]
    admission = result.admitted[0]
    assert admission.charges == {
        ("a100", DEV): 2000,
        ("a100", MEM): 163840,
        ("a100", "cores_percent"): 200,
    }
    assert admission.borrowing is False
    assert admission.pod_count == 2
    assert [p.node for p in admission.placement.pods] == ["n1", "n1"]
    assert result.usage == {"team-a": admission.charges}
    assert result.pending == ()


def test_borrows_unused_nominal_of_the_cohort():
    w = World(a100s(3), quotas=(quota("team-a", 4000), quota("team-b", 4000)))
    w.submit("a1", "team-a", pods=6)
    result = run_cycle(w.snapshot(), w.placer)
    assert ids(result) == ["a1"]
    assert result.admitted[0].borrowing is True


def test_borrowing_limit_caps_what_a_tenant_can_ever_get():
    w = World(a100s(3), quotas=(quota("team-a", 4000, borrowing_limit=1000), quota("team-b", 4000)))
    w.submit("a1", "team-a", pods=6)
    result = run_cycle(w.snapshot(), w.placer)
    assert ids(result) == []
    assert verdicts(result) == {
        "a1": (
            PendingCode.EXCEEDS_MAX_QUOTA,
            "tenant team-a, group a100-shared, flavor a100, devices: needs 6000, max 5000 "
            "(nominal 4000; bounded by borrowing limit of tenant team-a)",
            1,
            (),
        )
    }


def test_lending_limit_keeps_part_of_the_lenders_nominal_private():
    # team-b lends at most 1000 and uses 3500 (3 whole + one half device): 500 of its
    # lendable part is in use, so team-a can get 4000 + 500.
    w = World(a100s(3), quotas=(quota("team-a", 4000), quota("team-b", 4000, lending_limit=1000)))
    for i in range(3):
        w.run(f"b{i}", "team-b")
    w.run("b-half", "team-b", PodShape(cores_percent=50, memory_mib=1000))
    w.submit("a1", "team-a", pods=5)
    result = run_cycle(w.snapshot(), w.placer)
    assert ids(result) == []
    assert verdicts(result) == {
        "a1": (
            PendingCode.WAITING_FOR_QUOTA,
            "tenant team-a, group a100-shared, flavor a100, devices: needs 5000, free 4000, "
            "borrowable 500 (bounded by cohort a100-shared)",
            1,
            (
                "preemption: no valid candidates",
                "preemption: 4 job(s) of other tenants rejected: borrower within nominal x4",
            ),
        )
    }


def test_exclusive_group_never_lends_nor_borrows_whatever_the_rows_say():
    w = World(
        a100s(3),
        kind=GroupKind.EXCLUSIVE,
        quotas=(quota("team-a", 4000, borrowing_limit=None), quota("team-b", 4000)),
    )
    w.run("a0", "team-a", pods=2)
    w.submit("a1", "team-a", pods=3)
    w.submit("a2", "team-a", pods=6, created=30)
    result = run_cycle(w.snapshot(), w.placer)
    assert ids(result) == []
    assert verdicts(result) == {
        "a1": (
            PendingCode.WAITING_FOR_QUOTA,
            "tenant team-a, group a100-shared, flavor a100, devices: needs 3000, free 2000, "
            "borrowable 0 (bounded by exclusive group a100-shared, no borrowing)",
            1,
            (
                "preemption: no valid candidates",
                "preemption: a0 rejected: withinClusterQueue LowerPriority: priority 0 >= 0",
            ),
        ),
        "a2": (
            PendingCode.EXCEEDS_MAX_QUOTA,
            "tenant team-a, group a100-shared, flavor a100, devices: needs 6000, max 4000 "
            "(nominal 4000; bounded by exclusive group a100-shared, no borrowing)",
            2,
            (),
        ),
    }


def test_tenant_without_any_row_for_a_flavor_may_not_use_it():
    w = World(
        a100s(1),
        tenants=(TenantSpec("team-a"), TenantSpec("team-b"), TenantSpec("team-c")),
        quotas=(quota("team-a", 4000), quota("team-b", 4000)),
    )
    w.submit("c1", "team-c")
    result = run_cycle(w.snapshot(), w.placer)
    assert verdicts(result)["c1"][:2] == (
        PendingCode.EXCEEDS_MAX_QUOTA,
        "tenant team-c, group a100-shared, flavor a100: no quota for this flavor",
    )


def test_dimension_without_a_row_on_the_tenant_path_is_not_limited():
    # team-b limits memory; team-a only has a devices row, so its memory is not limited
    # and not counted against the cohort.
    w = World(a100s(2), quotas=(quota("team-a", 8000), quota("team-b", 0, MEM)))
    w.submit("a1", "team-a", pods=4)
    w.submit("b1", "team-b", PodShape(memory_mib=1024, cores_percent=10), created=30)
    result = run_cycle(w.snapshot(), w.placer)
    assert ids(result) == ["a1"]
    assert verdicts(result)["b1"][1] == (
        "tenant team-b, group a100-shared, flavor a100, memory_mib: needs 1024, max 0 "
        "(nominal 0; bounded by cohort a100-shared)"
    )


def test_unlimited_dimension_waits_while_the_cohort_is_over_its_quota():
    # team-b's memory row was deleted while team-a borrowed 81920 MiB of it: team-b's memory
    # is no longer limited, but the cohort books 163840 MiB against a memory quota of 81920,
    # so no new job needing memory is admitted until the usage is back within it.
    w = World(
        a100s(1), quotas=(quota("team-a", 2000), quota("team-a", 81920, MEM), quota("team-b", 2000))
    )
    w.set_queue("team-b", reclaim_within_cohort=PreemptionPolicy.NEVER)
    w.run("a0", "team-a")
    w.run("a1", "team-a", started=1800)
    w.submit("b1", "team-b")
    result = run_cycle(w.snapshot(), w.placer)
    assert (ids(result), result.preempted) == ([], ())
    assert verdicts(result)["b1"][:2] == (
        PendingCode.WAITING_FOR_QUOTA,
        "tenant team-b, group a100-shared, flavor a100, memory_mib: needs 81920, cohort "
        "a100-shared usage 163840 exceeds its quota 81920 (a quota row was shrunk or "
        "deleted); waits until the usage is back within the quota",
    )
    w.finish("a1")  # usage 81920 of 81920: within the quota again
    assert ids(run_cycle(w.snapshot(), w.placer)) == ["b1"]


def test_team_without_own_row_draws_on_its_department_pool():
    tenants = (TenantSpec("dept"), TenantSpec("team-a", "dept"), TenantSpec("team-b", "dept"))
    w = World(a100s(2), tenants=tenants, quotas=(quota("dept", 3000),))
    w.run("b0", "team-b", pods=2)
    w.submit("a1", "team-a", pods=2)
    w.submit("a2", "team-a", pods=1, created=30)
    result = run_cycle(w.snapshot(), w.placer, NO_FAIR)
    assert ids(result) == ["a2"]
    assert verdicts(result)["a1"][1] == (
        "tenant team-a, group a100-shared, flavor a100, devices: needs 2000, free 0, "
        "borrowable 1000 (bounded by cohort a100-shared; no quota row for this tenant)"
    )


def test_memory_dimension_blocks_with_its_own_numbers():
    # Only memory is managed; team-a holds 2 whole devices (163840 MiB) of 172032 MiB.
    w = World(
        a100s(2), quotas=(quota("team-a", 172032, MEM, borrowing_limit=0), quota("team-b", 0, MEM))
    )
    w.run("a0", "team-a", pods=2)
    w.submit("a1", "team-a", PodShape(memory_percent=50, cores_percent=30))
    result = run_cycle(w.snapshot(), w.placer)
    assert verdicts(result)["a1"][1] == (
        "tenant team-a, group a100-shared, flavor a100, memory_mib: needs 40960, free 8192, "
        "borrowable 0 (bounded by borrowing limit of tenant team-a)"
    )


def nested_world(dept_borrowing_limit=None):
    tenants = (
        TenantSpec("dept"),
        TenantSpec("team-a", "dept"),
        TenantSpec("team-b", "dept"),
        TenantSpec("team-c"),
    )
    quotas = (quota("team-a", 2000), quota("team-b", 2000), quota("team-c", 4000, lending_limit=0))
    if dept_borrowing_limit is not None:
        quotas += (quota("dept", 0, borrowing_limit=dept_borrowing_limit),)
    return World(a100s(3), tenants=tenants, quotas=quotas)


def test_nested_teams_borrow_from_their_department_sibling_not_from_a_private_lender():
    w = nested_world()
    w.submit("a1", "team-a", pods=4)
    w.submit("a2", "team-a", pods=5, created=30)
    result = run_cycle(w.snapshot(), w.placer)
    assert ids(result) == ["a1"]
    assert verdicts(result)["a2"][:2] == (
        PendingCode.EXCEEDS_MAX_QUOTA,
        "tenant team-a, group a100-shared, flavor a100, devices: needs 5000, max 4000 "
        "(nominal 2000; bounded by cohort a100-shared)",
    )


def test_department_borrowing_limit_is_named_as_the_blocking_level():
    # dept lends from the cohort (team-c has no lending limit here) at most 1000.
    tenants = (
        TenantSpec("dept"),
        TenantSpec("team-a", "dept"),
        TenantSpec("team-b", "dept"),
        TenantSpec("team-c"),
    )
    w = World(
        a100s(3),
        tenants=tenants,
        quotas=(
            quota("team-a", 2000),
            quota("team-b", 2000),
            quota("team-c", 4000),
            quota("dept", 0, borrowing_limit=1000),
        ),
    )
    w.run("a0", "team-a", pods=2)
    w.run("b0", "team-b", pods=2)
    w.submit("a1", "team-a", pods=2)
    result = run_cycle(w.snapshot(), w.placer)
    assert verdicts(result)["a1"][:2] == (
        PendingCode.WAITING_FOR_QUOTA,
        "tenant team-a, group a100-shared, flavor a100, devices: needs 2000, free 0, "
        "borrowable 1000 (bounded by borrowing limit of tenant dept)",
    )


def test_aggregate_cap_over_a_department_limits_its_teams_together():
    tenants = (TenantSpec("dept"), TenantSpec("team-a", "dept"), TenantSpec("team-b", "dept"))
    w = World(
        a100s(3),
        tenants=tenants,
        quotas=(quota("team-a", 4000), quota("team-b", 4000)),
        caps=(AggregateCapSpec("dept-total", "dept", DEV, 3000),),
    )
    w.run("a0", "team-a", pods=2)
    w.submit("b1", "team-b", pods=2)
    w.submit("b2", "team-b", pods=1, created=30)
    result = run_cycle(w.snapshot(), w.placer)
    assert ids(result) == ["b2"]
    assert verdicts(result)["b1"][:2] == (
        PendingCode.WAITING_FOR_QUOTA,
        "tenant dept, cap dept-total, devices: needs 2000, used 2000, cap 3000",
    )


def test_model_family_cap_counts_only_its_flavors():
    w = World(
        a100s(2),
        quotas=(quota("team-a", 8000), quota("team-a", 8000, flavor="t4")),
        caps=(AggregateCapSpec("a100-family", "team-a", DEV, 1000, flavors=("a100",)),),
    )
    w.submit("a1", "team-a", pods=2)
    result = run_cycle(w.snapshot(), w.placer)
    assert verdicts(result)["a1"][:2] == (
        PendingCode.EXCEEDS_MAX_QUOTA,
        "tenant team-a, cap a100-family, devices: needs 2000, used 0, cap 1000",
    )


def test_non_preemptible_job_may_not_borrow():
    w = World(a100s(3), quotas=(quota("team-a", 2000), quota("team-b", 4000)))
    w.run("a0", "team-a")
    w.submit("a1", "team-a", pods=2, preemptible=False)
    w.submit("a2", "team-a", pods=1, preemptible=False, created=30)
    result = run_cycle(w.snapshot(), w.placer, NO_FAIR)
    assert ids(result) == ["a2"]
    assert verdicts(result)["a1"][1] == (
        "tenant team-a, group a100-shared, flavor a100, devices: needs 2000, free 1000, "
        "borrowable 0 (non-preemptible jobs may not borrow)"
    )


# -- quota shrink and deletion keep usage counted (issue 16, S13) -------------------------------


def s13_world(quotas):
    w = World(a100s(4), quotas=quotas)
    for i in range(4):
        w.run(f"a-{i}", "team-a", pods=2, started=4000 - i)
    w.run("b-0", "team-b", pods=4)
    w.submit("b-new", "team-b", pods=4)
    w.submit("a-new", "team-a", pods=1)
    return w


def test_s13_shrinking_a_quota_evicts_nothing_but_makes_the_excess_reclaimable():
    w = s13_world((quota("team-a", 4000), quota("team-b", 8000)))
    result = run_cycle(w.snapshot(), w.placer, NO_FAIR)
    # B may reclaim its nominal quota from A, now above its own; A cannot admit more
    assert [(p.victim_id, p.preemptor_id) for p in result.preempted] == [
        ("a-3", "b-new"),
        ("a-2", "b-new"),
    ]
    assert verdicts(result)["a-new"][:2] == (
        PendingCode.WAITING_FOR_QUOTA,
        "tenant team-a, group a100-shared, flavor a100, devices: needs 1000, free 0, "
        "borrowable 0 (bounded by cohort a100-shared)",
    )


def test_s13_a_deleted_row_still_counts_the_tenants_running_usage():
    # team-a has no a100 row any more: its 8 GPUs count against a nominal of 0
    w = s13_world((quota("team-b", 8000),))
    tree = QuotaTree(w.group, w.tenants, w.quotas)
    for workload in w.running:
        tree.add(workload.tenant, workload.charges)
    assert (tree.usage("team-a", ("a100", DEV)), tree.nominal("team-a", ("a100", DEV))) == (8000, 0)
    assert tree.available("team-b", ("a100", DEV)) == (-4000, "cohort a100-shared")
    result = run_cycle(w.snapshot(), w.placer, NO_FAIR)
    # the cohort's only quota is team-b's 8: all of team-a's usage is reclaimable
    assert [(p.victim_id, p.preemptor_id) for p in result.preempted] == [
        ("a-3", "b-new"),
        ("a-2", "b-new"),
        ("a-1", "b-new"),
        ("a-0", "b-new"),
    ]
    assert verdicts(result)["a-new"][:2] == (
        PendingCode.EXCEEDS_MAX_QUOTA,
        "tenant team-a, group a100-shared, flavor a100: no quota for this flavor",
    )


# -- child quotas are carved out of the parent's (S15) -------------------------------------------

DEPT = (
    TenantSpec("dept"),
    TenantSpec("team-x", "dept"),
    TenantSpec("team-y", "dept"),
    TenantSpec("other"),
)


def test_s15_a_parent_row_is_the_quota_of_its_whole_subtree():
    tree = QuotaTree(
        group(), DEPT, (quota("dept", 8000), quota("team-x", 5000), quota("other", 8000))
    )
    fr = ("a100", DEV)
    assert (tree.nominal("dept", fr), tree.node("dept").nominal[fr]) == (8000, 3000)
    assert tree.root.subtree[fr] == 16000
    # team-y has no row: it draws on dept's own 3000
    assert tree.potential("team-y", fr) == (16000, "cohort a100-shared")
    tree.add("team-x", {fr: 5000})
    tree.add("team-y", {fr: 3000})
    assert tree.usage("dept", fr) == 8000
    assert tree.available("other", fr)[0] == 8000


def test_s15_children_over_their_parent_are_reported():
    rows = (quota("dept", 8000), quota("team-x", 5000), quota("team-y", 4000))
    assert [e.message for e in children_over_parent(DEPT, rows)] == [
        "children's nominal 9000 exceeds dept's 8000 (flavor a100, devices)"
    ]
    assert children_over_parent(DEPT, rows[1:]) == []
    assert [
        e.message for e in children_over_parent(DEPT, rows[1:], missing_parent_row_is_zero=True)
    ] == ["children's nominal 9000 exceeds dept's none (flavor a100, devices)"]


def test_booking_the_sum_per_tenant_equals_booking_each_workload():
    """The cycle books running usage once per tenant (``cycle._usage_by_tenant``): the tree
    must end exactly as with one booking per workload, lending limits and nesting included."""
    import random

    from scheduling.admission.cycle import _usage_by_tenant
    from scheduling.admission.types import Dimension, RunningWorkload
    from tests.admission.admission_builders import ago

    rows = (
        quota("dept", 8000, lending_limit=2000),
        quota("team-x", 5000, lending_limit=1000),
        quota("team-y", 1000, lending_limit=0),
        quota("other", 8000, lending_limit=3000, borrowing_limit=4000),
        quota("other", 80_000, dim=Dimension.MEMORY_MIB, lending_limit=10_000),
    )
    rng = random.Random(7)
    tenants = ["dept", "team-x", "team-y", "other"]
    running = [
        RunningWorkload(
            id=f"w{i}",
            tenant=rng.choice(tenants),
            priority=0,
            charges={
                ("a100", DEV): rng.choice((0, 100, 250, 1000, 3000)),
                ("a100", Dimension.MEMORY_MIB): rng.choice((0, 4096, 40960)),
            },
            started_at=ago(60),
            created_at=ago(120),
        )
        for i in range(60)
    ]
    one_by_one = QuotaTree(group(), DEPT, rows)
    for w in running:
        one_by_one.add(w.tenant, w.charges)
    summed = QuotaTree(group(), DEPT, rows)
    for tenant, charges in _usage_by_tenant(running).items():
        summed.add(tenant, charges)
    nodes = [*tenants, None]
    for name in nodes:
        a = one_by_one.root if name is None else one_by_one.node(name)
        b = summed.root if name is None else summed.node(name)
        assert (a.usage, a.own) == (b.usage, b.own), name
    assert any(one_by_one.root.usage.values())  # the workloads did reach the cohort
