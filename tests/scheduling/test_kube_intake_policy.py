"""Issue 29: what a tenant may ask of the console through an object it creates with kubectl,
against the HTTP fake API server. Its priority comes from a priority class resolved exactly
as ``POST /api/jobs/`` resolves it (the queue's allowed classes and default class; no raw
values); a refusal is a Warning Event saying why, and the object stays held back."""

from __future__ import annotations

import pytest

from scheduling.kube import workloads as wl
from scheduling.models import Job, KubeWorkload, PriorityClass
from tests.scheduling.test_kube_intake import NS, _events, _intake, _valid, fake, job_object, kube  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db


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
