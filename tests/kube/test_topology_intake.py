"""Kueue's Topology-Aware Scheduling annotations through the Kubernetes-native intake
(issue 31), against the HTTP fake API server: node labels kept by the inventory sync, each
pod set's annotations become its topology request, an unknown level refuses the object
with an Event naming the topology's levels."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from scheduling.kube import topology as tas
from scheduling.models import Job, KubeWorkload, Node
from scheduling.services.intake import sync_cluster_workloads
from scheduling.services.inventory import sync_cluster_inventory
from tenants.models import Topology
from tests.builders import make_group, make_tenant
from tests.kube.kube_helpers import make_kube_cluster, nvidia_node
from tests.kube.test_kube_intake import A100, NS, job_object, jobset_object
from tests.topology_world import BLOCK, HOST, RACK, ZONE

# the fake API server of tests/conftest.py's ``fake`` fixture, namespaces made on demand
pytestmark = [pytest.mark.django_db, pytest.mark.fake_apiserver(namespaces=None)]


@pytest.fixture
def kube(fake, tmp_path, settings):
    settings.KUBE_RETRY_BASE_DELAY_S = 0.0
    cluster = make_kube_cluster(fake, tmp_path)
    for i, rack in enumerate(("rack-0", "rack-0", "rack-1", "rack-1")):
        labels = {ZONE: "zone-a", BLOCK: "block-0", RACK: rack}
        uuids = (f"GPU-{i}a", f"GPU-{i}b")
        fake.put(nvidia_node(f"gpu-{i}", uuids, labels=labels))
    sync_cluster_inventory(cluster.pk, now=datetime(2025, 6, 1, 12, 0, tzinfo=UTC))
    group = make_group("g1", models=(A100,))
    group.topology = Topology.objects.create(name="dc", levels=[ZONE, BLOCK, RACK, HOST])
    group.save()
    make_tenant("team-a", group, devices_milli=8000)
    return cluster, group


def test_the_inventory_sync_keeps_node_labels(kube):
    cluster, _group = kube
    labels = Node.objects.get(cluster=cluster, name="gpu-2").labels
    assert (labels[RACK], labels[BLOCK], labels[HOST]) == ("rack-1", "block-0", "gpu-2")


def test_pod_set_annotations_become_each_pod_sets_request(fake, kube):
    cluster, _group = kube
    obj = jobset_object("llm", workers=4)
    leader, workers = obj["spec"]["replicatedJobs"]
    leader["template"]["spec"]["template"]["metadata"]["annotations"] = {
        tas.ANNOTATION_PREFERRED: BLOCK,
        tas.ANNOTATION_GROUP_NAME: "llm",
    }
    workers["template"]["spec"]["template"]["metadata"]["annotations"] = {
        tas.ANNOTATION_REQUIRED: RACK,
        tas.ANNOTATION_SLICE_REQUIRED: HOST,
        tas.ANNOTATION_SLICE_SIZE: "2",
        tas.ANNOTATION_GROUP_NAME: "llm",
    }
    fake.put(obj)
    job = Job.objects.get(pk=sync_cluster_workloads(cluster.pk).jobs[f"JobSet {NS}/llm"])
    rows = [
        (
            p.name,
            p.topology_mode,
            p.topology_level,
            p.topology_slice_size,
            p.topology_slice_level,
            p.topology_group,
        )
        for p in job.pod_sets.all()
    ]
    assert rows == [
        ("leader", "preferred", BLOCK, 0, "", "llm"),
        ("workers", "required", RACK, 2, HOST, "llm"),
    ]


def test_unconstrained_on_a_batch_job(fake, kube):
    cluster, _group = kube
    obj = job_object("free", parallelism=2)
    obj["spec"]["template"]["metadata"]["annotations"] = {tas.ANNOTATION_UNCONSTRAINED: "true"}
    fake.put(obj)
    job = Job.objects.get(pk=sync_cluster_workloads(cluster.pk).jobs[f"Job {NS}/free"])
    (ps,) = job.pod_sets.all()
    assert (ps.topology_mode, ps.topology_level, ps.count) == ("unconstrained", "", 2)


def test_an_unknown_level_refuses_the_object_naming_the_levels(fake, kube):
    cluster, _group = kube
    obj = job_object("typo", parallelism=2)
    obj["spec"]["template"]["metadata"]["annotations"] = {
        tas.ANNOTATION_REQUIRED: "cloud.provider.com/topology-row"
    }
    fake.put(obj)
    report = sync_cluster_workloads(cluster.pk)
    assert f"Job {NS}/typo" not in report.jobs
    expected = (
        "pod set main: 'cloud.provider.com/topology-row' is not a level of topology dc: "
        f"its levels are {ZONE}, {BLOCK}, {RACK}, {HOST}."
    )
    events = [
        (e["reason"], e["message"])
        for e in fake.list("events")
        if e["involvedObject"]["name"] == "typo"
    ]
    assert ("InvalidWorkload", expected) in events
    assert KubeWorkload.objects.get(name="typo").error == expected
    assert not Job.objects.filter(name__endswith="/typo").exists()


def test_two_modes_or_a_slice_without_size_are_refused(fake, kube):
    cluster, _group = kube
    both = job_object("both")
    both["spec"]["template"]["metadata"]["annotations"] = {
        tas.ANNOTATION_REQUIRED: RACK,
        tas.ANNOTATION_PREFERRED: RACK,
    }
    half = job_object("half")
    half["spec"]["template"]["metadata"]["annotations"] = {tas.ANNOTATION_SLICE_REQUIRED: RACK}
    fake.put(both)
    fake.put(half)
    sync_cluster_workloads(cluster.pk)
    errors = dict(KubeWorkload.objects.values_list("name", "error"))
    assert errors["both"] == (
        f"pod set main: give one of {tas.ANNOTATION_REQUIRED}, {tas.ANNOTATION_PREFERRED}, "
        f"{tas.ANNOTATION_UNCONSTRAINED} (not required and preferred)"
    )
    assert errors["half"] == (
        f"pod set main: {tas.ANNOTATION_SLICE_REQUIRED} and {tas.ANNOTATION_SLICE_SIZE} go together"
    )
