"""Submit-time truth: a job that can never fit any node of its group (by node shape, not by
current load) is refused with the reason and nothing is saved; one that fits, even if it must
wait, is accepted. World: g1 = two nodes of two A100-80GB (81920 MiB)."""

import pytest

from scheduling.models import Job
from tests.api.test_api_directory import as_user

pytestmark = pytest.mark.django_db


def _post(client, queue, name, container, pods=1):
    return client.post(
        "/api/jobs/",
        {
            "queue": queue.pk,
            "name": name,
            "cpu_milli": 1000,
            "host_memory_mib": 1024,
            "pod_count": pods,
            "containers": [container],
        },
        format="json",
    )


@pytest.mark.parametrize(
    ("container", "words"),
    [
        ({"device_count": 3}, "3 NVIDIA devices per pod"),  # 2 per node
        ({"device_count": 1, "device_memory_mib": 102400}, ""),  # 100 GiB > 80 GiB
        ({"device_count": 1, "vendor": "Ascend"}, "has no Ascend devices"),  # NVIDIA-only group
    ],
)
def test_never_fitting_jobs_are_refused_with_the_reason(api, world, container, words):
    client = as_user(api, world["alice"])
    response = _post(client, world["queue_a"], "never", container)
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "never_fits" and words in error["message"]
    assert not Job.objects.filter(name="never").exists()


def test_a_job_that_must_wait_is_accepted(api, world):
    client = as_user(api, world["alice"])
    # two whole devices: both nodes are partly booked now, but an empty node holds it
    response = _post(client, world["queue_a"], "waits", {"device_count": 2})
    assert response.status_code == 201, response.content
    assert Job.objects.get(name="waits").state == "queued"
