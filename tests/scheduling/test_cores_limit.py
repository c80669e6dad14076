"""Issue 29: a device request above 100 % cores per device (``nvidia.com/gpucores: 150``) is
refused, not silently capped. HAMi's Fit logs "core limit can't exceed 100" and books 100 %
(``pkg/device/nvidia/device.go``); the console answers with HAMi's words instead: a 400 field
error from the API, a form error on the page (the placement core refuses it too,
tests/placement/test_fit_rules.py; the intake, tests/kube/test_kube_intake_probe.py)."""

import pytest

from scheduling.models import Job
from tests.builders import make_cluster, make_group, make_tenant, make_user, submit_form

pytestmark = pytest.mark.django_db

HAMI_WORDS = "core limit can't exceed 100"


@pytest.fixture
def alice():
    make_cluster("c1", nodes=1, gpus=2)
    team, queue = make_tenant("team-a", make_group("g1"), devices_milli=10_000)
    return queue, make_user("alice", team, "member")


def test_api_refuses_cores_above_100_in_hamis_words(api, alice):
    queue, user = alice
    api.force_authenticate(user)
    body = {
        "queue": queue.pk,
        "name": "greedy",
        "containers": [{"device_count": 1, "device_memory_mib": 1024, "cores_percent": 150}],
    }
    response = api.post("/api/jobs/", body, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {
        "containers[0].cores_percent": [f"{HAMI_WORDS} (percent of one device)."]
    }
    body["containers"][0]["cores_percent"] = 100
    assert api.post("/api/jobs/", body, format="json").status_code == 201
    assert Job.objects.get().containers.get().cores_percent == 100


def test_submit_form_refuses_cores_above_100_in_hamis_words(client, alice):
    queue, user = alice
    client.force_login(user)
    form = submit_form(queue, "greedy", cores_percent=150)
    response = client.post("/jobs/new/", form)
    assert response.status_code == 200
    assert response.context["form"].errors == {
        "cores_percent": [f"{HAMI_WORDS} (percent of one device)."]
    }
    assert not Job.objects.exists()
