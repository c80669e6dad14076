"""Tenant namespaces: the name each tenant owns in each cluster (pattern, stored name) and the
way back from a namespace to its tenant (``tenants.selectors``)."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured, ValidationError
from django.utils import timezone

from core.env import env_template
from core.exceptions import Conflict
from scheduling.models import Cluster
from tenants.models import Tenant
from tenants.selectors import tenant_for_namespace, tenant_namespace
from tenants.services import record_tenant_namespace

pytestmark = pytest.mark.django_db


@pytest.fixture
def clusters():
    return (
        Cluster.objects.create(name="prod-a", backend="kubernetes"),
        Cluster.objects.create(
            name="Lab_B", backend="kubernetes", namespace_pattern="{cluster}-{slug}"
        ),
    )


def test_pattern_names_one_namespace_per_tenant_and_cluster(clusters, settings):
    prod, lab = clusters
    nlp = Tenant.objects.create(name="team-nlp")
    assert settings.TENANT_NAMESPACE_PATTERN == "tenant-{slug}"
    assert tenant_namespace(nlp, prod) == "tenant-team-nlp"
    # the cluster's own pattern; a cluster name that is no DNS label is cleaned and hashed
    lab_name = tenant_namespace(nlp, lab)
    assert lab_name.startswith("lab-b-team-nlp-") and len(lab_name) == len("lab-b-team-nlp-") + 8
    settings.TENANT_NAMESPACE_PATTERN = "gpu-{slug}"
    assert tenant_namespace(nlp, prod) == "gpu-team-nlp"


def test_long_names_stay_dns_labels_and_distinct(clusters):
    prod, _ = clusters
    a = Tenant.objects.create(name="a" * 60 + "-x")
    b = Tenant.objects.create(name="a" * 60 + "-y")
    name_a, name_b = tenant_namespace(a, prod), tenant_namespace(b, prod)
    assert len(name_a) == len(name_b) == 63 and name_a != name_b
    assert tenant_for_namespace(prod, name_a) == a
    assert tenant_for_namespace(prod, name_b) == b


def test_namespace_back_to_its_tenant(clusters):
    prod, lab = clusters
    nlp = Tenant.objects.create(name="team-nlp")
    Tenant.objects.create(name="team-vision")
    assert tenant_for_namespace(prod, "tenant-team-nlp") == nlp
    assert tenant_for_namespace(prod, "tenant-team-audio") is None  # no such tenant
    assert tenant_for_namespace(prod, "kube-system") is None
    assert tenant_for_namespace(prod, "team-nlp") is None
    assert tenant_for_namespace(lab, "tenant-team-nlp") is None  # lab uses its own pattern
    assert tenant_for_namespace(lab, tenant_namespace(nlp, lab)) == nlp


def test_recorded_name_outlives_a_pattern_change(clusters, settings):
    prod, lab = clusters
    nlp = Tenant.objects.create(name="team-nlp")
    now = timezone.now()
    record_tenant_namespace(tenant_id=nlp.pk, cluster_id=prod.pk, name="tenant-team-nlp", now=now)
    settings.TENANT_NAMESPACE_PATTERN = "gpu-{slug}"
    assert tenant_namespace(nlp, prod) == "tenant-team-nlp"
    assert tenant_for_namespace(prod, "tenant-team-nlp") == nlp
    # the new pattern's name is not the tenant's: it already has a namespace there
    assert tenant_for_namespace(prod, "gpu-team-nlp") is None
    assert tenant_namespace(nlp, lab) != "tenant-team-nlp"  # per cluster
    # recording again refreshes; another name or another tenant's name is a conflict
    record_tenant_namespace(tenant_id=nlp.pk, cluster_id=prod.pk, name="tenant-team-nlp", now=now)
    with pytest.raises(Conflict, match="already owns namespace 'tenant-team-nlp'"):
        record_tenant_namespace(tenant_id=nlp.pk, cluster_id=prod.pk, name="gpu-team-nlp", now=now)
    vision = Tenant.objects.create(name="team-vision")
    with pytest.raises(Conflict, match="belongs to tenant"):
        record_tenant_namespace(
            tenant_id=vision.pk, cluster_id=prod.pk, name="tenant-team-nlp", now=now
        )


def test_pattern_setting_and_cluster_field_are_checked(monkeypatch):
    monkeypatch.setenv("TENANT_NAMESPACE_PATTERN", "ns-{tenant}")
    with pytest.raises(ImproperlyConfigured, match=r"unknown placeholder \{tenant\}"):
        env_template(
            "TENANT_NAMESPACE_PATTERN",
            "tenant-{slug}",
            fields=("slug", "cluster"),
            required=("slug",),
        )
    monkeypatch.setenv("TENANT_NAMESPACE_PATTERN", "shared-{cluster}")
    with pytest.raises(ImproperlyConfigured, match=r"must contain \{slug\}"):
        env_template(
            "TENANT_NAMESPACE_PATTERN",
            "tenant-{slug}",
            fields=("slug", "cluster"),
            required=("slug",),
        )
    cluster = Cluster(name="x", backend="kubernetes", namespace_pattern="ns-{slug!r}")
    with pytest.raises(ValidationError) as err:
        cluster.full_clean()
    assert "namespace_pattern" in err.value.message_dict
