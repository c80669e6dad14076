"""Property-based run of every operation in /api/schema/ against the in-process WSGI app, with
every schemathesis check (no 5xx, status codes, content types, response schemas and headers,
invalid data rejected, valid data accepted, ...), as a platform admin, a tenant admin, a
member and a viewer: the schema tells the truth for each of them. Bounded: a few examples per
operation and role."""

import pytest
import schemathesis
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections, transaction
from hypothesis import HealthCheck, Phase, settings
from rest_framework.authtoken.models import Token

from tests.console_world import build_world

schema = schemathesis.openapi.from_wsgi("/api/schema/", WSGIHandler())

EXAMPLES = 5
ROLES = ["root", "ada", "alice", "victor"]  # platform admin, tenant admin, member, viewer


@pytest.fixture(scope="module")
def world_tokens(django_db_setup, django_db_blocker):
    """The two-tenant world and a token per role, built once for the module inside a
    transaction that is rolled back at its end (each test's own transaction is a savepoint
    in it). Django's per-request connection closing is switched off meanwhile (as its test
    client does), so requests see that transaction."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    with django_db_blocker.unblock(), transaction.atomic():
        world = build_world()
        yield {role: Token.objects.create(user=world[role]).key for role in ROLES}
        transaction.set_rollback(True)
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.mark.django_db
@pytest.mark.parametrize("role", ROLES)
@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          phases=[Phase.explicit, Phase.generate],
          suppress_health_check=list(HealthCheck))
def test_api_conforms_to_its_schema(case, role, world_tokens):
    case.call_and_validate(headers={"Authorization": f"Token {world_tokens[role]}"})
