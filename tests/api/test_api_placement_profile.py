"""The placement profile of a resource group through the API (admin writes, 400 with field
errors) and per-job HAMi policy annotations (stored, shown, refused where not allowed)."""

import pytest

from scheduling.models import Device, Job, Placement
from scheduling.services.cycle import run_admission_cycle
from tenants.models import ResourceGroup
from tests.api.test_api_directory import as_user

pytestmark = pytest.mark.django_db


def _job(queue, **extra):
    body = {
        "queue": queue.pk,
        "name": "eval",
        "containers": [{"device_count": 1, "memory_percent": 50, "cores_percent": 50}],
    }
    body.update(extra)
    return body


def test_admin_sets_the_profile_and_reads_it_back(api, world):
    client = as_user(api, world["root"])
    url = f"/api/resource-groups/{world['group'].pk}/"
    assert client.get(url).json()["fragmentation_policy"] == "none"
    response = client.patch(
        url,
        {
            "node_policy": "spread",
            "device_policy": "topology-aware",
            "fragmentation_policy": "FragGuard",
            "pod_policy_override": False,
        },
        format="json",
    )
    assert response.status_code == 200, response.content
    group = ResourceGroup.objects.get(pk=world["group"].pk)
    assert (
        group.node_policy,
        group.device_policy,
        group.fragmentation_policy,
        group.pod_policy_override,
    ) == ("spread", "topology-aware", "FragGuard", False)
    assert client.get(url).json()["node_policy"] == "spread"


def test_bad_profile_values_are_400_with_field_errors_and_nothing_changes(api, world):
    client = as_user(api, world["root"])
    url = f"/api/resource-groups/{world['group'].pk}/"
    response = client.patch(
        url,
        {"node_policy": "random", "device_policy": "mutex", "fragmentation_policy": "fragguard"},
        format="json",
    )
    assert response.status_code == 400
    assert set(response.json()["error"]["fields"]) == {
        "node_policy",
        "device_policy",
        "fragmentation_policy",
    }
    group = ResourceGroup.objects.get(pk=world["group"].pk)
    assert (group.node_policy, group.device_policy, group.fragmentation_policy) == (
        "binpack",
        "spread",
        "none",
    )


def test_member_cannot_change_the_profile(api, world):
    response = as_user(api, world["alice"]).patch(
        f"/api/resource-groups/{world['group'].pk}/", {"node_policy": "spread"}, format="json"
    )
    assert response.status_code == 403


def test_job_annotations_are_stored_and_shown(api, world):
    client = as_user(api, world["alice"])
    annotations = {
        "hami.io/node-scheduler-policy": "spread",
        "hami.io/gpu-scheduler-policy": "topology-aware",
        "example.com/owner": "team a",
    }
    response = client.post(
        "/api/jobs/", _job(world["queue_a"], annotations=annotations), format="json"
    )
    assert response.status_code == 201, response.content
    assert Job.objects.get(pk=response.json()["id"]).annotations == annotations
    assert client.get(f"/api/jobs/{response.json()['id']}/").json()["annotations"] == annotations


@pytest.mark.parametrize("pin", ["use", "nouse"])
def test_a_jobs_hami_uuid_annotation_decides_its_device(api, world, pin):
    """Issue 29: ``nvidia.com/use-gpuuuid`` / ``nouse-gpuuuid`` on an API job steer the
    console's placement as they steer HAMi's, not only the pod HAMi sees afterwards."""
    uuids = sorted(Device.objects.filter(node__cluster__name="c1").values_list("uuid", flat=True))
    wanted = uuids[-1]
    annotations = (
        {"nvidia.com/use-gpuuuid": wanted}
        if pin == "use"
        else {"nvidia.com/nouse-gpuuuid": ",".join(u for u in uuids if u != wanted)}
    )
    client = as_user(api, world["alice"])
    response = client.post(
        "/api/jobs/", _job(world["queue_a"], annotations=annotations), format="json"
    )
    assert response.status_code == 201, response.content
    job_id = response.json()["id"]
    assert job_id in run_admission_cycle(world["group"].pk).admitted
    (placement,) = Placement.objects.filter(job_id=job_id)
    assert [d["uuid"] for d in placement.assignment["containers"][0]["devices"]] == [wanted]


def test_bad_annotations_are_400(api, world):
    client = as_user(api, world["alice"])
    before = Job.objects.count()
    bad_value = client.post(
        "/api/jobs/",
        _job(world["queue_a"], annotations={"hami.io/node-scheduler-policy": "random"}),
        format="json",
    )
    assert bad_value.status_code == 400
    assert "random" in str(bad_value.json()["error"]["fields"]["annotations"])
    bad_key = client.post(
        "/api/jobs/", _job(world["queue_a"], annotations={"-bad/key": "x"}), format="json"
    )
    assert bad_key.status_code == 400
    assert "not a valid annotation key" in str(bad_key.json()["error"]["fields"])
    assert Job.objects.count() == before


