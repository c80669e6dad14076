"""Admin: the cluster's "test connection" action and that no credential is ever shown."""

from __future__ import annotations

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse

from scheduling.backends.kubernetes import forget_gateways
from scheduling.models import Cluster
from tests.builders import make_user
from tests.kube.fake_apiserver import FakeApiServer
from tests.kube.kube_helpers import make_kube_cluster

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client):
    user = make_user("root", is_staff=True, is_superuser=True)
    client.force_login(user)
    return client


def _run_action(client, *clusters):
    return client.post(
        reverse("admin:scheduling_cluster_changelist"),
        {"action": "test_connection", "_selected_action": [c.pk for c in clusters]},
        follow=True,
    )


def test_test_connection_reports_version_and_dra_versions(admin_client, tmp_path):
    with FakeApiServer(resource_versions=("v1beta2", "v1beta1")) as server:
        try:
            cluster = make_kube_cluster(server, tmp_path, mode="dra")
            broken = Cluster.objects.create(
                name="broken", backend="kubernetes", kubeconfig_path=str(tmp_path / "missing")
            )
            sim = Cluster.objects.create(name="sim")
            resp = _run_action(admin_client, cluster, broken, sim)
        finally:
            forget_gateways()
    messages = sorted((m.level_tag, m.message) for m in get_messages(resp.wsgi_request))
    assert messages == [
        (
            "error",
            f"broken: connection failed: cannot load Kubernetes configuration: "
            f"kubeconfig file '{tmp_path / 'missing'}' does not exist",
        ),
        ("info", "sim: simulated, nothing to test"),
        (
            "success",
            "k1: Kubernetes v1.34.0; resource.k8s.io served: v1beta2, v1beta1; "
            "DRA version used: v1beta2",
        ),
    ]
    cluster.refresh_from_db()
    assert cluster.server_version == "v1.34.0"


def test_no_dra_api_warns_for_dra_mode_and_credentials_are_not_shown(admin_client, tmp_path):
    with FakeApiServer(resource_versions=()) as server:
        try:
            cluster = make_kube_cluster(server, tmp_path, mode="dra")
            resp = _run_action(admin_client, cluster)
        finally:
            forget_gateways()
    ((level, text),) = [(m.level_tag, m.message) for m in get_messages(resp.wsgi_request)]
    assert (level, text) == (
        "warning",
        "k1: Kubernetes v1.34.0; resource.k8s.io served: none "
        "(no DRA API); DRA version used: -; submission mode "
        "dra needs resource.k8s.io",
    )
    page = admin_client.get(reverse("admin:scheduling_cluster_change", args=[cluster.pk]))
    assert page.status_code == 200
    assert b"not-a-real-token" not in page.content  # the kubeconfig's token stays in the file
    listing = admin_client.get(reverse("admin:scheduling_cluster_changelist"))
    assert b"kubeconfig file (context fake)" in listing.content


def test_kube_tick_enqueues_sync_and_reconcile_per_kubernetes_cluster(monkeypatch, tmp_path):
    from scheduling import tasks

    Cluster.objects.create(name="sim")
    a = Cluster.objects.create(name="a", backend="kubernetes", in_cluster=True)
    b = Cluster.objects.create(name="b", backend="kubernetes", in_cluster=True)
    sent = []
    monkeypatch.setattr(
        tasks.kube_inventory_sync_task, "delay", lambda pk: sent.append(("sync", pk))
    )
    monkeypatch.setattr(
        tasks.kube_reconcile_task, "delay", lambda pk: sent.append(("reconcile", pk))
    )
    assert tasks.kube_tick_task.run() == 2
    assert sent == [("sync", a.pk), ("reconcile", a.pk), ("sync", b.pk), ("reconcile", b.pk)]
