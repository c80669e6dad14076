"""FGD fragmentation selector and ``GET /api/fragmentation/``: values worked out by hand on a
small inventory, the response shape, who sees what, filters and 400s.

Inventory:

* cluster ``c1``: ``c1-n0``, ``c1-n1``, two A100-80GB each (81920 MiB); cluster ``c2``:
  ``c2-n0``, two T4 (15360 MiB). Every node 64000 milli CPU.
* groups: ``g1`` (A100), ``g2`` (T4), ``g3`` (node selector pool=c1, any model).
* tenants: ``team-a`` (quota in g1; alice), ``team-b`` (quota in g2; bob), ``team-c`` (quota
  in g1 and g2, no jobs; carol), ``root`` platform admin.
* bookings (free milli = 10 x min(free cores %, free memory %)): c1-n0 GPU0 60 % -> 400
  free, GPU1 free (1000); c1-n1 GPU0 80 % -> 200, GPU1 100 % -> 0; c2-n0 GPU0 50 % -> 500,
  GPU1 free (1000).
* recent jobs (all 1000 milli CPU): g1: ``j-40`` 1 GPU 40 % memory / 30 % cores -> 400 milli;
  ``j-whole`` 1 whole GPU -> 1000; ``j-20g`` 2 pods x 1 GPU of 20480 MiB (25 % of 81920) ->
  250, two tasks. g2: ``k-pair`` 2 whole T4 -> (1000 milli x 2).
"""

import pytest
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token

from scheduling.models import Device, Placement, PlacementDevice
from scheduling.placement.fragmentation import TaskClass
from scheduling.selectors.fragmentation import (
    cluster_fragmentation,
    group_fragmentation,
    groups_for_tenants,
    target_workload,
)
from telemetry.models import GroupGauge
from telemetry.services.gauges import compute_group_gauges
from tenants.models import Quota
from tests.builders import A100, gpu_job, make_cluster, make_group, make_tenant, make_user

pytestmark = pytest.mark.django_db

T4 = "Tesla-T4"


def _book(job, pod_index, uuid, percent):
    device = Device.objects.get(uuid=uuid)
    placement = Placement.objects.create(
        job=job, pod_index=pod_index, node=device.node, state="running", cpu_milli=1000
    )
    PlacementDevice.objects.create(
        placement=placement,
        device=device,
        memory_mib=device.memory_mib * percent // 100,
        cores_percent=percent,
    )


@pytest.fixture
def inv():
    c1 = make_cluster("c1", nodes=2, gpus=2)
    c2 = make_cluster("c2", nodes=1, gpus=2, model=T4, memory_mib=15360)
    g1, g2 = make_group("g1"), make_group("g2", models=(T4,))
    g3 = make_group("g3", models=(), selector={"pool": "c1"})
    team_a, qa = make_tenant("team-a", g1, devices_milli=4000)
    team_b, qb = make_tenant("team-b", g2, devices_milli=2000)
    team_c, _ = make_tenant("team-c", g1, devices_milli=1000)
    Quota.objects.create(
        tenant=team_c, resource_group=g2, flavor="*", dimension="devices", nominal=1000
    )  # a quota in g2 without a queue there
    gpu_job(qa, "j-40", count=1, memory_percent=40, cores=30)
    whole = gpu_job(qa, "j-whole", count=1)
    gpu_job(qa, "j-20g", count=1, memory_mib=20480, pods=2)
    pair = gpu_job(qb, "k-pair", count=2)
    _book(whole, 0, "GPU-c1-0-0", 60)
    _book(whole, 1, "GPU-c1-1-0", 80)
    _book(whole, 2, "GPU-c1-1-1", 100)
    _book(pair, 0, "GPU-c2-0-0", 50)
    return {
        "c1": c1,
        "c2": c2,
        "g1": g1,
        "g2": g2,
        "g3": g3,
        "team_c": team_c,
        "alice": make_user("alice", team_a),
        "bob": make_user("bob", team_b),
        "carol": make_user("carol", team_c),
        "root": get_user_model().objects.create_superuser("root", "r@example.org", "pw-root"),
    }


