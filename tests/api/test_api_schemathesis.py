"""Property-based run of every operation in /api/schema/ against the in-process WSGI app, with
every schemathesis check (no 5xx, status codes, content types, response schemas and headers,
invalid data rejected, authentication not ignored, valid data accepted, ...), as a platform
admin, a tenant admin, a member and a viewer: the schema tells the truth for each of them.
Bounded: a few examples per operation and role.

"Valid data accepted" is schemathesis' ``positive_data_acceptance`` made precise for rules no
OpenAPI schema can state: a schema-valid request may be refused with 400 only when every
field error is such a rule (a referenced object that does not exist or is not yours, a rule
across fields, a device-model config that does not resolve), never with an error about what
the schema does state (type, format, bounds, length, enum, required, unknown key).
"""

import re
from urllib.parse import urlsplit

import pytest
import schemathesis
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections, transaction
from hypothesis import HealthCheck, Phase, settings
from rest_framework.authtoken.models import Token
from schemathesis.specs.openapi.checks import ignored_auth, positive_data_acceptance

from tests.console_world import build_world

schema = schemathesis.openapi.from_wsgi("/api/schema/", WSGIHandler())

EXAMPLES = 4
ROLES = ["root", "ada", "alice", "victor"]  # platform admin, tenant admin, member, viewer


# DRF's and pydantic's messages for what an OpenAPI schema states (their default wording)
STATED = re.compile(
    "|".join(
        [
            r"This field is required",
            r"may not be (null|blank|empty)",
            r"valid (integer|number|"
            r"string|boolean)",
            r"Not a valid string",
            r"Must be (true or false|a valid boolean)",
            r"Incorrect type",
            r"Ensure this (value|field)",
            r"is not a valid choice",
            r"Expected a (list|dictionary)",
            r"unknown key",
            r"Input should be",
            r"wrong format",
            r"Enter a valid",
            r"(more|fewer) than \d+ (characters|items|elements)",
        ]
    )
)
ACCEPTED = {401, 403, 404, 409, 429}


def _stated(case, name: str, message: str) -> bool:
    """Whether ``message`` about field ``name`` is a rule the schema states. ``format: uri``
    states neither DNS limits (a host over 253 characters, or a label over 63) nor the
    schemes a webhook may use (Django's URLValidator: http, https, ftp, ftps; ``mailto:x`` or
    ``fragmentation:all`` are valid URIs), so those refusals are unstated rules."""
    if not STATED.search(message):
        return False
    if message.startswith("Enter a valid URL") and isinstance(case.body, dict):
        parts = urlsplit(str(case.body.get(name, "")))
        host = parts.hostname or ""
        if parts.scheme.lower() not in {"http", "https", "ftp", "ftps"}:
            return False
        if len(host) > 253 or any(len(label) > 63 for label in host.split(".")):
            return False
    return True


def valid_data_refused_only_for_unstated_rules(ctx, response, case):
    """A schema-valid request (positive generation mode) is accepted (2xx/3xx), or refused
    for who is asking or the state of things (401/403/404/409/429), or refused with 400 whose
    field errors are all rules the schema cannot state (module docstring)."""
    meta = case.meta
    status = response.status_code
    if meta is None or not meta.generation.mode.is_positive or status < 400 or (status in ACCEPTED):
        return
    fields = {}
    if status == 400:
        fields = (response.json().get("error") or {}).get("fields") or {}
    stated = {
        name: messages
        for name, messages in fields.items()
        if any(_stated(case, name, str(m)) for m in messages)
    }
    if status != 400 or not fields or stated:
        raise AssertionError(
            f"Valid data refused: {status} {response.text[:500]}\n"
            f"errors about what the schema states: {stated or '(no field errors)'}"
        )
    return


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
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
def test_api_conforms_to_its_schema(case, role, world_tokens):
    # ignored_auth replays the request without (and with bad) credentials: the same requests
    # for every role, so they are sent once, with the platform admin's run
    excluded = [positive_data_acceptance] + ([] if role == "root" else [ignored_auth])
    case.call_and_validate(
        headers={"Authorization": f"Token {world_tokens[role]}"},
        excluded_checks=excluded,
        additional_checks=[valid_data_refused_only_for_unstated_rules],
    )
