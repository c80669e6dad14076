"""Membership writes go through tenants.services: one audit entry per write, in the same
transaction; adding an existing member is a conflict, the team page's form re-roles."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from core.exceptions import Conflict
from core.models import AuditEntry
from tenants.choices import Role
from tenants.models import Membership, Tenant
from tenants.services import (
    add_membership,
    change_membership,
    remove_membership,
    set_membership,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def people():
    users = get_user_model().objects
    return (Tenant.objects.create(name="team-a"), users.create_user("admin"),
            users.create_user("bob"))


def _log():
    return list(AuditEntry.objects.order_by("pk").values_list("action", "before", "after",
                                                              "source"))


def test_add_change_remove_each_write_one_audit_entry(people):
    tenant, admin, bob = people
    m = add_membership(tenant=tenant, user=bob, role=Role.MEMBER, actor=admin, source="api")
    change_membership(m, role=Role.TENANT_ADMIN, actor=admin, source="api")
    remove_membership(m, actor=admin, source="ui")
    after_add = {"user": bob.pk, "tenant": tenant.pk, "role": "member"}
    after_change = {**after_add, "role": "tenant_admin"}
    assert _log() == [("membership.create", None, after_add, "api"),
                      ("membership.update", after_add, after_change, "api"),
                      ("membership.delete", after_change, None, "ui")]
    assert not Membership.objects.exists()
    assert set(AuditEntry.objects.values_list("tenant_id", flat=True)) == {tenant.pk}


def test_adding_an_existing_member_is_a_conflict_and_writes_nothing(people):
    tenant, admin, bob = people
    add_membership(tenant=tenant, user=bob, role=Role.MEMBER, actor=admin)
    with pytest.raises(Conflict, match="already a member"):
        add_membership(tenant=tenant, user=bob, role=Role.TENANT_ADMIN, actor=admin)
    assert Membership.objects.get().role == Role.MEMBER
    assert [a for a, *_ in _log()] == ["membership.create"]


def test_set_membership_adds_then_re_roles(people):
    tenant, admin, bob = people
    first, created = set_membership(tenant=tenant, user=bob, role=Role.MEMBER, actor=admin,
                                    source="ui")
    again, created_again = set_membership(tenant=tenant, user=bob, role=Role.TENANT_ADMIN,
                                          actor=admin, source="ui")
    assert (created, created_again, again.pk) == (True, False, first.pk)
    assert Membership.objects.get().role == Role.TENANT_ADMIN
    assert [a for a, *_ in _log()] == ["membership.create", "membership.update"]