def _totals(t):
    return (
        t.nodes,
        t.capacity_milli,
        t.idle_milli,
        pytest.approx(t.fragment_milli),
        t.stranded_milli,
        t.stranded_devices,
    )


# --- selector -----------------------------------------------------------------------------


def test_target_workload_of_a_group(inv):
    wl = target_workload(inv["g1"])
    # 4 tasks: 250 x2, then the count-1 classes larger first (1000, then 400).
    assert wl.classes == (
        TaskClass(1000, 250, 1, (A100,)),
        TaskClass(1000, 1000, 1, (A100,)),
        TaskClass(1000, 400, 1, (A100,)),
    )
    assert wl.weights == (0.5, 0.25, 0.25)
    assert target_workload(inv["g2"]).classes == (TaskClass(1000, 1000, 2, (T4,)),)
    # g3 has no job: one whole GPU.
    assert target_workload(inv["g3"]).classes == (TaskClass(0, 1000, 1),)


def test_device_types_match_as_the_placement_core_does(inv):
    _, queue = make_tenant("team-d", inv["g3"])
    # "a100-sxm4-80gb" names the A100 (case and the NVIDIA- prefix ignored); g3 names no
    # model, so an untyped request may use every present NVIDIA model.
    gpu_job(queue, "typed", count=1, cores=50, types=["a100-sxm4-80gb"])
    gpu_job(queue, "untyped", count=1, cores=50)
    # an explicit type no device has is left out of M
    gpu_job(queue, "absent", count=1, cores=50, types=["H100"])
    wl = target_workload(inv["g3"])
    assert sorted(wl.classes) == [
        TaskClass(1000, 1000, 1, (A100,)),
        TaskClass(1000, 1000, 1, tuple(sorted((A100, T4)))),
    ]


def test_group_g1_by_hand(inv):
    rep = group_fragmentation(inv["g1"])
    # M = 250 (0.5), 1000 (0.25), 400 (0.25).
    # c1-n0 (400, 1000): only the whole-GPU class leaves the 400 out: 0.25 x 400 = 100.
    # c1-n1 (200, 0): no class fits the 200: F = 200, and it is stranded (too small).
    assert _totals(rep.totals) == (2, 4000, 1600, 300.0, 200, 1)
    assert rep.totals.rate_percent == pytest.approx(18.75)
    assert rep.totals.fragment_of_capacity_percent == pytest.approx(7.5)
    assert (rep.workload.jobs, rep.workload.tasks, rep.workload.classes) == (3, 4, 3)
    n1, n0 = rep.nodes  # most fragment first
    assert (n1.node, n1.cluster, n1.idle_milli, n1.fragment_milli) == ("c1-n1", "c1", 200, 200.0)
    assert [(d.uuid, d.free_milli, d.code) for d in n1.stranded] == [
        ("GPU-c1-1-0", 200, "too_small")
    ]
    assert "smallest per-GPU request (250 milli)" in n1.stranded[0].reason
    assert (n0.node, n0.rate_percent, n0.stranded) == ("c1-n0", pytest.approx(100 / 14), ())
    assert n0.resource_groups == ("g1",)
    (row,) = rep.groups
    assert row.name == "g1" and row.totals == rep.totals


def test_group_figures_match_the_telemetry_gauge(inv):
    compute_group_gauges()
    gauge = GroupGauge.objects.get(resource_group=inv["g1"])
    assert gauge.fragmentation_rate == pytest.approx(0.1875)
    assert gauge.fragment_milli == pytest.approx(300.0)


