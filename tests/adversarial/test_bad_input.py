"""Bad input through the REST API: every malformed request is a 400 with field errors (or a
404 for an unknown object), never a 500, and it creates or changes nothing."""

import json

import pytest

from scheduling.models import Job, JobContainer
from tenants.models import Quota
from tests.adversarial.helpers import assert_field_error, client_for

pytestmark = pytest.mark.django_db


def _job(queue, **extra):
    body = {
        "queue": getattr(queue, "pk", queue),
        "name": "adv",
        "containers": [{"device_count": 1}],
    }
    body.update(extra)
    return body


def _container(queue, **container):
    return _job(queue, containers=[{"device_count": 1, **container}])


BIG = 10**30


@pytest.mark.parametrize("path", ["/api/jobs/", "/api/dry-run/"])
def test_job_submission_rejects_bad_input_field_by_field(world, path):
    alice = client_for(world["alice"])
    q = world["queue_a"]
    cases = [
        (_job(q, priority=BIG), {"priority"}),
        (_job(q, priority=-BIG), {"priority"}),
        (_job(q, pod_count=-1), {"pod_count"}),
        (_job(q, pod_count=0), {"pod_count"}),
        (_job(q, pod_count=2, min_pods=3), {"min_pods"}),
        (_job(q, min_pods=0), {"min_pods"}),
        (_job(q, min_pods=BIG), {"min_pods"}),
        (_job(q, pod_count="two"), {"pod_count"}),
        (_job(q, cpu_milli=-5), {"cpu_milli"}),
        (_job(q, host_memory_mib=BIG), {"host_memory_mib"}),
        (_job(q, duration_s="NaN"), {"duration_s"}),
        (_job(q, duration_s="Infinity"), {"duration_s"}),
        (_job(q, min_runtime_s="nan"), {"min_runtime_s"}),
        (_job(q, name="a\x00b"), {"name"}),
        (_job(q, name="x" * 10_000), {"name"}),
        (_job(q, name="   "), {"name"}),
        (_job(q, on_preemption="explode"), {"on_preemption"}),
        (_job("abc"), {"queue"}),
        (_job(BIG), {"queue"}),
        (_job(-1), {"queue"}),
        (_container(q, memory_percent=0), {"containers[0].memory_percent"}),
        (_container(q, memory_percent=101), {"containers[0].memory_percent"}),
        (_container(q, device_memory_mib=10, memory_percent=10), {"containers[0].memory_percent"}),
        (_container(q, device_count=65), {"containers[0].device_count"}),
        (_container(q, device_count=-1), {"containers[0].device_count"}),
        (_container(q, device_count=True), {"containers[0].device_count"}),
        (_container(q, device_count=1.5), {"containers[0].device_count"}),
        (_container(q, cores_percent=101), {"containers[0].cores_percent"}),
        (_container(q, device_memory_mib=BIG), {"containers[0].device_memory_mib"}),
        (_container(q, vendor="NoSuchVendor"), {"containers[0].vendor"}),
        (_container(q, name="Main_Container"), {"containers[0].name"}),
        (_container(q, env={"A": "b\x00"}), {"containers[0].env.A"}),
        (_container(q, env={"1BAD": "x"}), {"containers[0].env"}),
        (_container(q, env=["A=b"]), {"containers[0].env"}),
        (_container(q, device_types=["a\x00"]), {"containers[0].device_types[0]"}),
        (_container(q, command=["sh\x00"]), {"containers[0].command[0]"}),
        (_container(q, image="x" * 600), {"containers[0].image"}),
        # a per-device share without devices would be dropped without a word
        (_container(q, device_count=0, cores_percent=50), {"containers[0].device_count"}),
        (_container(q, device_count=0, device_memory_mib=4096), {"containers[0].device_count"}),
        (_container(q, device_count=0, memory_percent=50), {"containers[0].device_count"}),
        (_container(q, device_count=0, device_types=["T4"]), {"containers[0].device_count"}),
        (_job(q, containers=[{"name": "a"}, {"name": "a"}]), {"containers"}),
        (_job(q, containers=[]), {"containers.non_field_errors"}),
        (_job(q, containers={"name": "a"}), {"containers.non_field_errors"}),
        (
            _job(q, containers=[{"name": f"c{i}"} for i in range(17)]),
            {"containers.non_field_errors"},
        ),
        ({"queue": q.pk}, {"name", "containers"}),
        # unknown keys are typos of real fields (min_pod, memory_percentage): refuse them
        (_job(q, min_pod=1), {"min_pod"}),
        (_container(q, memory_percentage=50), {"containers[0].memory_percentage"}),
    ]
    for body, fields in cases:
        response = alice.post(path, json.dumps(body), content_type="application/json")
        assert_field_error(response, *fields)
    for raw in (b"[1, 2]", b'"a job"', b"null", b"42"):
        response = alice.post(path, raw, content_type="application/json")
        assert_field_error(response, "non_field_errors")
    for raw in (b'{"queue": 1, "duration_s": NaN}', b"\xff\xfe", b'{"queue":'):
        response = alice.post(path, raw, content_type="application/json")
        assert response.status_code == 400
        assert response.json()["error"]["code"] == "parse_error"
    assert not Job.objects.filter(name="adv").exists()
    assert Job.objects.count() == 3 and JobContainer.objects.count() == 3


