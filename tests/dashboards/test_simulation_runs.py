"""What-if simulation runs end to end on PostgreSQL: a run from a group's recent jobs and one
from an uploaded Alibaba pod list, each with two policies, replayed by the worker task; the
page's form errors, progress block, comparison and tenant masking."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from core.exceptions import DomainError
from scheduling.models import SimulationRun
from scheduling.services.whatif import create_run, parse_quotas, run_whatif

pytestmark = pytest.mark.django_db

# On c1's four A100 (two 2-GPU nodes): two 1-GPU LS pods from t=0 for 100 s, a BE pod at t=10
# needing 2 GPUs of one node for 50 s, a BE half-GPU pod at t=20 for 60 s. BestFit packs the LS
# pods on one node, so the 2-GPU pod starts at once and the half pod waits 40 s for it.
TRACE = (
    (
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
        "deletion_time,scheduled_time\n"
    )
    + """p0,1000,1024,1,1000,,LS,Running,0,100,0
p1,1000,1024,1,1000,,LS,Running,0,100,0
p2,1000,1024,2,1000,,BE,Running,10,60,10
p3,1000,1024,1,500,,BE,Running,20,80,20
"""
)


def test_parse_quotas():
    assert parse_quotas("team-a = 1.5\n# comment\n\nLS=2  # two GPUs") == {
        "team-a": 1500,
        "LS": 2000,
    }
    for bad in ("team-a", "team-a = x", "a = -1", "a = 1\na = 2"):
        with pytest.raises(DomainError):
            parse_quotas(bad)


def test_group_run_with_two_policies(world):
    run = create_run(user=world["root"], group=world["group"], policies=["BestFit", "FragGuard"])
    assert run.state == "queued" and run.source == "group"
    assert run_whatif(run.pk) == "done"
    run.refresh_from_db()
    assert run.progress_percent == 100
    assert run.result["workload"] == {
        "pods": 3,
        "tenants": ["team-a", "team-b"],
        "nodes": 2,
        "gpus": 4,
    }
    best, guard = run.result["policies"]
    assert (best["policy"], guard["policy"]) == ("BestFit", "FragGuard")
    for p in (best, guard):
        assert p["pods"] == 3 and p["capacity_gpus"] == 4.0
        assert set(p["tenants"]) == {"team-a", "team-b"}
        assert 0 < p["mean_allocation_pct"] <= 100 and 0 < p["fairness"] <= 1


def test_trace_run_quota_changes_waits(world):
    free = create_run(
        user=world["root"],
        group=world["group"],
        policies=["BestFit", "GpuPacking"],
        trace_name="t.csv",
        trace_text=TRACE,
    )
    capped = create_run(
        user=world["root"],
        group=world["group"],
        policies=["BestFit"],
        quotas_text="LS = 1",
        trace_name="t.csv",
        trace_text=TRACE,
    )
    for run in (free, capped):
        assert run_whatif(run.pk) == "done"
        run.refresh_from_db()
    assert free.result["workload"]["tenants"] == ["BE", "LS"]
    best, packing = free.result["policies"]
    assert (best["mean_wait_s"], best["never_ran"], best["span_s"]) == (10.0, 0, 120)
    assert best["tenants"]["BE"]["mean_wait_s"] == 20.0 and best["p95_wait_s"] == 40.0
    assert packing["policy"] == "GpuPacking" and packing["never_ran"] == 0
    (p,) = capped.result["policies"]
    # LS may run one GPU: p1 waits 100 s for p0; BE fits beside them at once
    assert p["tenants"]["LS"]["mean_wait_s"] == 50.0
    assert p["tenants"]["BE"]["mean_wait_s"] == 0.0
    assert p["span_s"] == 200


def test_group_quotas_as_a_start(world):
    run = create_run(
        user=world["root"],
        group=world["group"],
        policies=["BestFit"],
        use_group_quotas=True,
        quotas_text="team-b = 0.5",
    )
    assert run.quotas == {"team-a": 2000, "team-b": 500}
    with pytest.raises(DomainError, match="qos"):
        create_run(
            user=world["root"],
            group=world["group"],
            policies=["BestFit"],
            use_group_quotas=True,
            trace_text=TRACE,
        )


def test_bad_requests_are_refused(world):
    with pytest.raises(DomainError, match="policies"):
        create_run(user=world["root"], group=world["group"], policies=["Nope"])
    with pytest.raises(DomainError, match="trace"):
        create_run(
            user=world["root"],
            group=world["group"],
            policies=["BestFit"],
            trace_text="name,cpu_milli\nx,1\n",
        )
    assert SimulationRun.objects.count() == 0


def test_page_form_progress_and_results(client, world):
    client.force_login(world["alice"])  # a member: not for her
    assert client.get("/simulations/").status_code == 403
    client.force_login(world["ada"])  # tenant admin of team-a
    page = client.get("/simulations/")
    assert page.status_code == 200 and 'id="simulation-form"' in page.content.decode()
    bad = client.post("/simulations/", {"group": "g1", "policies": ["BestFit"], "quotas": "team-a"})
    assert (
        bad.status_code == 400 and "expected &#x27;tenant = devices&#x27;" in bad.content.decode()
    )
    response = client.post(
        "/simulations/",
        {
            "group": "g1",
            "policies": ["BestFit", "FragGuard"],
            "quotas": "team-a = 1",
            "trace": SimpleUploadedFile("t.csv", b"not,a\ntrace,1\n"),
        },
    )
    assert response.status_code == 400 and "trace" in response.content.decode()
    response = client.post(
        "/simulations/",
        {"group": "g1", "policies": ["BestFit", "FragGuard"], "quotas": "team-a = 1"},
    )
    run = SimulationRun.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/simulations/{run.pk}/"
    waiting = client.get(f"/simulations/{run.pk}/").content.decode()
    assert 'id="simulation-progress"' in waiting and 'data-live="2"' in waiting
    run_whatif(run.pk)
    text = client.get(f"/simulations/{run.pk}/").content.decode()
    assert 'id="simulation-results"' in text and "sim-allocation-data" in text
    assert "team-b" not in text and "other tenants" in text  # ada sees no other tenant's name
    client.force_login(world["bob"])
    assert client.get(f"/simulations/{run.pk}/").status_code == 404  # not her run
