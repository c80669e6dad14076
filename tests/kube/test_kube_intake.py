"""Intake of workloads users create with kubectl, against the HTTP fake API server: a
suspended Job with HAMi limits is admitted, pinned and unsuspended; a JobSet is one gang; a
Deployment's new replica is admitted; a preempted Job is suspended again; objects without the
label, or in a namespace no tenant owns, are left alone (the latter with an Event)."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta

import kubernetes_validate
import pytest
from django.utils import timezone

from scheduling.choices import JobKind, JobState, PlacementState
from scheduling.kube import workloads as wl
from scheduling.models import Job, KubeWorkload, Placement, PriorityClass
from scheduling.services.cluster_submission_batch import submit_admitted_job
from scheduling.services.cycle import run_admission_cycle
from scheduling.services.eviction import release_due_terminations
from scheduling.services.intake import sync_cluster_workloads
from scheduling.services.intake_record import suspend_kube_job
from scheduling.services.inventory import sync_cluster_inventory
from tenants.selectors import tenant_namespace
from tests.builders import make_group, make_tenant
from tests.kube.fake_apiserver import KINDS
from tests.kube.kube_helpers import make_kube_cluster, nvidia_node

# the fake API server of tests/conftest.py's ``fake`` fixture, with these options
pytestmark = [pytest.mark.django_db, pytest.mark.fake_apiserver(namespaces=None)]

A100 = "NVIDIA-A100-SXM4-80GB"
K8S = "1.34.0"
NS = "tenant-team-a"  # team-a's namespace under the default TENANT_NAMESPACE_PATTERN


@pytest.fixture
def kube(fake, tmp_path, settings):
    settings.KUBE_RETRY_BASE_DELAY_S = 0.0
    cluster = make_kube_cluster(fake, tmp_path)
    fake.put(nvidia_node("gpu-1", ("GPU-aaaa", "GPU-bbbb")))
    fake.put(nvidia_node("gpu-2", ("GPU-cccc", "GPU-dddd")))
    sync_cluster_inventory(cluster.pk, now=datetime(2025, 6, 1, 12, 0, tzinfo=UTC))
    group = make_group("g1", models=(A100,))
    tenant, queue = make_tenant("team-a", group, devices_milli=4000)
    assert tenant_namespace(tenant, cluster) == NS
    return cluster, group, queue


def template(gpus: int = 1, gpumem: int = 10000, *, labels: dict | None = None) -> dict:
    return {
        "metadata": {"labels": labels or {"app": "train"}},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "main",
                    "image": "busybox:1.37",
                    "command": ["sleep", "60"],
                    "resources": {
                        "limits": {
                            "nvidia.com/gpu": str(gpus),
                            "nvidia.com/gpumem": str(gpumem),
                            "cpu": "1",
                            "memory": "1Gi",
                        }
                    },
                }
            ],
        },
    }


def job_object(
    name: str,
    *,
    ns: str = NS,
    queue: str | None = "default",
    suspend=True,
    parallelism: int = 1,
    gpus: int = 1,
    priority_class: str | None = None,
    gpumem: int = 10000,
) -> dict:
    labels = {}
    if queue is not None:
        labels[wl.LABEL_QUEUE] = queue
    if priority_class is not None:
        labels[wl.LABEL_PRIORITY_CLASS] = priority_class
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": {
            "suspend": suspend,
            "parallelism": parallelism,
            "completions": parallelism,
            "template": template(gpus, gpumem),
        },
    }


_TYPES = {
    "jobs": ("batch/v1", "Job"),
    "jobsets": ("jobset.x-k8s.io/v1alpha2", "JobSet"),
    "deployments": ("apps/v1", "Deployment"),
    "pods": ("v1", "Pod"),
}


def _get(fake, plural: str, name: str, ns: str = NS) -> dict:
    """The stored object with its apiVersion and kind (to put back changed)."""
    api_version, kind = _TYPES[plural]
    return {**fake.get(plural, name, ns), "apiVersion": api_version, "kind": kind}


def _intake(cluster):
    return sync_cluster_workloads(cluster.pk)


def _admit(group, job_id) -> None:
    assert job_id in run_admission_cycle(group.pk).admitted
    submit_admitted_job(job_id)


def _events(fake, name: str) -> list[tuple[str, str, str]]:
    return [
        (e["reason"], e["type"], e["message"])
        for e in fake.list("events")
        if e["involvedObject"]["name"] == name
    ]


def _valid(obj: dict, api_version: str, kind: str) -> None:
    """kubernetes-validate (strict) of an object as stored by the fake server."""
    kubernetes_validate.validate({**obj, "apiVersion": api_version, "kind": kind}, K8S, strict=True)


def _valid_template(tpl: dict) -> None:
    kubernetes_validate.validate(
        {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "t"}, "template": tpl},
        K8S,
        strict=True,
    )


def test_suspended_job_is_admitted_pinned_and_unsuspended(fake, kube):
    cluster, group, _queue = kube
    fake.put(job_object("train"))
    report = _intake(cluster)
    job_id = report.jobs[f"Job {NS}/train"]
    job = Job.objects.get(pk=job_id)
    assert (job.state, job.source, job.pod_count) == (JobState.QUEUED, "kube", 1)
    assert job.kind == JobKind.BATCH  # a batch/v1 Job: N pods that run to completion
    (ps,) = job.pod_sets.all()
    (c,) = ps.containers.all()
    assert (ps.name, ps.count, ps.cpu_milli, ps.host_memory_mib) == ("main", 1, 1000, 1024)
    assert (c.vendor, c.device_count, c.device_memory_mib) == ("NVIDIA", 1, 10000)
    assert fake.get("jobs", "train", NS)["spec"]["suspend"] is True  # still held back

    _admit(group, job_id)
    obj = fake.get("jobs", "train", NS)
    (placement,) = Placement.objects.filter(job_id=job_id)
    uuid = placement.assignment["containers"][0]["devices"][0]["uuid"]
    assert obj["spec"]["suspend"] is False
    tpl = obj["spec"]["template"]
    assert tpl["metadata"]["annotations"]["nvidia.com/use-gpuuuid"] == uuid
    assert tpl["metadata"]["labels"][wl.LABEL_WORKLOAD] == str(job_id)
    terms = tpl["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    assert terms == [
        {
            "matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [placement.node.name]}
            ]
        }
    ]
    assert obj["metadata"]["annotations"][wl.ANNOTATION_ADMITTED] == str(job_id)
    _valid(obj, "batch/v1", "Job")
    placement.refresh_from_db()
    assert placement.state == PlacementState.SUBMITTED
    assert sorted(r for r, _, _ in _events(fake, "train")) == ["Admitted", "Queued"]

    # the Job controller runs its pod, then it completes
    running = _get(fake, "jobs", "train")
    running["status"] = {"active": 1}
    fake.put(running)
    _intake(cluster)
    job.refresh_from_db()
    assert job.state == JobState.RUNNING
    done = _get(fake, "jobs", "train")
    done["status"] = {"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]}
    fake.put(done)
    _intake(cluster)
    job.refresh_from_db()
    placement.refresh_from_db()
    assert (job.state, placement.state) == (JobState.SUCCEEDED, PlacementState.SUCCEEDED)


def test_pending_job_says_why_it_waits_and_an_unsuspended_one_is_suspended(fake, kube):
    cluster, group, _queue = kube
    # 5 whole-card pods: more than the 4 GPUs of the quota
    fake.put(job_object("big", parallelism=5, suspend=False, gpumem=81920))
    report = _intake(cluster)
    assert report.suspended == [f"Job {NS}/big"]
    obj = fake.get("jobs", "big", NS)
    assert obj["spec"]["suspend"] is True
    job_id = report.jobs[f"Job {NS}/big"]
    assert run_admission_cycle(group.pk).admitted == []
    reason = Job.objects.get(pk=job_id).pending_reason
    assert reason
    _intake(cluster)
    obj = fake.get("jobs", "big", NS)
    assert obj["metadata"]["annotations"][wl.ANNOTATION_PENDING] == reason.splitlines()[0]
    assert ("Pending", "Normal", reason.splitlines()[0]) in _events(fake, "big")
    before = fake.get("jobs", "big", NS)["metadata"]["resourceVersion"]
    _intake(cluster)  # nothing changed: nothing written
    assert fake.get("jobs", "big", NS)["metadata"]["resourceVersion"] == before


def jobset_object(name: str, *, workers: int = 2, gpumem: int = 10000) -> dict:
    def replicated(rname: str, replicas: int) -> dict:
        return {
            "name": rname,
            "replicas": replicas,
            "template": {
                "spec": {"parallelism": 1, "completions": 1, "template": template(1, gpumem)}
            },
        }

    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": NS, "labels": {wl.LABEL_QUEUE: "default"}},
        "spec": {
            "suspend": True,
            "replicatedJobs": [replicated("leader", 1), replicated("workers", workers)],
        },
    }


def test_jobset_with_two_replicated_jobs_is_admitted_as_one_gang(fake, kube):
    cluster, group, _queue = kube
    fake.put(jobset_object("llm", workers=2))
    job_id = _intake(cluster).jobs[f"JobSet {NS}/llm"]
    job = Job.objects.get(pk=job_id)
    assert [(p.name, p.count) for p in job.pod_sets.all()] == [("leader", 1), ("workers", 2)]
    assert job.pod_count == 3
    assert job.kind == JobKind.TRAINING
    _admit(group, job_id)
    assert Placement.objects.filter(job_id=job_id).count() == 3  # all in one cycle
    obj = fake.get("jobsets", "llm", NS)
    assert obj["spec"]["suspend"] is False
    pinned = {}
    for rj in obj["spec"]["replicatedJobs"]:
        tpl = rj["template"]["spec"]["template"]
        _valid_template(tpl)
        pinned[rj["name"]] = tpl["metadata"]["annotations"]["nvidia.com/use-gpuuuid"]
    placements = list(Placement.objects.filter(job_id=job_id).order_by("pod_index"))
    granted = [p.assignment["containers"][0]["devices"][0]["uuid"] for p in placements]
    assert pinned["leader"] == granted[0]
    assert set(pinned["workers"].split(",")) == set(granted[1:])


def test_jobset_larger_than_the_quota_is_not_admitted_in_part(fake, kube):
    cluster, group, _queue = kube
    fake.put(jobset_object("huge", workers=4, gpumem=81920))  # 5 whole GPUs, quota 4
    job_id = _intake(cluster).jobs[f"JobSet {NS}/huge"]
    assert run_admission_cycle(group.pk).admitted == []
    assert not Placement.objects.filter(job_id=job_id).exists()
    assert fake.get("jobsets", "huge", NS)["spec"]["suspend"] is True


def deployment_object(name: str, replicas: int = 1) -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": NS, "labels": {wl.LABEL_QUEUE: "default"}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": template(1, labels={"app": name}),
        },
    }


def replica_pod(deployment: dict, name: str) -> dict:
    """A Pod as the ReplicaSet controller creates it from the (gated) template."""
    tpl = copy.deepcopy(deployment["spec"]["template"])
    tpl["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "1", "memory": "1Gi"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": NS,
            "labels": tpl["metadata"]["labels"],
            # the fake serves no ReplicaSets: the owner uid is the
            # Deployment's so that its garbage collector keeps the pod
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": f"{deployment['metadata']['name']}-rs",
                    "uid": deployment["metadata"]["uid"],
                    "controller": True,
                }
            ],
        },
        "spec": tpl["spec"],
    }


def test_deployment_scaled_up_gets_its_new_replica_admitted(fake, kube):
    cluster, group, _queue = kube
    fake.put(deployment_object("infer"))
    report = _intake(cluster)
    assert report.gated == [f"Deployment {NS}/infer"]
    dep = _get(fake, "deployments", "infer")
    tpl = dep["spec"]["template"]
    assert tpl["spec"]["schedulingGates"] == [{"name": wl.SCHEDULING_GATE}]
    assert tpl["metadata"]["labels"][wl.LABEL_QUEUE] == "default"
    _valid(dep, "apps/v1", "Deployment")

    fake.put(replica_pod(dep, "infer-a"))
    first = _intake(cluster).jobs[f"Pod {NS}/infer-a"]
    _admit(group, first)
    pod = fake.get("pods", "infer-a", NS)
    assert pod["spec"]["schedulingGates"] == []
    assert pod["metadata"]["annotations"]["nvidia.com/use-gpuuuid"]
    _valid(pod, "v1", "Pod")

    # scale 1 -> 2: the ReplicaSet creates a second gated pod
    dep["spec"]["replicas"] = 2
    fake.put(dep)
    fake.put(replica_pod(dep, "infer-b"))
    report = _intake(cluster)
    second = report.jobs[f"Pod {NS}/infer-b"]
    assert second != first and report.queued == [f"Pod {NS}/infer-b"]
    _admit(group, second)
    pod_b = fake.get("pods", "infer-b", NS)
    assert pod_b["spec"]["schedulingGates"] == []
    a_uuid = fake.get("pods", "infer-a", NS)["metadata"]["annotations"]["nvidia.com/use-gpuuuid"]
    assert pod_b["metadata"]["annotations"]["nvidia.com/use-gpuuuid"] != a_uuid
    assert Job.objects.get(pk=first).state == JobState.ADMITTED
    # a gated replica is one queued pod, not a console-run inference service
    assert Job.objects.get(pk=first).kind == JobKind.BATCH

    # preempted (the cycle's eviction, then its after-commit step): the replica is deleted,
    # and its job ends saying a replacement queues (the ReplicaSet makes a new gated pod)
    Job.objects.filter(pk=first).update(state=JobState.QUEUED)
    Placement.objects.filter(job_id=first).update(state=PlacementState.RELEASED)
    suspend_kube_job(first, "capacity reclaimed")
    assert fake.get("pods", "infer-a", NS) is None
    _intake(cluster)
    job = Job.objects.get(pk=first)
    assert job.state == JobState.CANCELLED and "replacement queues" in job.pending_reason


def test_preempted_job_is_suspended_again_with_its_templates_restored(
    fake, kube, django_capture_on_commit_callbacks
):
    cluster, group, _queue = kube
    PriorityClass.objects.create(name="low", value=0)
    PriorityClass.objects.create(name="high", value=10)
    fake.put(job_object("low", parallelism=4, priority_class="low", gpumem=81920))
    low = _intake(cluster).jobs[f"Job {NS}/low"]
    _admit(group, low)
    assert fake.get("jobs", "low", NS)["spec"]["suspend"] is False
    fake.put(job_object("high", parallelism=1, priority_class="high", gpumem=81920))
    high = _intake(cluster).jobs[f"Job {NS}/high"]
    with django_capture_on_commit_callbacks(execute=True):
        report = run_admission_cycle(group.pk)
    # preempt now, admit once the victim's pods are gone (its grace period ends)
    assert report.preempted == [low] and report.admitted == []
    assert set(Placement.objects.filter(job_id=low).values_list("state", flat=True)) == {
        PlacementState.TERMINATING
    }
    release_due_terminations(timezone.now() + timedelta(seconds=31))
    assert run_admission_cycle(group.pk).admitted == [high]
    obj = fake.get("jobs", "low", NS)
    assert obj["spec"]["suspend"] is True
    assert "affinity" not in obj["spec"]["template"]["spec"]  # the user's template again
    assert wl.ANNOTATION_ADMITTED not in obj["metadata"].get("annotations", {})
    assert obj["metadata"]["annotations"][wl.ANNOTATION_PENDING].startswith("preempted")
    assert any(r == "Suspended" and t == "Warning" for r, t, _ in _events(fake, "low"))
    assert Job.objects.get(pk=low).state == JobState.QUEUED
    row = KubeWorkload.objects.get(job_id=low)
    assert not row.recorded


def test_objects_without_the_label_are_left_alone(fake, kube):
    cluster, group, _queue = kube
    fake.put(job_object("mine", queue=None))
    fake.put(job_object("running", queue=None, suspend=False))
    before = {
        n: fake.get("jobs", n, NS)["metadata"]["resourceVersion"] for n in ("mine", "running")
    }
    fake.requests.clear()
    report = _intake(cluster)
    run_admission_cycle(group.pk)
    assert report.jobs == {} and not KubeWorkload.objects.exists()
    assert {
        n: fake.get("jobs", n, NS)["metadata"]["resourceVersion"] for n in ("mine", "running")
    } == before
    assert not [p for m, p in fake.requests if m != "GET"]
    assert all(
        f"labelSelector={wl.LABEL_QUEUE}" in p.replace("%2F", "/")
        for m, p in fake.requests
        if "jobs" in p or "deployments" in p
    )
    assert fake.list("events") == []


def test_object_in_a_namespace_of_no_tenant_is_refused_with_an_event(fake, kube):
    cluster, _group, _queue = kube
    fake.put(job_object("stray", ns="nobody"))
    report = _intake(cluster)
    assert "Job nobody/stray" in report.refused
    assert not Job.objects.exists()
    (event,) = _events(fake, "stray")
    assert event[:2] == ("NoTenant", "Warning") and "belongs to no tenant" in event[2]
    _valid(fake.list("events")[0], "v1", "Event")
    assert fake.get("jobs", "stray", "nobody")["spec"]["suspend"] is True
    _intake(cluster)  # refused again, the same event is not repeated
    assert len(_events(fake, "stray")) == 1


def test_invalid_hami_resources_refuse_the_object_and_name_the_field(fake, kube):
    cluster, _group, _queue = kube
    bad = job_object("bad")
    bad["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpumem"] = (
        "lots"
    )
    fake.put(bad)
    fake.put(job_object("good"))
    report = _intake(cluster)
    assert "nvidia.com/gpumem" in report.refused[f"Job {NS}/bad"]
    assert f"Job {NS}/good" in report.jobs  # the rest keeps working


def test_intake_watches_between_resyncs_and_relists_after_410(fake, kube, settings):
    from scheduling.services.intake import intake_cluster

    # only the 410 may make a turn list again: three turns with 6 s watches can pass the
    # default 30 s resync on a loaded machine, and a due resync lists whatever the watch saw
    settings.KUBE_INTAKE_RESYNC_S = 3600
    cluster, _group, _queue = kube
    first = intake_cluster(cluster.pk, watch_s=0)  # no resume point yet: a full list
    assert first.jobs == {}
    cluster.refresh_from_db()
    assert cluster.intake_resource_versions["Job"]
    fake.put(job_object("late"))
    fake.requests.clear()
    report = intake_cluster(cluster.pk, watch_s=6)
    assert report.events >= 1 and f"Job {NS}/late" in report.jobs  # seen by the watch
    listed = [p for m, p in fake.requests if "/jobs" in p and "watch=" not in p]
    assert listed == [] and any("watch=true" in p for m, p in fake.requests)
    # the object is deleted: the watch's DELETED event cancels the job
    fake.delete(KINDS[("batch", "jobs")], "v1", NS, "late", None)
    report = intake_cluster(cluster.pk, watch_s=6)
    assert report.gone == [f"Job {NS}/late"]
    assert Job.objects.get(name=f"Job/{NS}/late").state == JobState.CANCELLED
    fake.put(job_object("later"))
    fake.compact()  # the watch history is gone: 410, the next turn lists again
    intake_cluster(cluster.pk, watch_s=6)
    cluster.refresh_from_db()
    assert cluster.intake_resource_versions["Job"] == ""
    report = intake_cluster(cluster.pk, watch_s=0)
    assert report.queued == [f"Job {NS}/later"]  # found by the relist
    assert KubeWorkload.objects.filter(name="late").count() == 1


def test_dra_mode_records_a_claim_template_per_pod_set(fake, tmp_path, settings):
    settings.KUBE_RETRY_BASE_DELAY_S = 0.0
    cluster = make_kube_cluster(fake, tmp_path, name="kd", mode="dra")
    fake.put(nvidia_node("gpu-1", ("GPU-aaaa", "GPU-bbbb")))
    sync_cluster_inventory(cluster.pk, now=datetime(2025, 6, 1, 12, 0, tzinfo=UTC))
    group = make_group("g1", models=(A100,))
    tenant, _queue = make_tenant("team-a", group, devices_milli=4000)
    ns = tenant_namespace(tenant, cluster)
    fake.put(job_object("dra", ns=ns, parallelism=2))
    job_id = sync_cluster_workloads(cluster.pk).jobs[f"Job {ns}/dra"]
    _admit(group, job_id)
    obj = _get(fake, "jobs", "dra", ns)
    spec = obj["spec"]["template"]["spec"]
    (claim_ref,) = spec["resourceClaims"]
    template = fake.get("resourceclaimtemplates", claim_ref["resourceClaimTemplateName"], ns)
    assert template is not None
    (request,) = template["spec"]["spec"]["devices"]["requests"]
    uuids = {
        p.assignment["containers"][0]["devices"][0]["uuid"]
        for p in Placement.objects.filter(job_id=job_id)
    }
    cel = request["exactly"]["selectors"][0]["cel"]["expression"]
    assert all(f'"{u}"' in cel for u in uuids)
    limits = spec["containers"][0]["resources"]["limits"]
    assert "nvidia.com/gpu" not in limits and "nvidia.com/gpumem" not in limits
    assert spec["containers"][0]["resources"]["claims"] == [
        {"name": claim_ref["name"], "request": request["name"]}
    ]
    assert obj["spec"]["suspend"] is False
    _valid(obj, "batch/v1", "Job")
    _valid(template, "resource.k8s.io/v1", "ResourceClaimTemplate")


def test_a_workloads_use_and_nouse_type_annotations_become_the_jobs_model_lists(fake, kube):
    """HAMi's nvidia.com/use-gputype / nouse-gputype on the pod template are what the job's
    containers accept and refuse (whole-token match in the cycle)."""
    cluster, _group, _queue = kube
    obj = job_object("typed")
    obj["spec"]["template"]["metadata"]["annotations"] = {
        "nvidia.com/use-gputype": "A100",
        "nvidia.com/nouse-gputype": "H200,H20",
    }
    fake.put(obj)
    job_id = _intake(cluster).jobs[f"Job {NS}/typed"]
    (c,) = Job.objects.get(pk=job_id).pod_sets.get().containers.all()
    assert (c.device_types, c.device_types_exclude) == (["A100"], ["H200", "H20"])


def test_policy_annotations_in_any_case_are_taken_in_and_unknown_ones_refused(fake, kube):
    """Issue 29: ``" Spread "`` is HAMi's ``spread`` (the API's normaliser); an unknown word is
    refused with an Event naming the valid ones."""
    cluster, _group, _queue = kube
    spaced = job_object("spaced")
    spaced["spec"]["template"]["metadata"]["annotations"] = {
        "hami.io/node-scheduler-policy": " Spread ",
        "hami.io/gpu-scheduler-policy": "BINPACK",
    }
    unknown = job_object("unknown")
    unknown["spec"]["template"]["metadata"]["annotations"] = {
        "hami.io/gpu-scheduler-policy": "Sideways"
    }
    fake.put(spaced)
    fake.put(unknown)
    report = _intake(cluster)
    assert f"Job {NS}/spaced" in report.jobs
    message = report.refused[f"Job {NS}/unknown"]
    assert "'sideways' is not one of binpack, spread, topology-aware, mutex" in message
    (event,) = _events(fake, "unknown")
    assert event[:2] == ("InvalidWorkload", "Warning")


def test_a_users_suspend_holds_the_job_until_the_user_resumes_it(fake, kube, settings):
    """kubectl suspends an admitted, running Job: the console frees its devices once the pods
    had their grace period and keeps the object suspended (the job is ``stopped``) pass after
    pass; taking the suspend off queues it again, and admission releases it anew."""
    settings.ADMISSION_TERMINATION_GRACE_S = 30.0
    cluster, group, _queue = kube
    fake.put(job_object("hold", gpumem=81920))
    job_id = _intake(cluster).jobs[f"Job {NS}/hold"]
    _admit(group, job_id)
    running = _get(fake, "jobs", "hold")
    running["status"] = {"active": 1}
    fake.put(running)
    _intake(cluster)
    assert Job.objects.get(pk=job_id).state == JobState.RUNNING
    (placement,) = Placement.objects.filter(job_id=job_id)

    # the user: kubectl patch job hold -p '{"spec":{"suspend":true}}'
    held = _get(fake, "jobs", "hold")
    held["spec"]["suspend"] = True
    fake.put(held)
    report = _intake(cluster)
    obj = fake.get("jobs", "hold", NS)
    assert obj["spec"]["suspend"] is True  # not undone
    assert "affinity" not in obj["spec"]["template"]["spec"]  # the user's template again
    assert wl.ANNOTATION_ADMITTED not in obj["metadata"].get("annotations", {})
    job = Job.objects.get(pk=job_id)
    assert job.state == JobState.STOPPED
    assert job.pending_reason.startswith(f"suspended by its user in the cluster (Job {NS}/hold)")
    assert report.stopped == [f"Job {NS}/hold"]
    placement.refresh_from_db()
    # the pods keep the devices while the Job controller deletes them (grace period)
    assert placement.state == PlacementState.TERMINATING
    assert KubeWorkload.objects.get(job_id=job_id).recorded is False
    assert ("Suspended", "Normal", job.pending_reason) in _events(fake, "hold")

    # pass after pass, the user's suspend wins; the job is not queued
    for _ in range(2):
        _intake(cluster)
        assert fake.get("jobs", "hold", NS)["spec"]["suspend"] is True
        assert Job.objects.get(pk=job_id).state == JobState.STOPPED
    assert run_admission_cycle(group.pk).admitted == []
    release_due_terminations(timezone.now() + timedelta(seconds=31))
    placement.refresh_from_db()
    assert placement.state == PlacementState.RELEASED

    # the user resumes: queued again, held back by the console until admitted
    resumed = _get(fake, "jobs", "hold")
    resumed["spec"]["suspend"] = False
    fake.put(resumed)
    report = _intake(cluster)
    assert report.resumed == [f"Job {NS}/hold"]
    assert fake.get("jobs", "hold", NS)["spec"]["suspend"] is True
    job = Job.objects.get(pk=job_id)
    assert (job.state, job.pending_reason) == (JobState.QUEUED, "")
    _admit(group, job_id)
    obj = fake.get("jobs", "hold", NS)
    assert obj["spec"]["suspend"] is False
    assert obj["metadata"]["annotations"][wl.ANNOTATION_ADMITTED] == str(job_id)
    assert Job.objects.get(pk=job_id).state == JobState.ADMITTED
    kinds = list(Job.objects.get(pk=job_id).events.values_list("kind", flat=True))
    assert kinds.count("stopped") == 1 and kinds.count("resumed") == 1


def test_a_user_suspended_object_deleted_from_the_cluster_cancels_its_job(fake, kube):
    cluster, group, _queue = kube
    fake.put(job_object("gone"))
    job_id = _intake(cluster).jobs[f"Job {NS}/gone"]
    _admit(group, job_id)
    held = _get(fake, "jobs", "gone")
    held["spec"]["suspend"] = True
    fake.put(held)
    _intake(cluster)
    assert Job.objects.get(pk=job_id).state == JobState.STOPPED
    fake.delete(KINDS[("batch", "jobs")], "v1", NS, "gone", None)
    _intake(cluster)
    assert Job.objects.get(pk=job_id).state == JobState.CANCELLED
    assert set(Placement.objects.filter(job_id=job_id).values_list("state", flat=True)) == {
        PlacementState.RELEASED
    }
