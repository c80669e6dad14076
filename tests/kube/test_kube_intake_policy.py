"""Issue 29: what a tenant may ask of the console through an object it creates with kubectl,
against the HTTP fake API server. Its priority comes from a priority class resolved exactly
as ``POST /api/jobs/`` resolves it (the queue's allowed classes and default class; no raw
values); a refusal is a Warning Event saying why, and the object stays held back."""

from __future__ import annotations

import pytest

from scheduling.kube import workloads as wl
from scheduling.models import Job, KubeWorkload, PriorityClass
from tests.kube.test_kube_intake import (  # noqa: F401 (fixtures)
    NS,
    _events,
    _get,
    _intake,
    _valid,
    deployment_object,
    job_object,
    kube,
    replica_pod,
)

pytestmark = [pytest.mark.django_db, pytest.mark.fake_apiserver(namespaces=None)]


@pytest.fixture
def classes(kube):
    """Classes ``high`` (100, not preemptible), ``low`` (1) and ``critical`` (1000); the
    queue allows ``high`` and ``low``, default ``low``."""
    _cluster, _group, queue = kube
    high = PriorityClass.objects.create(name="high", value=100, preemptible=False)
    low = PriorityClass.objects.create(name="low", value=1)
    PriorityClass.objects.create(name="critical", value=1000)
    queue.allowed_priority_classes.set([high, low])
    queue.default_priority_class = low
    queue.save(update_fields=["default_priority_class"])
    return queue


def _labelled(name: str, labels: dict, *, suspend: bool = True) -> dict:
    obj = job_object(name, suspend=suspend)
    obj["metadata"]["labels"].update(labels)
    return obj


def test_the_priority_class_label_sets_the_jobs_class_and_the_default_applies(fake, kube, classes):  # noqa: F811
    cluster, _group, _queue = kube
    fake.put(_labelled("urgent", {wl.LABEL_PRIORITY_CLASS: "high"}))
    fake.put(_labelled("plain", {}))
    report = _intake(cluster)
    urgent = Job.objects.get(pk=report.jobs[f"Job {NS}/urgent"])
    plain = Job.objects.get(pk=report.jobs[f"Job {NS}/plain"])
    assert (urgent.priority_class.name, urgent.priority, urgent.preemptible) == ("high", 100, False)
    assert (plain.priority_class.name, plain.priority, plain.preemptible) == ("low", 1, True)


@pytest.mark.parametrize(
    ("labels", "says"),
    [
        # a tenant cannot give itself any priority with a raw value
        ({wl.LABEL_PRIORITY: "1000000"}, "raw priority is for platform admins"),
        ({wl.LABEL_PRIORITY_CLASS: "critical"}, "critical is not allowed in queue default"),
        ({wl.LABEL_PRIORITY_CLASS: "nope"}, "No priority class named nope."),
        (
            {wl.LABEL_PRIORITY_CLASS: "high", wl.LABEL_PRIORITY: "5"},
            "raw priority is for platform admins",
        ),
    ],
)
def test_a_priority_the_queue_refuses_refuses_the_object_with_an_event(
    fake, kube, classes, labels, says
):  # noqa: F811
    cluster, _group, _queue = kube
    fake.put(_labelled("greedy", labels))
    fake.put(_labelled("fine", {}))
    report = _intake(cluster)
    assert f"Job {NS}/fine" in report.jobs  # the rest keeps working
    assert says in report.refused[f"Job {NS}/greedy"]
    assert not Job.objects.filter(name=f"Job/{NS}/greedy").exists()
    (event,) = _events(fake, "greedy")
    assert event[:2] == ("PriorityRefused", "Warning") and says in event[2]
    _valid(fake.list("events")[0], "v1", "Event")
    assert fake.get("jobs", "greedy", NS)["spec"]["suspend"] is True
    assert KubeWorkload.objects.get(name="greedy").job_id is None


def test_a_refused_object_created_unsuspended_is_held_back_and_taken_in_once_fixed(
    fake, kube, classes
):  # noqa: F811
    """Refusing must not let the object run outside admission: it is suspended (as Kueue's
    webhook suspends a job it cannot queue); relabelled, it is taken in."""
    cluster, _group, _queue = kube
    fake.put(_labelled("eager", {wl.LABEL_PRIORITY_CLASS: "critical"}, suspend=False))
    report = _intake(cluster)
    assert f"Job {NS}/eager" in report.refused
    obj = fake.get("jobs", "eager", NS)
    assert obj["spec"]["suspend"] is True
    assert "critical is not allowed" in obj["metadata"]["annotations"][wl.ANNOTATION_PENDING]
    _valid(obj, "batch/v1", "Job")
    fake.put(_labelled("eager", {wl.LABEL_PRIORITY_CLASS: "high"}))  # kubectl label --overwrite
    report = _intake(cluster)
    assert Job.objects.get(pk=report.jobs[f"Job {NS}/eager"]).priority_class.name == "high"