def test_whole_inventory_by_hand(inv):
    rep = cluster_fragmentation()
    # Each node against the tasks that could run on it when empty (node_demand):
    # c1-n0 and c1-n1 (A100): 250 (p 0.5), 1000 and 400 (0.25 each); the T4 pair only on c2.
    # c1-n0 (400, 1000): only the 1000 class leaves the 400 -> 0.25 x 400 = 100.
    # c1-n1 (200, 0): no class fits the 200 -> 200. c2-n0 T4 (500, 1000): the pair finds one
    # whole GPU of two -> 1500.
    assert _totals(rep.totals) == (3, 6000, 3100, 1800.0, 1700, 3)
    assert rep.totals.rate_percent == pytest.approx(100 * 1800 / 3100)
    assert (rep.workload.jobs, rep.workload.tasks, rep.workload.classes) == (4, 5, 4)
    assert [(n.node, round(n.fragment_milli, 6)) for n in rep.nodes] == [
        ("c2-n0", 1500.0),
        ("c1-n1", 200.0),
        ("c1-n0", 100.0),
    ]
    c2n0 = rep.nodes[0]
    assert [(d.index, d.free_milli, d.code, d.reason) for d in c2n0.stranded] == [
        (
            0,
            500,
            "too_small",
            "500 milli free is below the smallest per-GPU request (1000 "
            "milli) of the classes that can run here",
        ),
        (
            1,
            1000,
            "too_few_gpus",
            "the classes this GPU fits need 2 GPUs with >= 1000 milli free; the node has 1",
        ),
    ]
    assert c2n0.stranded_gpus == pytest.approx(1.5)
    assert rep.nodes[1].resource_groups == ("g1", "g3")
    assert [
        (g.name, g.totals.idle_milli, round(g.totals.fragment_milli, 6), g.totals.stranded_milli)
        for g in rep.groups
    ] == [
        ("g1", 1600, 300.0, 200),
        ("g2", 1500, 1500.0, 1500),
        # g3: c1's four GPUs, M = one whole GPU: the 400 and the 200 are fragment and stranded
        ("g3", 1600, 600.0, 600),
    ]
    assert rep.groups[2].workload.default is True


def test_union_of_groups_counts_each_device_once(inv):
    # team-c's groups g1 + g2 cover every device; M = their tasks = every task: the same
    # figures as the whole inventory.
    groups = groups_for_tenants({inv["team_c"].pk})
    assert [g.name for g in groups] == ["g1", "g2"]
    rep = cluster_fragmentation(groups)
    assert _totals(rep.totals) == (3, 6000, 3100, 1800.0, 1700, 3)
    assert [g.name for g in rep.groups] == ["g1", "g2"]


def test_cluster_filter(inv):
    rep = cluster_fragmentation(cluster_id=inv["c2"].pk)
    assert _totals(rep.totals) == (1, 2000, 1500, 1500.0, 1500, 2)
    assert [n.node for n in rep.nodes] == ["c2-n0"]
    assert [(g.name, g.totals.nodes, g.totals.idle_milli) for g in rep.groups] == [
        ("g1", 0, 0),
        ("g2", 1, 1500),
        ("g3", 0, 0),
    ]
    assert group_fragmentation(inv["g1"], inv["c2"].pk).totals.nodes == 0


def test_query_count_does_not_grow_with_nodes_or_groups(inv, django_assert_num_queries):
    # snapshot 4 + node names 1 + groups 1 + jobs 1 + containers 1
    with django_assert_num_queries(8):
        cluster_fragmentation()
    make_cluster("c3", nodes=5, gpus=4)
    for i in range(4):
        _, queue = make_tenant(f"more-{i}", make_group(f"more-{i}", selector={"pool": "c3"}))
        gpu_job(queue, "x", count=1, cores=20)
    with django_assert_num_queries(8):
        rep = cluster_fragmentation()
    assert len(rep.nodes) == 8 and len(rep.groups) == 7
    with django_assert_num_queries(7):  # groups given
        cluster_fragmentation([inv["g1"], inv["g2"]])


# --- API --------------------------------------------------------------------------------------


def _get(api, user, query=""):
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return api.get(f"/api/fragmentation/{query}")


def test_anonymous_is_401(api, inv):
    response = api.get("/api/fragmentation/")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "not_authenticated"


