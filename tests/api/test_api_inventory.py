"""Device models, clusters, placements, nodes, devices, queues: reads by role, writes by
platform admins, 400/401/403/404, no credentials in cluster output."""

import pytest

from core.models import AuditEntry
from scheduling.models import Cluster, DeviceModel, Node, Placement
from tests.api.test_api_directory import as_user

pytestmark = pytest.mark.django_db


def test_reads_need_authentication(api, world):
    for url in (
        "/api/device-models/",
        "/api/clusters/",
        "/api/placements/",
        "/api/nodes/",
        "/api/devices/",
        "/api/queues/",
    ):
        assert api.get(url).status_code == 401, url


def test_device_models_read_and_admin_write(api, world):
    member = as_user(api, world["alice"])
    body = member.get("/api/device-models/").json()
    assert [m["name"] for m in body["results"]] == ["NVIDIA-A100-SXM4-80GB"]
    assert body["results"][0]["config"]["memory_mib"] == 81920
    assert body["results"][0]["resolved"]["memory_mib"] == 81920
    payload = {
        "name": "MLU370-X8",
        "vendor": "MLU",
        "config": {"memory_mib": 49152, "split_count": 100, "resource_count": "cambricon.com/vmlu"},
    }
    assert member.post("/api/device-models/", payload, format="json").status_code == 403
    root = as_user(api, world["root"])
    created = root.post("/api/device-models/", payload, format="json")
    assert created.status_code == 201, created.content
    assert DeviceModel.objects.get(name="MLU370-X8").slicing_mode == "unit"
    assert created.json()["slicing_mode"] == "unit"
    bad = root.post(
        "/api/device-models/",
        {"name": "X", "vendor": "NVIDIA", "config": {"memory_mib": -1, "slicing": "magic"}},
        format="json",
    )
    assert bad.status_code == 400
    assert set(bad.json()["error"]["fields"]) == {"config.memory_mib", "config.slicing"}
    assert root.get("/api/device-models/999999/").status_code == 404
    in_use = DeviceModel.objects.get(name="NVIDIA-A100-SXM4-80GB")
    assert root.delete(f"/api/device-models/{in_use.pk}/").status_code == 409
    assert AuditEntry.objects.filter(action="device_model.create").count() == 1


def test_clusters_never_show_connection_settings(api, world):
    Cluster.objects.filter(name="c1").update(
        kubeconfig_path="/etc/secret/kubeconfig", kube_context="prod-admin"
    )
    body = as_user(api, world["alice"]).get("/api/clusters/").json()
    row = body["results"][0]
    assert (row["name"], row["node_count"], row["device_count"]) == ("c1", 2, 4)
    text = str(body)
    assert "kubeconfig" not in text and "prod-admin" not in text and "/etc/secret" not in text
    response = as_user(api, world["root"]).post("/api/clusters/", {"name": "x"}, format="json")
    assert response.status_code == 405


def test_placements_are_tenant_scoped(api, world):
    a_placement = Placement.objects.get(job=world["a_train"])
    b_placement = Placement.objects.get(job=world["b_secret"])
    body = as_user(api, world["alice"]).get("/api/placements/").json()
    assert [p["job_name"] for p in body["results"]] == ["a-train"]
    row = body["results"][0]
    assert row["devices"] == [
        {
            "uuid": row["devices"][0]["uuid"],
            "model": "NVIDIA-A100-SXM4-80GB",
            "memory_mib": 32768,
            "cores_percent": 30,
            "slots": 1,
        }
    ]
    assert row["state"] == "running"
    assert as_user(api, world["alice"]).get(f"/api/placements/{b_placement.pk}/").status_code == 404
    assert as_user(api, world["bob"]).get(f"/api/placements/{a_placement.pk}/").status_code == 404
    filtered = as_user(api, world["root"]).get("/api/placements/?tenant=team-b").json()
    assert [p["job_name"] for p in filtered["results"]] == ["b-secret"]
    bad = as_user(api, world["root"]).get("/api/placements/?state=bogus")
    assert bad.status_code == 400 and "state" in bad.json()["error"]["fields"]


def test_nodes_devices_queues(api, world):
    member = as_user(api, world["bob"])
    assert member.get("/api/nodes/").json()["count"] == 2
    devices = member.get("/api/devices/?node=c1-n0").json()
    assert sorted(d["uuid"] for d in devices["results"]) == ["GPU-c1-0-0", "GPU-c1-0-1"]
    assert member.get("/api/nodes/999999/").status_code == 404
    queues = member.get("/api/queues/").json()["results"]
    assert [(q["tenant"], q["name"]) for q in queues] == [("team-b", "default")]
    assert member.get(f"/api/queues/{world['queue_a'].pk}/").status_code == 404


def test_nul_characters_in_json_fields_are_field_errors(api, world):
    root = as_user(api, world["root"])
    response = root.post(
        "/api/device-models/",
        {"name": "X1", "vendor": "NVIDIA", "config": {"bad\u0000key": 1}},
        format="json",
    )
    assert response.status_code == 400
    assert set(response.json()["error"]["fields"]) == {"config"}
    response = root.post(
        "/api/device-models/",
        {"name": "X1", "vendor": "NVIDIA", "config": {"resource_count": "a\u0000b"}},
        format="json",
    )
    assert response.status_code == 400  # the request parser names the value's path
    assert set(response.json()["error"]["fields"]) == {"config.resource_count"}
    group = root.post(
        "/api/resource-groups/", {"name": "nul", "node_selector": {"a\u0000": "b"}}, format="json"
    )
    assert group.status_code == 400 and "node_selector" in group.json()["error"]["fields"]


def test_nodes_list_counts_each_node_s_devices(api, world):
    """``device_count`` per node (a scalar subquery per listed row): 2 GPUs on each node of
    the world's cluster, 0 on a node without devices."""
    c1 = Cluster.objects.get(name="c1")
    Node.objects.create(cluster=c1, name="cpu-only", cpu_milli=8000, host_memory_mib=16384)
    rows = as_user(api, world["alice"]).get("/api/nodes/?cluster=c1").json()["results"]
    assert {r["name"]: r["device_count"] for r in rows} == {"c1-n0": 2, "c1-n1": 2, "cpu-only": 0}