def test_a_queue_that_allows_classes_but_has_no_default_needs_the_label(fake, kube, classes):  # noqa: F811
    cluster, _group, queue = kube
    queue.default_priority_class = None
    queue.save(update_fields=["default_priority_class"])
    fake.put(_labelled("bare", {}))
    report = _intake(cluster)
    assert (
        "Queue default needs a priority class (allowed: high, low)"
        in (report.refused[f"Job {NS}/bare"])
    )


def test_a_queue_without_classes_gives_priority_zero(fake, kube):  # noqa: F811
    cluster, _group, _queue = kube
    fake.put(_labelled("free", {}))
    job = Job.objects.get(pk=_intake(cluster).jobs[f"Job {NS}/free"])
    assert (job.priority_class, job.priority, job.preemptible) == (None, 0, True)


# -- Pod Security: what the namespace's baseline level forbids is refused at intake --------------

CONTAINER = ("spec", "template", "spec", "containers", 0)


def _with(name: str, path: tuple, value, *, suspend: bool = True) -> dict:
    """A Job whose template has ``value`` at ``path`` (lists indexed by int)."""
    obj = job_object(name, suspend=suspend)
    target = obj
    for key in path[:-1]:
        target = target[key] if isinstance(key, int) else target.setdefault(key, {})
    target[path[-1]] = value
    return obj


@pytest.mark.parametrize(
    ("path", "value", "says"),
    [
        (
            (*CONTAINER, "securityContext"),
            {"privileged": True},
            "spec.template.spec.containers[0].securityContext.privileged: true",
        ),
        (("spec", "template", "spec", "hostNetwork"), True, "spec.template.spec.hostNetwork"),
        (("spec", "template", "spec", "hostPID"), True, "spec.template.spec.hostPID"),
        (("spec", "template", "spec", "hostIPC"), True, "spec.template.spec.hostIPC"),
        (
            (*CONTAINER, "securityContext"),
            {"capabilities": {"add": ["NET_BIND_SERVICE", "SYS_ADMIN"]}},
            "capabilities.add: SYS_ADMIN",
        ),
        (
            ("spec", "template", "spec", "volumes"),
            [{"name": "root", "hostPath": {"path": "/"}}],
            "spec.template.spec.volumes[0].hostPath: root",
        ),
        (
            (*CONTAINER, "ports"),
            [{"containerPort": 80, "hostPort": 80}],
            "containers[0].ports[0].hostPort: 80",
        ),
        (
            ("spec", "template", "spec", "initContainers"),
            [{"name": "setup", "image": "busybox:1.37", "securityContext": {"privileged": True}}],
            "spec.template.spec.initContainers[0].securityContext.privileged: true",
        ),
    ],
)
def test_a_template_the_baseline_level_forbids_is_refused_with_an_event(
    fake, kube, path, value, says
):  # noqa: F811
    cluster, _group, _queue = kube
    fake.put(_with("root", path, value))
    fake.put(job_object("fine"))
    report = _intake(cluster)
    assert f"Job {NS}/fine" in report.jobs
    message = report.refused[f"Job {NS}/root"]
    assert says in message and "Pod Security level baseline" in message
    assert not Job.objects.filter(name=f"Job/{NS}/root").exists()
    (event,) = _events(fake, "root")
    assert event[:2] == ("PodSecurityRefused", "Warning") and says in event[2]
    _valid(fake.list("events")[0], "v1", "Event")
    _valid(fake.get("jobs", "root", NS), "batch/v1", "Job")


def test_what_baseline_allows_is_taken_in(fake, kube):  # noqa: F811
    cluster, _group, _queue = kube
    fake.put(
        _with(
            "tame",
            (*CONTAINER, "securityContext"),
            {"privileged": False, "capabilities": {"add": ["NET_BIND_SERVICE", "CHOWN"]}},
        )
    )
    assert f"Job {NS}/tame" in _intake(cluster).jobs


@pytest.mark.parametrize(("level", "taken_in"), [("privileged", True), ("restricted", False)])
def test_the_setting_decides_whether_a_privileged_template_is_refused(
    fake, kube, settings, level, taken_in
):  # noqa: F811
    settings.TENANT_POD_SECURITY_LEVEL = level
    cluster, _group, _queue = kube
    fake.put(_with("root", (*CONTAINER, "securityContext"), {"privileged": True}))
    report = _intake(cluster)
    assert (f"Job {NS}/root" in report.jobs) is taken_in
    assert (f"Job {NS}/root" in report.refused) is not taken_in


