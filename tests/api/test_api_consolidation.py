"""Consolidation settings of a resource group and a job's opt-in through the API (platform
admins write the group's; 400 with field errors, nothing changed), and the budget used."""

from datetime import timedelta

import pytest
from django.utils import timezone

from scheduling.models import ConsolidationMove, Job
from tenants.models import ResourceGroup
from tests.api.test_api_directory import as_user

pytestmark = pytest.mark.django_db


def _job(queue, **extra):
    body = {
        "queue": queue.pk,
        "name": "eval",
        "containers": [{"device_count": 1, "memory_percent": 50, "cores_percent": 50}],
    }
    body.update(extra)
    return body


def test_admin_turns_consolidation_on_with_a_budget(api, world):
    client = as_user(api, world["root"])
    url = f"/api/resource-groups/{world['group'].pk}/"
    shown = client.get(url).json()
    assert (
        shown["consolidation_enabled"],
        shown["consolidation_max_moves_per_hour"],
        shown["consolidation_max_moves"],
        shown["consolidation_moves_last_hour"],
    ) == (False, 20, 2, 0)
    response = client.patch(
        url,
        {
            "consolidation_enabled": True,
            "consolidation_max_moves_per_hour": 5,
            "consolidation_max_moves": 3,
            "consolidation_moves_last_hour": 99,  # read-only: ignored
        },
        format="json",
    )
    assert response.status_code == 200, response.content
    group = ResourceGroup.objects.get(pk=world["group"].pk)
    assert (
        group.consolidation_enabled,
        group.consolidation_max_moves_per_hour,
        group.consolidation_max_moves,
    ) == (True, 5, 3)
    assert response.json()["consolidation_moves_last_hour"] == 0


def test_bad_consolidation_values_are_400_with_field_errors(api, world):
    client = as_user(api, world["root"])
    url = f"/api/resource-groups/{world['group'].pk}/"
    response = client.patch(
        url,
        {
            "consolidation_enabled": "sometimes",
            "consolidation_max_moves_per_hour": 0,
            "consolidation_max_moves": 9,
        },
        format="json",
    )
    assert response.status_code == 400
    assert set(response.json()["error"]["fields"]) == {
        "consolidation_enabled",
        "consolidation_max_moves_per_hour",
        "consolidation_max_moves",
    }
    group = ResourceGroup.objects.get(pk=world["group"].pk)
    assert (group.consolidation_enabled, group.consolidation_max_moves_per_hour) == (False, 20)


def test_member_cannot_change_consolidation(api, world):
    response = as_user(api, world["alice"]).patch(
        f"/api/resource-groups/{world['group'].pk}/", {"consolidation_enabled": True}, format="json"
    )
    assert response.status_code == 403
    assert not ResourceGroup.objects.get(pk=world["group"].pk).consolidation_enabled


def test_the_budget_used_counts_the_last_hour_only(api, world):
    client = as_user(api, world["alice"])
    job = client.post("/api/jobs/", _job(world["queue_a"]), format="json").json()
    now = timezone.now()
    for when in (now - timedelta(minutes=5), now - timedelta(minutes=50), now - timedelta(hours=2)):
        ConsolidationMove.objects.create(
            job_id=job["id"],
            resource_group=world["group"],
            job_tenant="a",
            for_tenant="a",
            source="n0 (g0)",
            target="n1 (g1)",
            time=when,
        )
    rows = {g["id"]: g for g in client.get("/api/resource-groups/").json()["results"]}
    assert rows[world["group"].pk]["consolidation_moves_last_hour"] == 2


def test_job_opt_in_is_stored_and_shown(api, world):
    client = as_user(api, world["alice"])
    response = client.post(
        "/api/jobs/", _job(world["queue_a"], allow_consolidation=True), format="json"
    )
    assert response.status_code == 201, response.content
    assert Job.objects.get(pk=response.json()["id"]).allow_consolidation is True
    assert client.get(f"/api/jobs/{response.json()['id']}/").json()["allow_consolidation"] is True
    default = client.post("/api/jobs/", _job(world["queue_a"]), format="json").json()
    assert default["allow_consolidation"] is False


def test_bad_opt_in_is_400(api, world):
    client = as_user(api, world["alice"])
    before = Job.objects.count()
    response = client.post(
        "/api/jobs/", _job(world["queue_a"], allow_consolidation="please"), format="json"
    )
    assert response.status_code == 400
    assert set(response.json()["error"]["fields"]) == {"allow_consolidation"}
    assert Job.objects.count() == before
