"""Membership writes go through tenants.services: one audit entry per write, in the same
transaction; adding an existing member changes their role (one update entry); an unknown role
is refused and writes nothing."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from core.exceptions import InvalidRequest
from core.models import AuditEntry
from tenants.choices import Role
from tenants.models import Membership, Tenant
from tenants.services import add_member, change_member_role, remove_member

pytestmark = pytest.mark.django_db


@pytest.fixture
def people():
    users = get_user_model().objects
    return (
        Tenant.objects.create(name="team-a"),
        users.create_user("admin"),
        users.create_user("bob"),
    )


def _log():
    return list(
        AuditEntry.objects.order_by("pk").values_list("action", "before", "after", "source")
    )


def test_add_change_remove_each_write_one_audit_entry(people):
    tenant, admin, bob = people
    m = add_member(tenant=tenant, user=bob, role=Role.MEMBER, actor=admin, source="api")
    m = change_member_role(m, role=Role.TENANT_ADMIN, actor=admin, source="api")
    remove_member(m, actor=admin, source="ui")
    after_add = {"user": bob.pk, "role": "member"}
    after_change = {**after_add, "role": "tenant_admin"}
    assert _log() == [
        ("membership.create", None, after_add, "api"),
        ("membership.update", after_add, after_change, "api"),
        ("membership.delete", after_change, None, "ui"),
    ]
    assert not Membership.objects.exists()
    assert set(AuditEntry.objects.values_list("tenant_id", flat=True)) == {tenant.pk}


def test_adding_an_existing_member_re_roles_them(people):
    tenant, admin, bob = people
    first = add_member(tenant=tenant, user=bob, role=Role.MEMBER, actor=admin, source="ui")
    again = add_member(tenant=tenant, user=bob, role=Role.TENANT_ADMIN, actor=admin, source="ui")
    assert again.pk == first.pk
    assert Membership.objects.get().role == Role.TENANT_ADMIN
    assert [a for a, *_ in _log()] == ["membership.create", "membership.update"]


def test_unknown_role_is_refused_and_writes_nothing(people):
    tenant, admin, bob = people
    with pytest.raises(InvalidRequest, match="unknown role"):
        add_member(tenant=tenant, user=bob, role="owner", actor=admin)
    assert not Membership.objects.exists()
    assert not AuditEntry.objects.exists()
