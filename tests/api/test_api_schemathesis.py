"""Property-based run of every operation in /api/schema/ against the in-process WSGI app:
no input, valid or not, makes the API answer 5xx. Bounded: a few examples per operation."""

import pytest
import schemathesis
from django.contrib.auth import get_user_model
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from rest_framework.authtoken.models import Token

from tests.builders import gpu_job, make_cluster, make_group, make_tenant

schema = schemathesis.openapi.from_wsgi("/api/schema/", WSGIHandler())

EXAMPLES = 10


@pytest.fixture
def admin_token(db):
    """A platform admin's token; Django's per-request connection closing is switched off
    for the test (as its test client does), so requests see the test transaction."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    make_cluster("c1", nodes=1, gpus=2)
    _, queue = make_tenant("team-a", make_group("g1"), devices_milli=2000)
    gpu_job(queue, "a-train", count=1, memory_percent=40)
    root = get_user_model().objects.create_superuser("root", "root@example.org", "pw-root")
    yield Token.objects.create(user=root).key
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.mark.django_db
@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
def test_api_never_answers_5xx(case, admin_token):
    response = case.call(headers={"Authorization": f"Token {admin_token}"})
    assert response.status_code < 500, (
        f"{case.method} {case.formatted_path} -> {response.status_code}: "
        f"{response.text[:500]}"
    )
