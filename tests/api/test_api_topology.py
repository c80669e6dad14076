"""Topology requests on job submission and ``GET /api/topologies/`` (issue 31)."""

import pytest

from scheduling.models import Job, Node, Queue
from scheduling.services.cycle import run_admission_cycle
from tenants.models import ResourceGroup, Topology
from tests.api.test_api_directory import as_user
from tests.builders import gpu_job
from tests.topology_world import BLOCK, HOST, RACK, ZONE, topology_world

pytestmark = pytest.mark.django_db

LEVELS_TEXT = f"{ZONE}, {BLOCK}, {RACK}, {HOST}"


@pytest.fixture
def tw(db):
    return topology_world()


def _body(queue, topology, pods=4, **extra):
    return {
        "queue": queue.pk,
        "name": "gang",
        "pod_count": pods,
        "containers": [{"device_count": 1}],
        "topology": topology,
        **extra,
    }


def _submit(api, tw, topology, **extra):
    return as_user(api, tw["alice"]).post(
        "/api/jobs/", _body(tw["queue_a"], topology, **extra), format="json"
    )


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        ({"required": RACK}, ("required", RACK, 0, "")),
        ({"required": "rack"}, ("required", RACK, 0, "")),
        ({"preferred": "topology-block"}, ("preferred", BLOCK, 0, "")),
        ({"unconstrained": True}, ("unconstrained", "", 0, "")),
        (
            {"required": "block", "slice_size": 2, "slice_level": "hostname"},
            ("required", BLOCK, 2, HOST),
        ),
        ({"slice_size": 2, "slice_level": RACK}, ("", "", 2, RACK)),
    ],
)
def test_each_mode_is_stored_with_its_level_as_the_label_key(api, tw, given, stored):
    response = _submit(api, tw, given)
    assert response.status_code == 201, response.content
    job = Job.objects.get(pk=response.json()["id"])
    columns = (
        job.topology_mode,
        job.topology_level,
        job.topology_slice_size,
        job.topology_slice_level,
    )
    assert columns == stored
    assert response.json()["topology"] == {
        "mode": stored[0],
        "level": stored[1],
        "slice_size": stored[2],
        "slice_level": stored[3],
    }


def test_an_unknown_level_is_a_400_naming_the_topologys_levels(api, tw):
    response = _submit(api, tw, {"required": "row"})
    assert response.status_code == 400, response.content
    fields = response.json()["error"]["fields"]
    assert list(fields) == ["topology.required"]
    assert fields["topology.required"] == [
        f"'row' is not a level of topology dc: its levels are {LEVELS_TEXT}."
    ]
    slice_bad = _submit(api, tw, {"preferred": "rack", "slice_size": 2, "slice_level": "aisle"})
    assert slice_bad.status_code == 400
    assert (
        "its levels are " + LEVELS_TEXT
        in slice_bad.json()["error"]["fields"]["topology.slice_level"][0]
    )
    assert not Job.objects.filter(name="gang").exists()


def test_a_topology_request_on_a_group_without_topology_is_a_400(api, tw):
    response = as_user(api, tw["alice"]).post(
        "/api/jobs/", _body(tw["plain_queue"], {"required": "rack"}), format="json"
    )
    assert response.status_code == 400, response.content
    (message,) = response.json()["error"]["fields"]["topology.topology"]
    assert message.startswith("resource group plain has no topology")


def test_two_modes_a_wide_slice_and_unknown_keys_are_refused(api, tw):
    both = _submit(api, tw, {"required": "rack", "preferred": "block"})
    assert both.status_code == 400
    assert list(both.json()["error"]["fields"]) == ["topology.preferred"]
    wide = _submit(api, tw, {"required": "rack", "slice_size": 2, "slice_level": "zone"})
    assert wide.status_code == 400
    assert list(wide.json()["error"]["fields"]) == ["topology.slice_level"]
    big = _submit(api, tw, {"required": "rack", "slice_size": 8, "slice_level": "hostname"})
    assert big.json()["error"]["fields"]["topology.slice_size"] == [
        "A slice of 8 pods is more than the 4 asked."
    ]
    unknown = _submit(api, tw, {"required": "rack", "level": "x"})
    assert list(unknown.json()["error"]["fields"]) == ["topology.level"]
    assert not Job.objects.filter(name="gang").exists()


def test_an_ambiguous_short_name_is_refused(api, tw):
    tw["topology"].levels = ["a.example/rack", "b.example/rack", HOST]
    tw["topology"].save()
    response = _submit(api, tw, {"required": "rack"})
    assert response.status_code == 400
    (message,) = response.json()["error"]["fields"]["topology.required"]
    assert "names several levels of topology dc (a.example/rack, b.example/rack)" in message
    # the key itself passes the level check; no node carries that label, so no rack can
    # ever hold the gang: refused at submission by the placement core
    keyed = _submit(api, tw, {"required": "b.example/rack"})
    assert keyed.status_code == 400
    assert keyed.json()["error"]["message"] == (
        "never fits group tg even when empty: TopologyPlacementFailed: needs 4 pods in one "
        "rack; the best rack has 0 free"
    )


def test_batch_items_carry_their_topology(api, tw):
    body = {
        "jobs": [
            _body(tw["queue_a"], {"required": "rack"}, name="one"),
            _body(tw["queue_a"], {"required": "aisle"}, name="two"),
        ]
    }
    refused = as_user(api, tw["alice"]).post("/api/jobs/batch/", body, format="json")
    assert refused.status_code == 400
    assert list(refused.json()["error"]["fields"]) == ["jobs[1].topology.required"]
    body["jobs"][1]["topology"] = {"preferred": "block"}
    created = as_user(api, tw["alice"]).post("/api/jobs/batch/", body, format="json")
    assert created.status_code == 201, created.content
    modes = dict(Job.objects.values_list("name", "topology_mode"))
    assert modes == {"one": "required", "two": "preferred"}


