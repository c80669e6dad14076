"""Probes of the intake (issue 18) with malformed objects: each is refused with an event naming
the field, nothing is written for it, and the objects next to it are still taken in."""

from __future__ import annotations

import pytest

from scheduling.kube import workloads as wl
from scheduling.models import Job, JobContainer
from tests.kube.test_kube_intake import NS, _events, _intake, job_object, kube  # noqa: F401 (fixtures)

pytestmark = [pytest.mark.django_db, pytest.mark.fake_apiserver(namespaces=None)]

LIMITS = ("spec", "template", "spec", "containers", 0, "resources", "limits")


def _set(obj: dict, path: tuple, value) -> dict:
    target = obj
    for key in path[:-1]:
        target = target[key]
    if value is None:
        target.pop(path[-1], None)
    else:
        target[path[-1]] = value
    return obj


def _limit(name: str, value) -> tuple[tuple, object]:
    return (*LIMITS, name), value


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        (("spec", "parallelism"), 10**9, "1000000000 pods"),
        (("spec", "parallelism"), -1, "parallelism"),
        (("spec", "parallelism"), "3", "parallelism"),
        (("spec", "template"), None, "spec.template"),
        (("spec", "template", "spec", "containers"), [], "containers"),
        (*_limit("nvidia.com/gpu", "-1"), "nvidia.com/gpu"),
        (*_limit("nvidia.com/gpu", "1.5"), "nvidia.com/gpu"),
        (*_limit("nvidia.com/gpu", "100000"), "100000 devices"),
        (*_limit("nvidia.com/gpumem", str(10**15)), "device memory"),
        (*_limit("nvidia.com/gpucores", "-5"), "nvidia.com/gpucores"),
        # issue 29: refused in HAMi's words (HAMi clamps it to 100), no longer capped
        (*_limit("nvidia.com/gpucores", "150"), "gpucores 150: core limit can't exceed 100"),
        (*_limit("cpu", "1e30"), "cpu"),
        (*_limit("memory", "1e30"), "memory"),
    ],
)
def test_a_malformed_job_is_refused_naming_the_field_and_the_rest_is_taken_in(
    fake, kube, path, value, field
):  # noqa: F811
    cluster, _group, _queue = kube
    bad = job_object("bad")
    bad["spec"].pop("completions")  # parallelism alone sets the pod count
    fake.put(_set(bad, path, value))
    fake.put(job_object("good"))
    report = _intake(cluster)
    assert f"Job {NS}/good" in report.jobs
    assert f"Job {NS}/bad" in report.refused, report.jobs
    assert field in report.refused[f"Job {NS}/bad"]
    assert Job.objects.count() == 1
    (event,) = _events(fake, "bad")
    assert event[:2] == ("InvalidWorkload", "Warning")


def test_a_jobset_of_absurd_size_is_refused_not_overflowed(fake, kube):  # noqa: F811
    cluster, _group, _queue = kube
    template = job_object("x")["spec"]
    fake.put(
        {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "metadata": {"name": "huge", "namespace": NS, "labels": {wl.LABEL_QUEUE: "default"}},
            "spec": {
                "suspend": True,
                "replicatedJobs": [
                    {
                        "name": "w",
                        "replicas": 100000,
                        "template": {
                            "spec": {**template, "parallelism": 100000, "completions": 100000}
                        },
                    }
                ],
            },
        }
    )
    fake.put(job_object("good"))
    report = _intake(cluster)
    assert f"Job {NS}/good" in report.jobs
    assert "pods" in report.refused[f"JobSet {NS}/huge"]
    assert not JobContainer.objects.filter(job__name__contains="huge").exists()


@pytest.mark.parametrize(
    "status",
    [{"active": "many"}, {"active": [1]}, {"conditions": "Complete"}, {"conditions": [None, 3]}],
)
def test_a_garbled_status_does_not_stop_the_sync(fake, kube, status):  # noqa: F811
    cluster, _group, _queue = kube
    odd = job_object("odd")
    odd["status"] = status
    fake.put(odd)
    fake.put(job_object("good"))
    report = _intake(cluster)
    assert f"Job {NS}/good" in report.jobs
    assert f"Job {NS}/odd" in report.jobs  # a status we cannot read counts as no pods yet