def test_a_privileged_jobset_created_unsuspended_is_held_back(fake, kube):  # noqa: F811
    """The path names the replicated job's template; the JobSet is suspended, not left to
    run outside admission."""
    cluster, _group, _queue = kube
    tpl = job_object("x")["spec"]["template"]
    tpl["spec"]["containers"][0]["securityContext"] = {"privileged": True}
    fake.put(
        {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "metadata": {"name": "js", "namespace": NS, "labels": {wl.LABEL_QUEUE: "default"}},
            "spec": {
                "suspend": False,
                "replicatedJobs": [
                    {"name": "workers", "replicas": 1, "template": {"spec": {"template": tpl}}}
                ],
            },
        }
    )
    report = _intake(cluster)
    assert (
        "spec.replicatedJobs.0.template.spec.template.spec.containers[0].securityContext"
        ".privileged: true" in report.refused[f"JobSet {NS}/js"]
    )
    assert fake.get("jobsets", "js", NS)["spec"]["suspend"] is True
    assert not Job.objects.exists()


def test_a_host_network_replica_of_a_deployment_is_refused_and_stays_gated(fake, kube):  # noqa: F811
    cluster, _group, _queue = kube
    dep = deployment_object("infer")
    dep["spec"]["template"]["spec"]["hostNetwork"] = True
    fake.put(dep)
    _intake(cluster)  # gates the template (the replicas must never run unadmitted)
    fake.put(replica_pod(_get(fake, "deployments", "infer"), "infer-a"))
    report = _intake(cluster)
    assert "spec.hostNetwork: true" in report.refused[f"Pod {NS}/infer-a"]
    pod = fake.get("pods", "infer-a", NS)
    assert pod["spec"]["schedulingGates"] == [{"name": wl.SCHEDULING_GATE}]
    assert not Job.objects.exists()
    assert ("PodSecurityRefused", "Warning") in [e[:2] for e in _events(fake, "infer-a")]


# -- unknown queue / invalid workload: held back like any refusal in a tenant namespace ---------


def _bad_gpumem(obj: dict) -> dict:
    obj["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpumem"] = (
        "lots"
    )
    return obj


def _bad_policy(obj: dict) -> dict:
    obj["spec"]["template"]["metadata"]["annotations"] = {"hami.io/gpu-scheduler-policy": "Up"}
    return obj


@pytest.mark.parametrize(
    ("obj", "reason", "says"),
    [
        (job_object("stray", queue="nope", suspend=False), "UnknownQueue", "has no queue 'nope'"),
        (_bad_gpumem(job_object("stray", suspend=False)), "InvalidWorkload", "nvidia.com/gpumem"),
        (_bad_policy(job_object("stray", suspend=False)), "InvalidWorkload", "'up' is not one of"),
    ],
)
def test_an_unsuspended_object_refused_in_a_tenant_namespace_is_suspended(
    fake, kube, obj, reason, says
):  # noqa: F811
    """Issue 29: Kueue keeps a workload it cannot queue suspended; a refusal for an unknown
    queue or an invalid workload must not leave the object running outside admission."""
    cluster, _group, _queue = kube
    fake.put(obj)
    report = _intake(cluster)
    assert says in report.refused[f"Job {NS}/stray"]
    assert report.suspended == [f"Job {NS}/stray"]
    stored = fake.get("jobs", "stray", NS)
    assert stored["spec"]["suspend"] is True
    assert says in stored["metadata"]["annotations"][wl.ANNOTATION_PENDING]
    _valid(stored, "batch/v1", "Job")
    events = _events(fake, "stray")
    assert (reason, "Warning") in [e[:2] for e in events]
    (suspended,) = [e for e in events if e[0] == "Suspended"]
    assert says in suspended[2]
    assert not Job.objects.exists()
    assert KubeWorkload.objects.get(name="stray").job_id is None


def test_an_unsuspended_object_in_a_namespace_of_no_tenant_is_left_as_it_is(fake, kube):  # noqa: F811
    """Not a tenant's namespace: not the console's to hold back (only the Warning Event)."""
    cluster, _group, _queue = kube
    fake.put(_bad_gpumem(job_object("stray", ns="nobody", suspend=False)))
    fake.put(job_object("other", ns="nobody", suspend=False))
    report = _intake(cluster)
    assert {f"Job nobody/{n}" for n in ("stray", "other")} <= report.refused.keys()
    assert report.suspended == []
    assert fake.get("jobs", "stray", "nobody")["spec"]["suspend"] is False
    assert fake.get("jobs", "other", "nobody")["spec"]["suspend"] is False
