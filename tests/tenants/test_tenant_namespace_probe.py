"""Probe: a pattern such as ``{slug}`` must never give a tenant a namespace Kubernetes keeps
for itself (``default``, ``kube-system``, ``kube-public``, ``kube-node-lease``, any ``kube-*``):
the console would adopt it (it carries no tenant label), run the tenant's pods there and take
in the workloads other users create in it."""

from __future__ import annotations

import re

import pytest

from scheduling.models import Cluster
from tenants.models import Tenant
from tenants.selectors import tenant_for_namespace, tenant_namespace

pytestmark = pytest.mark.django_db

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


@pytest.mark.parametrize(
    ("tenant_name", "pattern"),
    [
        ("default", "{slug}"),
        ("kube-system", "{slug}"),
        ("KUBE-SYSTEM", "{slug}"),
        ("system", "kube-{slug}"),
        ("public", "kube-{slug}"),
        ("node-lease", "kube-{slug}"),
        ("team-a", "kube-{slug}"),
    ],
)
def test_a_tenant_never_gets_a_namespace_kubernetes_reserves(tenant_name, pattern):
    cluster = Cluster.objects.create(name="prod", backend="kubernetes", namespace_pattern=pattern)
    tenant = Tenant.objects.create(name=tenant_name)
    name = tenant_namespace(tenant, cluster)
    assert DNS_LABEL.match(name), name
    assert name not in ("default", "kube-system", "kube-public", "kube-node-lease")
    assert not name.startswith("kube-"), name
    assert tenant_for_namespace(cluster, name) == tenant
    for reserved in ("default", "kube-system", "kube-public", "kube-node-lease"):
        assert tenant_for_namespace(cluster, reserved) is None


def test_an_ordinary_name_keeps_its_pattern_rendering():
    cluster = Cluster.objects.create(name="prod", backend="kubernetes", namespace_pattern="{slug}")
    tenant = Tenant.objects.create(name="team-nlp")
    assert tenant_namespace(tenant, cluster) == "team-nlp"
    assert tenant_for_namespace(cluster, "team-nlp") == tenant
