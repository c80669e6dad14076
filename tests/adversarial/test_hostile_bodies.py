"""Hostile request bodies and URLs (issue 15): JSON nested 1,000 deep, NUL characters in any
string, oversized bodies, a NUL in a page URL, a non-numeric form id. Each is a 400 with a
field error (or a 404 for a URL naming nothing), never a 5xx, and nothing is written."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from drf_spectacular.generators import SchemaGenerator

from tenants.models import Membership, Tenant
from tests.adversarial.helpers import assert_field_error, client_for

pytestmark = pytest.mark.django_db


def _nested(depth: int) -> str:
    """``{"name": [[[...]]]}`` with ``depth`` nested arrays."""
    return '{"name": ' + "[" * depth + "]" * depth + "}"


def _post_operations() -> list[str]:
    """Every POST path of the API schema (``{id}`` etc. filled in later)."""
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return sorted(path for path, item in schema["paths"].items() if "post" in item)


def _concrete(path: str, world) -> str:
    """A path template with its parameters replaced by ids of objects the caller owns."""
    return (
        path.replace("{id}", str(world["a_train"].pk))
        .replace("{uuid}", "GPU-c1-0-0")
        .replace("{name}", "team-a")
    )


def test_the_generic_walk_covers_the_write_endpoints(world):
    paths = _post_operations()
    assert {
        "/api/jobs/",
        "/api/members/",
        "/api/tenants/",
        "/api/quotas/",
        "/api/dry-run/",
        "/api/quotas/dry-run/",
    } <= set(paths)


@pytest.mark.parametrize("who", ["root", "ada", "alice"])
def test_no_post_endpoint_answers_5xx_to_deep_json_or_nul_bytes(world, who):
    client = client_for(world[who])
    bodies = {
        "deep": _nested(1000),
        "nul value": json.dumps({"name": "a\x00b", "tenant": "team-a\x00", "user": "x\x00"}),
        "nul key": json.dumps({"na\x00me": "x"}),
        "nul in list": json.dumps({"changes": [{"tenant": "\x00"}], "containers": ["\x00"]}),
    }
    for template in _post_operations():
        path = _concrete(template, world)
        for label, body in bodies.items():
            response = client.post(path, body, content_type="application/json")
            assert response.status_code < 500, (
                label,
                path,
                response.status_code,
                response.content[:300],
            )


def test_deep_json_is_a_400_naming_the_depth(world):
    response = client_for(world["alice"]).post(
        "/api/jobs/", _nested(1000), content_type="application/json"
    )
    assert response.status_code == 400, response.content[:300]
    error = response.json()["error"]
    assert error["code"] == "parse_error"
    assert "nested deeper than 32" in error["message"]


def test_json_within_the_depth_limit_is_parsed(world):
    # 30 levels is legal JSON within the bound: the serializer judges it (a field error)
    response = client_for(world["alice"]).post(
        "/api/jobs/", _nested(30), content_type="application/json"
    )
    assert_field_error(response, "name", "queue", "containers")


def test_an_oversized_body_is_a_400(world, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    response = client_for(world["alice"]).post(
        "/api/jobs/", json.dumps({"name": "x" * 2000}), content_type="application/json"
    )
    assert response.status_code == 400
    assert "larger than 1000 bytes" in response.json()["error"]["message"]


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/api/members/", {"tenant": "team-a", "user": "bob\x00", "role": "member"}, "user"),
        ("/api/members/", {"tenant": "team-a\x00", "user": "bob", "role": "member"}, "tenant"),
        ("/api/tenants/", {"name": "t\x00x", "display_name": "x"}, "name"),
        ("/api/tenants/", {"name": "tx", "display_name": "x\x00"}, "display_name"),
        ("/api/tenants/", {"name": "tx", "parent": "team-a\x00"}, "parent"),
        (
            "/api/quotas/",
            {
                "tenant": "team-a",
                "resource_group": "g1",
                "flavor": "*\x00",
                "dimension": "devices",
                "nominal": 1,
            },
            "flavor",
        ),
    ],
)
def test_nul_characters_are_field_errors(world, path, body, field):
    before = (Membership.objects.count(), Tenant.objects.count())
    response = client_for(world["root"]).post(path, body, format="json")
    assert_field_error(response, field)
    assert response.json()["error"]["fields"][field] == ["Null characters are not allowed."]
    assert (Membership.objects.count(), Tenant.objects.count()) == before


def test_nul_in_a_nested_field_names_its_path(world):
    response = client_for(world["alice"]).post(
        "/api/jobs/",
        {
            "queue": world["queue_a"].pk,
            "name": "ok",
            "containers": [{"device_count": 1, "env": {"A": "b\x00"}}],
        },
        format="json",
    )
    assert_field_error(response, "containers[0].env.A")


def test_a_form_encoded_body_is_refused_as_unsupported(world):
    # the API reads JSON only (nested bodies have no form encoding): 415, never a 5xx
    response = client_for(world["root"]).post(
        "/api/tenants/", {"name": "t\x00x"}, format="multipart"
    )
    assert response.status_code == 415
    assert response.json()["error"]["code"] == "unsupported_media_type"
    assert not Tenant.objects.filter(name__startswith="t").exclude(name__startswith="team").exists()


def test_nul_in_a_query_parameter_is_a_400(world):
    response = client_for(world["alice"]).get("/api/jobs/?name=a%00b")
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {"name": ["Null characters are not allowed."]}


def test_device_page_with_a_nul_is_404(world):
    client = Client(raise_request_exception=False)
    client.force_login(world["alice"])
    assert client.get("/devices/%00/").status_code == 404
    assert client.get("/devices/GPU-c1-0-0%00/").status_code == 404
    assert client.get("/nodes/?name=%00").status_code == 400


def test_team_page_remove_with_a_non_numeric_id_is_400(world):
    client = Client(raise_request_exception=False)
    client.force_login(world["ada"])
    before = Membership.objects.count()
    assert client.post("/tenants/team-a/", {"remove": "abc"}).status_code == 400
    assert client.post("/tenants/team-a/", {"remove": "9" * 30}).status_code == 400
    assert Membership.objects.count() == before
