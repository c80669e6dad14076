"""Issue 29: HAMi's per-pod device pins on a workload's pod template steer the console's
placement as they steer HAMi's (``nvidia.com/use-gpuuuid``, ``nvidia.com/nouse-gpuuuid``,
``nvidia.com/numa-bind``; /work/shared/docs/hami.md), against the HTTP fake API server."""

from __future__ import annotations

import pytest

from scheduling.models import Job, Placement
from scheduling.selectors.snapshot import build_placement_request
from tests.kube.test_kube_intake import NS, _admit, _intake, job_object, kube  # noqa: F401 (fixtures)

pytestmark = [pytest.mark.django_db, pytest.mark.fake_apiserver(namespaces=None)]


def _pinned(name: str, annotations: dict) -> dict:
    obj = job_object(name)
    obj["spec"]["template"]["metadata"]["annotations"] = annotations
    return obj


@pytest.mark.parametrize(
    ("annotations", "uuid"),
    [
        ({"nvidia.com/use-gpuuuid": "GPU-dddd"}, "GPU-dddd"),
        ({"nvidia.com/nouse-gpuuuid": "GPU-aaaa, GPU-bbbb,GPU-dddd"}, "GPU-cccc"),
    ],
)
def test_a_templates_uuid_pins_decide_the_device(fake, kube, annotations, uuid):  # noqa: F811
    cluster, group, _queue = kube
    fake.put(_pinned("pinned", annotations))
    job_id = _intake(cluster).jobs[f"Job {NS}/pinned"]
    _admit(group, job_id)
    (placement,) = Placement.objects.filter(job_id=job_id)
    assert [d["uuid"] for d in placement.assignment["containers"][0]["devices"]] == [uuid]
    tpl = fake.get("jobs", "pinned", NS)["spec"]["template"]
    assert tpl["metadata"]["annotations"]["nvidia.com/use-gpuuuid"] == uuid


def test_a_templates_numa_bind_and_pins_reach_the_placement_request(fake, kube):  # noqa: F811
    cluster, group, _queue = kube
    fake.put(
        _pinned(
            "numa",
            {
                "nvidia.com/numa-bind": "true",
                "nvidia.com/use-gpuuuid": "GPU-aaaa,GPU-bbbb",
                "example.com/owner": "team a",  # not a pin: not the job's
            },
        )
    )
    job = Job.objects.get(pk=_intake(cluster).jobs[f"Job {NS}/numa"])
    assert job.annotations == {
        "nvidia.com/numa-bind": "true",
        "nvidia.com/use-gpuuuid": "GPU-aaaa,GPU-bbbb",
    }
    (pod,) = build_placement_request(job, group).pods
    (device,) = pod.containers[0].devices
    assert (device.numa_bind, device.uuids_include, device.uuids_exclude) == (
        True,
        ("GPU-aaaa", "GPU-bbbb"),
        (),
    )


def test_pod_sets_that_pin_differently_are_refused(fake, kube):  # noqa: F811
    """One job carries one set of pins (its annotations); a JobSet whose templates pin
    different devices is refused naming the annotation, not admitted with either's pins."""
    cluster, _group, _queue = kube
    a = _pinned("x", {"nvidia.com/use-gpuuuid": "GPU-aaaa"})["spec"]["template"]
    b = _pinned("y", {"nvidia.com/use-gpuuuid": "GPU-cccc"})["spec"]["template"]
    fake.put(
        {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "metadata": {
                "name": "split",
                "namespace": NS,
                "labels": {"console.llmops.io/queue": "default"},
            },
            "spec": {
                "suspend": True,
                "replicatedJobs": [
                    {"name": "a", "replicas": 1, "template": {"spec": {"template": a}}},
                    {"name": "b", "replicas": 1, "template": {"spec": {"template": b}}},
                ],
            },
        }
    )
    report = _intake(cluster)
    assert "nvidia.com/use-gpuuuid" in report.refused[f"JobSet {NS}/split"]
    assert not Job.objects.exists()


def test_a_nul_byte_in_a_pin_refuses_that_object_only(fake, kube):  # noqa: F811
    """A NUL in a pin annotation reached ``bulk_create`` and PostgreSQL refused the whole
    intake pass (``\\u0000 cannot be converted to text``): one member's object stopped every
    tenant's intake in the cluster (found by the review). The intake asks the API's
    annotation rule (``pod_annotation_errors``): that object is refused, the others taken in."""
    cluster, _group, _queue = kube
    fake.put(_pinned("good", {"nvidia.com/use-gpuuuid": "GPU-aaaa"}))
    fake.put(_pinned("nul", {"nvidia.com/use-gpuuuid": "GPU-aaaa\x00"}))
    report = _intake(cluster)
    assert "NUL characters are not allowed" in report.refused[f"Job {NS}/nul"]
    assert set(report.jobs) == {f"Job {NS}/good"}
    assert list(Job.objects.values_list("annotations", flat=True)) == [
        {"nvidia.com/use-gpuuuid": "GPU-aaaa"}
    ]