def _topologies(api, user):
    response = as_user(api, user).get("/api/topologies/")
    assert response.status_code == 200, response.content
    return response.json()


def test_topologies_list_domains_with_free_and_used_devices(api, tw):

    job = gpu_job(tw["queue_a"], "whole-node", count=4)
    assert job.pk in run_admission_cycle(tw["group"].pk).admitted
    (item,) = _topologies(api, tw["alice"])
    assert (item["name"], item["levels"], item["resource_groups"]) == (
        "dc",
        [ZONE, BLOCK, RACK, HOST],
        ["tg"],
    )
    assert item["outside_nodes"] == 0
    rows = [(d["level"], "/".join(d["path"]), d["nodes"], d["devices"]) for d in item["domains"]]
    assert rows == [
        (ZONE, "zone-a", 4, 16),
        (BLOCK, "zone-a/block-0", 4, 16),
        (RACK, "zone-a/block-0/rack-0", 2, 8),
        (HOST, "zone-a/block-0/rack-0/tc-r0-n0", 1, 4),
        (HOST, "zone-a/block-0/rack-0/tc-r0-n1", 1, 4),
        (RACK, "zone-a/block-0/rack-1", 2, 8),
        (HOST, "zone-a/block-0/rack-1/tc-r1-n0", 1, 4),
        (HOST, "zone-a/block-0/rack-1/tc-r1-n1", 1, 4),
    ]
    zone = item["domains"][0]
    assert (zone["used_devices"], zone["free_devices"]) == (4, 12)
    node = job.placements.get().node.name
    (host,) = [d for d in item["domains"] if d["value"] == node]
    assert (host["used_devices"], host["free_devices"]) == (4, 0)
    assert "whole-node" not in str(item)  # jobs are not listed by the API


def test_topologies_are_tenant_isolated(api, tw):
    secret = Topology.objects.create(name="secret-dc", levels=[RACK, HOST])
    b_only = ResourceGroup.objects.create(name="b-only", device_models=[], topology=secret)
    Queue.objects.create(tenant=tw["team_b"], resource_group=b_only, name="b-only")
    assert [t["name"] for t in _topologies(api, tw["alice"])] == ["dc"]
    bob_sees = {t["name"]: t["resource_groups"] for t in _topologies(api, tw["bob"])}
    assert bob_sees == {"dc": ["tg"], "secret-dc": ["b-only"]}
    assert "secret-dc" not in as_user(api, tw["alice"]).get("/api/topologies/").content.decode()
    api.credentials()
    assert api.get("/api/topologies/").status_code == 401


def test_a_node_missing_a_level_label_is_outside_every_domain(api, tw):
    node = Node.objects.get(name="tc-r1-n1")
    node.labels = {k: v for k, v in node.labels.items() if k != RACK}
    node.save()
    (item,) = _topologies(api, tw["alice"])
    assert item["outside_nodes"] == 1
    assert item["domains"][0]["nodes"] == 3
    assert "tc-r1-n1" not in [d["value"] for d in item["domains"]]


def test_the_dry_run_takes_a_topology_request_and_answers_domains(api, tw):
    client = as_user(api, tw["alice"])
    fits = client.post(
        "/api/dry-run/", _body(tw["queue_a"], {"required": "rack"}, pods=2), format="json"
    )
    assert fits.status_code == 200, fits.content
    answer = fits.json()
    assert answer["admitted"] is True
    domains = [p["domains"] for p in answer["placement"]]
    assert [d[-1] for d in domains] == [p["node"] for p in answer["placement"]]
    assert len({d[2] for d in domains}) == 1  # one rack
    too_big = client.post(
        "/api/dry-run/", _body(tw["queue_a"], {"required": "rack"}, pods=12), format="json"
    )
    assert too_big.status_code == 200, too_big.content
    assert too_big.json()["admitted"] is False
    assert too_big.json()["pending"]["reason"] == (
        "unschedulable: TopologyPlacementFailed: needs 12 pods in one rack; "
        "the best rack has 8 free"
    )
    bad = client.post("/api/dry-run/", _body(tw["queue_a"], {"required": "row"}), format="json")
    assert bad.status_code == 400
    assert list(bad.json()["error"]["fields"]) == ["topology.required"]
    assert not Job.objects.exists()


def test_a_platform_admin_attaches_a_topology_to_a_group(api, tw, django_user_model):
    root = django_user_model.objects.create_superuser("root", "r@example.org", "pw")
    plain = ResourceGroup.objects.get(name="plain")
    client = as_user(api, root)
    url = f"/api/resource-groups/{plain.pk}/"
    assert client.get(url).json()["topology"] is None
    attached = client.patch(url, {"topology": "dc"}, format="json")
    assert attached.status_code == 200, attached.content
    assert attached.json()["topology"] == "dc"
    plain.refresh_from_db()
    assert plain.topology == tw["topology"]
    unknown = client.patch(url, {"topology": "nope"}, format="json")
    assert unknown.json()["error"]["fields"]["topology"] == ["No topology named nope."]
    member = as_user(api, tw["alice"]).patch(url, {"topology": None}, format="json")
    assert member.status_code == 403
    # the plain group's jobs may now ask a topology
    ok = as_user(api, tw["alice"]).post(
        "/api/jobs/", _body(tw["plain_queue"], {"preferred": "rack"}), format="json"
    )
    assert ok.status_code == 201, ok.content
