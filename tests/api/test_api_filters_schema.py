"""Filters by name or id, case-insensitive vendors with the valid values in the error, the
queue by name at submission, and an OpenAPI schema generated without warnings."""

import io

import pytest
from django.core.management import call_command

from tests.api.test_api_directory import as_user

pytestmark = pytest.mark.django_db


def test_job_filters_take_names_and_ids(api, world):
    client = as_user(api, world["root"])
    queue = world["queue_a"]

    def names(query):
        response = client.get(f"/api/jobs/?{query}")
        assert response.status_code == 200, response.content
        return sorted(j["name"] for j in response.json()["results"])

    team_a = ["a-train", "a-wait"]
    assert names(f"queue={queue.pk}") == team_a
    assert names(f"queue=team-a/{queue.name}") == team_a
    assert names(f"queue=TEAM-A/{queue.name.upper()}") == team_a
    assert names("queue=team-b/" + world["queue_b"].name) == ["b-secret"]
    assert names("queue=no/such/queue") == []
    assert names("tenant=team-a") == team_a
    assert names(f"tenant={world['team_b'].pk}") == ["b-secret"]
    # digits that are not ASCII are a name, an id beyond bigint matches nothing (never a 500)
    assert names("tenant=%C2%B9") == [] and names("queue=99999999999999999999") == []


def test_member_filter_by_other_tenant_name_finds_nothing(api, world):
    client = as_user(api, world["alice"])
    response = client.get("/api/jobs/?tenant=team-b")
    assert response.status_code == 200 and response.json()["results"] == []


def test_vendor_filter_ignores_case_and_lists_valid_values(api, world):
    client = as_user(api, world["alice"])
    upper = client.get("/api/devices/?vendor=NVIDIA").json()["results"]
    lower = client.get("/api/devices/?vendor=nvidia").json()["results"]
    assert len(upper) == 4 and [d["uuid"] for d in lower] == [d["uuid"] for d in upper]
    bad = client.get("/api/devices/?vendor=nvidea")
    assert bad.status_code == 400
    text = bad.content.decode()
    assert "nvidea" in text and "NVIDIA" in text and "Ascend" in text and "MLU" in text


def test_submit_vendor_any_case_and_queue_by_name(api, world):
    client = as_user(api, world["alice"])
    body = {
        "queue": f"team-a/{world['queue_a'].name}",
        "name": "lower-vendor",
        "containers": [{"vendor": "nvidia", "device_count": 1, "device_memory_mib": 1024}],
    }
    response = client.post("/api/jobs/", body, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["containers"][0]["vendor"] == "NVIDIA"
    assert response.json()["queue"] == world["queue_a"].name
    body.update(name="bad-vendor", containers=[{"vendor": "nvidea", "device_count": 1}])
    bad = client.post("/api/jobs/", body, format="json")
    assert bad.status_code == 400
    fields = bad.json()["error"]["fields"]
    assert set(fields) == {"containers[0].vendor"}
    assert "NVIDIA" in str(fields) and "Ascend" in str(fields)
    other = client.post(
        "/api/jobs/",
        {**body, "queue": f"team-b/{world['queue_b'].name}", "containers": [{"device_count": 1}]},
        format="json",
    )
    assert other.status_code == 400 and set(other.json()["error"]["fields"]) == {"queue"}


def test_telemetry_tenant_filter_takes_a_name(api, world):
    client = as_user(api, world["alice"])
    assert client.get("/api/telemetry/efficiency/?tenant=team-a").status_code == 200
    assert client.get(f"/api/telemetry/efficiency/?tenant={world['team_a'].pk}").status_code == 200
    hidden = client.get("/api/telemetry/efficiency/?tenant=team-b")
    assert hidden.status_code == 404
    assert client.get("/api/telemetry/idle-jobs/?tenant=nosuch").status_code == 404


def test_schema_generation_emits_no_warning():
    out, err = io.StringIO(), io.StringIO()
    call_command("spectacular", "--fail-on-warn", "--validate", stdout=out, stderr=err)
    assert err.getvalue() == ""
    schema = out.getvalue()
    for path in (
        "/api/telemetry/efficiency/",
        "/api/telemetry/idle-jobs/",
        "/api/telemetry/cost/",
        "/api/telemetry/alerts/",
        "/api/telemetry/devices/{serial}/utilisation/",
    ):
        assert f"{path}:" in schema
    assert "TenantEfficiency" in schema and "CapacityAlert" in schema