def test_platform_admin_sees_everything(api, inv):
    response = _get(api, inv["root"])
    assert response.status_code == 200
    body = response.json()
    assert body["scope"] == {"resource_group": None, "cluster": None}
    assert body["node_detail"] is True
    assert body["totals"] == {
        "nodes": 3,
        "capacity_milli": 6000,
        "idle_milli": 3100,
        "fragment_milli": pytest.approx(1800.0),
        "rate_percent": pytest.approx(100 * 1800 / 3100),
        "fragment_of_capacity_percent": pytest.approx(100 * 1800 / 6000),
        "stranded_milli": 1700,
        "stranded_gpus": 1.7,
        "stranded_devices": 3,
    }
    assert body["workload"] == {
        "jobs": 4,
        "tasks": 5,
        "classes": 4,
        "coverage": 1.0,
        "default": False,
    }
    assert [g["name"] for g in body["groups"]] == ["g1", "g2", "g3"]
    assert body["groups"][0]["id"] == inv["g1"].pk
    assert body["groups"][0]["kind"] == "shared"
    first = body["nodes"][0]
    assert {k: v for k, v in first.items() if k != "stranded_devices"} == {
        "id": first["id"],
        "name": "c2-n0",
        "cluster_id": inv["c2"].pk,
        "cluster": "c2",
        "resource_groups": ["g2"],
        "capacity_milli": 2000,
        "idle_milli": 1500,
        "fragment_milli": pytest.approx(1500.0),
        "rate_percent": pytest.approx(100.0),
        "stranded_milli": 1500,
        "stranded_gpus": 1.5,
    }
    assert first["stranded_devices"][1] == {
        "uuid": "GPU-c2-0-1",
        "index": 1,
        "model": T4,
        "free_milli": 1000,
        "code": "too_few_gpus",
        "reason": "the classes this GPU fits need 2 GPUs with >= 1000 milli free; the node has 1",
    }


def test_member_sees_own_groups_totals_only(api, inv):
    body = _get(api, inv["alice"]).json()
    assert body["node_detail"] is False and body["nodes"] == []
    assert [g["name"] for g in body["groups"]] == ["g1"]
    assert body["totals"]["idle_milli"] == 1600
    assert body["totals"]["rate_percent"] == pytest.approx(18.75)
    assert "c2" not in str(body) and "GPU-" not in str(body)
    # bob (team-b) sees g2 only; g1 is as unknown to him as a missing id
    api.credentials()
    body = _get(api, inv["bob"]).json()
    assert [g["name"] for g in body["groups"]] == ["g2"]
    assert body["totals"]["rate_percent"] == pytest.approx(100.0)
    for query in (f"?resource_group={inv['g1'].pk}", "?resource_group=999999"):
        response = api.get(f"/api/fragmentation/{query}")
        assert response.status_code == 400
        assert response.json()["error"]["fields"] == {"resource_group": ["No such resource group."]}


def test_tenant_admin_also_sees_the_groups_of_tenants_below(api, inv):
    from tenants.models import Tenant

    team_a = Tenant.objects.get(name="team-a")
    sub = Tenant.objects.create(name="team-a-sub", parent=team_a)
    Quota.objects.create(
        tenant=sub, resource_group=inv["g2"], flavor="*", dimension="devices", nominal=1000
    )
    body = _get(api, make_user("ada", team_a, "tenant_admin")).json()
    assert [g["name"] for g in body["groups"]] == ["g1", "g2"] and body["nodes"] == []
    assert body["totals"]["idle_milli"] == 3100
    api.credentials()
    assert [g["name"] for g in _get(api, inv["alice"]).json()["groups"]] == ["g1"]


def test_query_count_of_the_endpoint(api, inv, django_assert_num_queries):
    api.force_authenticate(inv["root"])
    with django_assert_num_queries(8):  # the selector's eight
        assert api.get("/api/fragmentation/").status_code == 200
    with django_assert_num_queries(9):  # + the cluster check
        assert api.get(f"/api/fragmentation/?cluster={inv['c1'].pk}").status_code == 200
    with django_assert_num_queries(8):  # groups + the group's seven
        assert api.get(f"/api/fragmentation/?resource_group={inv['g1'].pk}").status_code == 200
    api.force_authenticate(inv["alice"])
    with django_assert_num_queries(9):  # visible tenants (1), groups (1), seven
        assert api.get("/api/fragmentation/").status_code == 200