def test_policy_annotations_are_refused_where_the_group_forbids_them(api, world):
    ResourceGroup.objects.filter(pk=world["group"].pk).update(pod_policy_override=False)
    client = as_user(api, world["alice"])
    response = client.post(
        "/api/jobs/",
        _job(world["queue_a"], annotations={"hami.io/gpu-scheduler-policy": "binpack"}),
        format="json",
    )
    assert response.status_code == 400
    assert "does not allow per-job policies" in str(response.json()["error"]["fields"])
    other = client.post(
        "/api/jobs/", _job(world["queue_a"], annotations={"example.com/owner": "a"}), format="json"
    )
    assert other.status_code == 201


# --- policy words with stray spaces or case (issue 29): one normaliser, validation and use ---


def test_group_policy_words_are_taken_in_any_case_and_stored_canonical(api, world):
    client = as_user(api, world["root"])
    url = f"/api/resource-groups/{world['group'].pk}/"
    response = client.patch(
        url, {"node_policy": " Spread ", "device_policy": "Topology-Aware\t"}, format="json"
    )
    assert response.status_code == 200, response.content
    group = ResourceGroup.objects.get(pk=world["group"].pk)
    assert (group.node_policy, group.device_policy) == ("spread", "topology-aware")
    assert client.get(url).json()["device_policy"] == "topology-aware"


def test_an_unknown_group_policy_word_is_400_naming_the_valid_words(api, world):
    client = as_user(api, world["root"])
    response = client.patch(
        f"/api/resource-groups/{world['group'].pk}/",
        {"node_policy": " random ", "device_policy": "MUTEX"},
        format="json",
    )
    assert response.status_code == 400
    fields = response.json()["error"]["fields"]
    assert "binpack, spread" in str(fields["node_policy"])
    assert "binpack, spread, topology-aware" in str(fields["device_policy"])
    assert ResourceGroup.objects.get(pk=world["group"].pk).node_policy == "binpack"


def test_policy_annotations_are_normalised_before_they_are_stored(api, world):
    client = as_user(api, world["alice"])
    annotations = {
        "hami.io/node-scheduler-policy": " Binpack ",
        "hami.io/gpu-scheduler-policy": "SPREAD",
        "example.com/owner": " Team A ",  # other annotations are the user's, untouched
    }
    response = client.post(
        "/api/jobs/", _job(world["queue_a"], annotations=annotations), format="json"
    )
    assert response.status_code == 201, response.content
    assert Job.objects.get(pk=response.json()["id"]).annotations == {
        "hami.io/node-scheduler-policy": "binpack",
        "hami.io/gpu-scheduler-policy": "spread",
        "example.com/owner": " Team A ",
    }
    batch = client.post(
        "/api/jobs/batch/",
        {
            "jobs": [
                _job(world["queue_a"], annotations={"hami.io/gpu-scheduler-policy": " Binpack"})
            ]
        },
        format="json",
    )
    assert batch.status_code == 201, batch.content
    (item,) = batch.json()["jobs"]
    assert Job.objects.get(pk=item["id"]).annotations == {"hami.io/gpu-scheduler-policy": "binpack"}


def test_an_unknown_policy_annotation_is_400_naming_the_valid_words(api, world):
    client = as_user(api, world["alice"])
    response = client.post(
        "/api/jobs/",
        _job(world["queue_a"], annotations={"hami.io/gpu-scheduler-policy": " Mutex "}),
        format="json",
    )
    assert response.status_code == 400
    message = str(response.json()["error"]["fields"]["annotations"])
    assert "binpack, spread, topology-aware" in message


def test_the_group_choices_are_the_placement_cores_policy_words():
    """tenants cannot import scheduling: its choices must stay the same words."""
    from core.words import canonical_choice
    from scheduling.devices.policies import GROUP_DEVICE_POLICIES, NODE_POLICIES, policy_word
    from tenants.choices import DevicePolicy, NodePolicy

    assert tuple(NodePolicy.values) == NODE_POLICIES
    assert tuple(DevicePolicy.values) == GROUP_DEVICE_POLICIES
    for raw in (" Binpack ", "SPREAD", "topology-Aware\n", "binpack"):
        assert canonical_choice(raw, DevicePolicy.values) == policy_word(raw)
    assert canonical_choice("mutex", DevicePolicy.values) is None
