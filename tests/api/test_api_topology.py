"""Topology requests on job submission and ``GET /api/topologies/`` (issue 31)."""

import pytest

from scheduling.models import Job
from tests.api.test_api_directory import as_user
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
    ok = _submit(api, tw, {"required": "b.example/rack"})
    assert ok.status_code == 201, ok.content


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