def test_user_without_tenant_sees_an_empty_scope(api, inv):
    body = _get(api, make_user("nobody")).json()
    assert body["groups"] == [] and body["nodes"] == []
    assert body["totals"]["nodes"] == 0 and body["totals"]["rate_percent"] == 0.0


def test_filters(api, inv):
    body = _get(api, inv["root"], f"?resource_group={inv['g2'].pk}").json()
    assert body["scope"] == {"resource_group": inv["g2"].pk, "cluster": None}
    assert [n["name"] for n in body["nodes"]] == ["c2-n0"]
    assert body["totals"]["fragment_milli"] == pytest.approx(1500.0)
    body = api.get(f"/api/fragmentation/?cluster={inv['c1'].pk}").json()
    assert [n["name"] for n in body["nodes"]] == ["c1-n1", "c1-n0"]  # 200, then 100
    assert body["totals"]["idle_milli"] == 1600
    # a member may narrow to one of their groups
    api.credentials()
    body = _get(api, inv["carol"], f"?resource_group={inv['g2'].pk}").json()
    assert [g["name"] for g in body["groups"]] == ["g2"] and body["nodes"] == []


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("?resource_group=abc", "resource_group"),
        ("?resource_group=0", "resource_group"),
        ("?resource_group=99999999999999999999999", "resource_group"),
        ("?cluster=-1", "cluster"),
        ("?cluster=x%00", "cluster"),
        ("?cluster=424242", "cluster"),
    ],
)
def test_bad_filters_are_400(api, inv, query, field):
    response = _get(api, inv["root"], query)
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "invalid" and list(error["fields"]) == [field]