def test_a_cpu_only_container_next_to_a_device_container_is_accepted(world):
    alice = client_for(world["alice"])
    response = alice.post(
        "/api/jobs/",
        _job(
            world["queue_a"],
            containers=[
                {"name": "sidecar"},
                {"name": "main", "device_count": 1, "cores_percent": 30},
            ],
        ),
        format="json",
    )
    assert response.status_code == 201, response.content
    job = Job.objects.get(pk=response.json()["id"])
    assert list(
        job.containers.order_by("name").values_list("name", "device_count", "cores_percent")
    ) == [("main", 1, 30), ("sidecar", 0, 0)]


def test_unicode_names_are_stored_as_given(world):
    alice = client_for(world["alice"])
    response = alice.post("/api/jobs/", _job(world["queue_a"], name="训练-ü-🚀"), format="json")
    assert response.status_code == 201
    assert Job.objects.get(pk=response.json()["id"]).name == "训练-ü-🚀"


def test_quota_amounts_beyond_the_database_range_are_400_not_500(world):
    root = client_for(world["root"])
    quota = Quota.objects.get(tenant=world["team_b"])
    for body, field in (
        ({"nominal": 2**63}, "nominal"),
        ({"nominal": BIG}, "nominal"),
        ({"borrowing_limit": 2**63}, "borrowing_limit"),
        ({"nominal": 5, "lending_limit": -1}, "lending_limit"),
        ({"nominal": "lots"}, "nominal"),
        ({"nominal": None}, "nominal"),
    ):
        response = root.patch(f"/api/quotas/{quota.pk}/", body, format="json")
        assert_field_error(response, field)
    created = root.post(
        "/api/quotas/",
        {"tenant": "team-b", "resource_group": "g1", "dimension": "memory_mib", "nominal": 2**63},
        format="json",
    )
    assert_field_error(created, "nominal")
    dry = root.post(
        "/api/quotas/dry-run/",
        {
            "changes": [
                {
                    "tenant": "team-b",
                    "resource_group": "g1",
                    "dimension": "devices",
                    "nominal": 2**63,
                }
            ]
        },
        format="json",
    )
    assert_field_error(dry, "changes[0].nominal")
    quota.refresh_from_db()
    assert (quota.nominal, quota.borrowing_limit) == (2000, None)
    assert Quota.objects.filter(tenant=world["team_b"]).count() == 1


def test_quota_at_the_database_limit_is_accepted(world):
    root = client_for(world["root"])
    quota = Quota.objects.get(tenant=world["team_b"])
    response = root.patch(f"/api/quotas/{quota.pk}/", {"borrowing_limit": 2**63 - 1}, format="json")
    assert response.status_code == 200
    quota.refresh_from_db()
    assert quota.borrowing_limit == 2**63 - 1


def test_usage_filter_with_a_nul_character_is_400(world):
    alice = client_for(world["alice"])
    assert_field_error(alice.get("/api/usage/?resource_group=g%001"), "resource_group")
    assert alice.get("/api/usage/?resource_group=nope").json() == []


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("month=9999-12", "month"),
        ("from=2024-01&to=9999-12", "to"),
        ("month=2024-13", "month"),
        ("month=abc", "month"),
        ("from=2024-05&to=2024-01", "to"),
    ],
)
def test_cost_report_months_out_of_range_are_400(world, query, field):
    alice = client_for(world["alice"])
    for path in ("/api/telemetry/cost/", "/api/telemetry/cost/csv/"):
        response = alice.get(f"{path}?{query}")
        assert_field_error(response, field)


@pytest.mark.parametrize(
    "path",
    [
        "/api/telemetry/efficiency/",
        "/api/telemetry/jobs/{job}/efficiency/",
        "/api/telemetry/devices/GPU-c1-0-0/utilisation/",
    ],
)
def test_telemetry_windows_at_the_edge_of_the_calendar_are_400(world, path):
    from django.contrib.auth import get_user_model

    # device series are operator data (platform admins); the job/tenant views are alice's
    admin = get_user_model().objects.create_user("ops-admin", is_superuser=True)
    alice = client_for(admin if "devices/" in path else world["alice"])
    path = path.format(job=world["a_train"].pk)
    for query in (
        "end=0001-01-01T01:00:00%2B00:00",
        "start=2024-01-02T00:00:00%2B00:00&end=2024-01-01T00:00:00%2B00:00",
        "start=yesterday",
        "start=2024-01-01T00:00:00",
    ):
        response = alice.get(f"{path}?{query}")
        assert response.status_code == 400, (query, response.status_code)
        assert response.json()["error"]["code"] == "invalid"


def test_month_bounds_refuses_the_last_representable_month_with_value_error():
    from scheduling.selectors.usage_report import month_bounds

    assert month_bounds("9999-11")[1].isoformat() == "9999-12-01T00:00:00+00:00"
    for month in ("9999-12", "2024-13", "0-1", "abc", "2024-1-1"):
        with pytest.raises(ValueError):
            month_bounds(month)


def test_usage_page_for_month_9999_12_is_not_a_server_error(world, client):
    client.raise_request_exception = False
    client.force_login(world["alice"])
    for path in ("/usage/?month=9999-12", "/usage.csv?month=9999-12"):
        assert client.get(path).status_code == 404, path