def test_in_the_openapi_schema(api, inv):
    api.force_authenticate(inv["root"])
    schema = api.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    op = schema["paths"]["/api/fragmentation/"]["get"]
    assert {p["name"] for p in op["parameters"]} == {"resource_group", "cluster"}
    ref = op["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    component = schema["components"]["schemas"][ref.rsplit("/", 1)[1]]
    assert set(component["properties"]) == {
        "scope",
        "node_detail",
        "totals",
        "workload",
        "groups",
        "nodes",
    }


# --- attacks: odd requests, odd inventory, odd callers ------------------------------------


def _container(job, **fields):
    from scheduling.models import JobContainer

    return JobContainer.objects.create(job=job, name=f"c{JobContainer.objects.count()}", **fields)


def test_odd_container_requests_by_hand(inv):
    # g3 names no model: every present NVIDIA model (A100 81920 MiB, T4 15360 MiB) may serve.
    _, queue = make_tenant("team-odd", inv["g3"])
    j = gpu_job(queue, "odd", count=1, cores=30)  # cores only: memory = the whole card
    j.containers.all().delete()
    _container(j, device_count=1, cores_percent=30)  # -> 1000, both
    _container(j, device_count=1, device_memory_mib=20480)  # A100 only: 250
    _container(j, device_count=1, device_memory_mib=200000)  # fits no model: out
    _container(j, device_count=1, memory_percent=150, cores_percent=5)  # > 100 %: 1000
    _container(j, device_count=1, vendor="MLU")  # vendor absent: out
    _container(j, device_count=0, cores_percent=50)  # CPU-only: out
    _container(j, device_count=1, cores_percent=10, memory_percent=10, init=True)  # init: out
    wl = target_workload(inv["g3"])
    both = tuple(sorted((A100, T4)))
    assert sorted(zip(wl.classes, wl.weights, strict=True)) == [
        (TaskClass(1000, 250, 1, (A100,)), pytest.approx(1 / 3)),
        (TaskClass(1000, 1000, 1, both), pytest.approx(2 / 3)),
    ]


def test_a_model_registered_with_zero_memory_does_not_break_the_measure(api, inv):
    # the T4s report 0 MiB (a broken registration); a job in g2 asks 1024 MiB per GPU: no
    # present T4 can hold it, so it is left out instead of dividing by zero.
    Device.objects.filter(uuid__startswith="GPU-c2-").update(memory_mib=0)
    _, queue = make_tenant("team-zero", inv["g2"])
    gpu_job(queue, "by-mib", count=1, memory_mib=1024)
    assert target_workload(inv["g2"]).classes == (TaskClass(1000, 1000, 2, (T4,)),)
    assert _get(api, inv["root"]).status_code == 200


def test_each_pod_of_a_gang_is_a_task(inv):
    _, queue = make_tenant("team-gang", inv["g3"])
    gpu_job(queue, "gang", count=1, cores=50, memory_percent=50, pods=1024)
    gpu_job(queue, "one", count=1)
    rep = group_fragmentation(inv["g3"])
    # 1024 of 1025 tasks (99.9 % >= 95 % coverage): M keeps the gang's class alone
    assert (rep.workload.jobs, rep.workload.tasks, rep.workload.classes) == (2, 1025, 1)
    assert rep.workload.coverage == pytest.approx(1024 / 1025)
    assert target_workload(inv["g3"]).classes == (TaskClass(1000, 500, 1, (A100, T4)),)


def test_unhealthy_cordoned_removed_devices_error_nodes_and_gpu_less_nodes(inv):
    from django.utils import timezone

    from scheduling.models import Node

    # c1-n0: GPU0 (400 free) unhealthy, GPU1 (1000) cordoned -> no capacity, nothing idle.
    Device.objects.filter(uuid="GPU-c1-0-0").update(healthy=False)
    Device.objects.filter(uuid="GPU-c1-0-1").update(cordoned=True)
    # c1-n1 has an error: its devices stay capacity but nothing on it is idle.
    Node.objects.filter(name="c1-n1").update(error="kubelet unreachable")
    # c2-n0 loses GPU1 (removed): only GPU0 (500 free) is left.
    Device.objects.filter(uuid="GPU-c2-0-1").update(removed_at=timezone.now())
    # a CPU-only node and a removed node with a free GPU
    Node.objects.create(
        cluster=inv["c2"],
        name="c2-cpu",
        cpu_milli=64000,
        host_memory_mib=262144,
        labels={"pool": "c2"},
    )
    gone = Node.objects.create(
        cluster=inv["c2"],
        name="c2-gone",
        cpu_milli=64000,
        host_memory_mib=262144,
        labels={"pool": "c2"},
        removed_at=timezone.now(),
    )
    Device.objects.create(
        uuid="GPU-gone",
        node=gone,
        model=Device.objects.get(uuid="GPU-c2-0-0").model,
        index=0,
        memory_mib=15360,
    )
    rep = cluster_fragmentation()
    # capacity: c1-n1 2 devices (error nodes keep capacity) + c2-n0 GPU0 = 3000; idle: the
    # 500 of c2-n0 GPU0. No recent task could ever run on a one-T4 node (the T4 task is a
    # pair): no fragment, but the 500 are stranded by shape.
    assert _totals(rep.totals) == (3, 3000, 500, 0.0, 500, 1)
    assert [n.node for n in rep.nodes] == ["c1-n0", "c1-n1", "c2-n0"]
    assert [(d.uuid, d.code) for d in rep.nodes[2].stranded] == [("GPU-c2-0-0", "shape")]
    assert (rep.nodes[0].capacity_milli, rep.nodes[0].idle_milli) == (0, 0)
    assert (rep.nodes[1].capacity_milli, rep.nodes[1].idle_milli) == (2000, 0)
    assert "GPU-gone" not in str(rep) and "c2-cpu" not in str(rep)


def test_empty_inventory_and_group_without_nodes(api, db):
    root = get_user_model().objects.create_superuser("root", "r@example.org", "pw-root")
    body = _get(api, root).json()
    assert body["totals"] == {
        "nodes": 0,
        "capacity_milli": 0,
        "idle_milli": 0,
        "fragment_milli": 0.0,
        "rate_percent": 0.0,
        "fragment_of_capacity_percent": 0.0,
        "stranded_milli": 0,
        "stranded_gpus": 0.0,
        "stranded_devices": 0,
    }
    assert body["groups"] == [] and body["nodes"] == []
    assert body["workload"]["default"] is True
    empty = make_group("empty", selector={"pool": "nowhere"})
    body = api.get(f"/api/fragmentation/?resource_group={empty.pk}").json()
    assert [(g["name"], g["totals"]["nodes"]) for g in body["groups"]] == [("empty", 0)]
    assert body["totals"]["nodes"] == 0 and body["nodes"] == []


def test_deleted_group_and_cluster_ids_are_400(api, inv):
    from scheduling.models import Cluster

    g3, c = inv["g3"].pk, Cluster.objects.create(name="tmp", backend="simulated")
    inv["g3"].delete()
    cid = c.pk
    c.delete()
    api.force_authenticate(inv["root"])
    for query, field in (
        (f"?resource_group={g3}", "resource_group"),
        (f"?cluster={cid}", "cluster"),
    ):
        response = api.get(f"/api/fragmentation/{query}")
        assert response.status_code == 400
        assert list(response.json()["error"]["fields"]) == [field]


@pytest.mark.parametrize(
    "query",
    [
        "?resource_group={g2}&resource_group={g1}",
        "?resource_group={g1}&resource_group={g2}",
        "?cluster={c1}&cluster={c2}",
    ],
)
def test_repeated_filters_are_400(api, inv, query):
    query = query.format(g1=inv["g1"].pk, g2=inv["g2"].pk, c1=inv["c1"].pk, c2=inv["c2"].pk)
    response = _get(api, inv["carol"], query)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid"
    assert error["fields"] == {query[1 : query.index("=")]: ["Give this filter once."]}


@pytest.mark.parametrize(
    "query", ["?resource_group=-5", "?resource_group=1.5", "?cluster=1e3", "?cluster=%20x"]
)
def test_more_bad_values_are_400(api, inv, query):
    assert _get(api, inv["alice"], query).status_code == 400


def test_an_empty_filter_is_no_filter(api, inv):
    # "?resource_group=" (an empty form field) means no filter, as in the list filters
    body = _get(api, inv["alice"], "?resource_group=&cluster=").json()
    assert body["scope"] == {"resource_group": None, "cluster": None}
    assert [g["name"] for g in body["groups"]] == ["g1"]


def test_unknown_params_are_ignored_and_scope_does_not_widen(api, inv):
    body = _get(api, inv["alice"], "?all=1&node_detail=true&tenant=999").json()
    assert body["node_detail"] is False and body["nodes"] == []
    assert [g["name"] for g in body["groups"]] == ["g1"]


def test_other_tenants_group_with_a_cluster_filter_is_still_400(api, inv):
    response = _get(api, inv["alice"], f"?resource_group={inv['g2'].pk}&cluster={inv['c2'].pk}")
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {"resource_group": ["No such resource group."]}


def test_session_auth_and_staff_without_superuser(client, inv):
    staff = make_user("staff", is_staff=True)
    client.force_login(staff)
    body = client.get("/api/fragmentation/").json()
    assert body["node_detail"] is False and body["groups"] == [] and body["nodes"] == []
    client.force_login(inv["bob"])
    body = client.get("/api/fragmentation/").json()
    assert [g["name"] for g in body["groups"]] == ["g2"] and body["nodes"] == []
    assert "GPU-" not in str(body) and "c2-n0" not in str(body)


def test_viewer_role_sees_own_groups_only(api, inv):
    from tenants.models import Tenant

    viewer = make_user("vic", Tenant.objects.get(name="team-b"), "viewer")
    body = _get(api, viewer).json()
    assert [g["name"] for g in body["groups"]] == ["g2"] and body["nodes"] == []
