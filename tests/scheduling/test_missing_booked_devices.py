"""Issue 13, last bullet: a booking on a device that vanished from its node's registration, or
was replaced by another card at the same index, stays booked (and flagged) until its pod
ends; the device never turns into free capacity meanwhile. Issue 29: nor does the rest of the
node (its pods may use any registered card): nothing new is placed there until the bookings
are reconciled, and the inconsistency is an event and a metric. Driven from the Node objects a
HAMi cluster shows, through the inventory sync, admission cycles and the pod's end, on
PostgreSQL through the official client and the HTTP fake API server."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from core.events import domain_event
from scheduling.choices import JobState, PlacementState
from scheduling.models import Device, Placement, PlacementDevice
from scheduling.selectors.inadmissible import release as release_inadmissible
from scheduling.services.cycle import run_admission_cycle
from scheduling.services.inventory import sync_cluster_inventory
from scheduling.services.kube_reconcile import apply_pod
from tests.builders import A100, gpu_job, make_group, make_tenant
from tests.kube.kube_helpers import NOW_TEXT, make_kube_cluster, node_json, succeeded_status

pytestmark = pytest.mark.django_db

NOW = datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC)
REG = "hami.io/node-nvidia-register"


def _node(*gpus: tuple[str, int]) -> dict:
    devs = [
        {
            "id": uuid,
            "index": index,
            "count": 10,
            "devmem": 81920,
            "devcore": 100,
            "type": A100,
            "numa": 0,
            "mode": "hami-core",
            "health": True,
        }
        for uuid, index in gpus
    ]
    return node_json(
        "gpu-1",
        {REG: json.dumps(devs), "hami.io/node-handshake": f"Reported {NOW_TEXT}"},
        {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": str(10 * len(gpus))},
    )


def _ended(placement: Placement) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"p{placement.pk}",
            "namespace": "llmops",
            "labels": {"console.llmops.io/placement": str(placement.pk)},
        },
        "status": succeeded_status(),
    }


@pytest.fixture
def events():
    """Domain events sent during the test (``[(kind, tenant_id, payload)]``)."""
    got: list[tuple[str, int | None, dict]] = []

    def receiver(sender, *, kind, tenant_id, payload, **_):
        got.append((kind, tenant_id, payload))

    domain_event.connect(receiver, weak=False)
    try:
        yield got
    finally:
        domain_event.disconnect(receiver)


def test_a_vanished_or_replaced_booked_device_stays_booked_until_its_pod_ends(
    fake, tmp_path, client, events, django_capture_on_commit_callbacks, settings
):
    settings.METRICS_TOKEN = "scrape-token-0123456789"  # /metrics needs it
    cluster = make_kube_cluster(fake, tmp_path)
    fake.put(_node(("GPU-aaaa", 0), ("GPU-bbbb", 1)))
    assert sync_cluster_inventory(cluster.pk, now=NOW).errors == []
    group = make_group("g", models=(A100,))
    _tenant, queue = make_tenant("team-a", group, devices_milli=10_000)
    jobs = [gpu_job(queue, f"whole-{i}", count=1, memory_percent=100, cores=100) for i in range(2)]
    assert sorted(run_admission_cycle(group.pk).admitted) == sorted(j.pk for j in jobs)
    holder = {
        pd.device.uuid: pd.placement
        for pd in PlacementDevice.objects.filter(placement__job__in=jobs).select_related(
            "device", "placement"
        )
    }
    assert set(holder) == {"GPU-aaaa", "GPU-bbbb"}

    # GPU-aaaa stops registering; GPU-bbbb's slot (index 1) now holds another card
    fake.put(_node(("GPU-cccc", 1)))
    later = NOW + timedelta(minutes=5)
    with django_capture_on_commit_callbacks(execute=True):
        report = sync_cluster_inventory(cluster.pk, now=later)
    assert report.errors == []
    assert sorted(report.devices_missing) == ["GPU-aaaa", "GPU-bbbb"]
    assert report.devices_removed == []
    rows = {d.uuid: d for d in Device.objects.all()}
    assert set(rows) == {"GPU-aaaa", "GPU-bbbb", "GPU-cccc"}
    for uuid in ("GPU-aaaa", "GPU-bbbb"):
        d = rows[uuid]
        assert (d.removed_at, d.missing_since, d.healthy) == (None, later, False)
        assert (
            f"booked by placement(s) {holder[uuid].pk}, kept booked until their pods end" in d.error
        )
    assert rows["GPU-aaaa"].error.startswith("no longer registered since 2025-06-01 12:05:00")
    assert "replaced by" not in rows["GPU-aaaa"].error
    assert rows["GPU-bbbb"].error.endswith("; replaced by GPU-cccc at index 1")
    assert (rows["GPU-cccc"].healthy, rows["GPU-cccc"].error) == (True, "")

    # each booked device going missing is one platform event
    unmatched = [(t, p) for k, t, p in events if k == "inventory.bookings_unmatched"]
    seen = [(t, p["node"], p["device"], p["placements"], p["replaced_by"]) for t, p in unmatched]
    assert seen == [
        (None, "gpu-1", "GPU-aaaa", [holder["GPU-aaaa"].pk], ""),
        (None, "gpu-1", "GPU-bbbb", [holder["GPU-bbbb"].pk], "GPU-cccc"),
    ]
    assert unmatched[1][1]["message"] == (
        f"device GPU-bbbb on node gpu-1: {rows['GPU-bbbb'].error}; the node takes no new "
        "placement until these bookings end or are rebound"
    )
    metrics = client.get(
        "/metrics", HTTP_AUTHORIZATION="Bearer scrape-token-0123456789"
    ).content.decode()
    assert f'console_unmatched_bookings{{cluster="{cluster.name}",node="gpu-1"}} 2.0' in metrics

    # the bookings hold, and which card their pods really use is unknown: the node's
    # capacity is uncertain, so nothing new goes there, not even on the new card
    more = [gpu_job(queue, f"more-{i}", count=1, memory_percent=100, cores=100) for i in range(2)]
    assert run_admission_cycle(group.pk).admitted == []
    reason = (
        "NodeBookingsUnmatched: booked device(s) GPU-aaaa, GPU-bbbb no longer registered; the "
        "node's capacity is uncertain until their pods end or are rebound"
    )
    for job in more:
        job.refresh_from_db()
        assert job.state == JobState.QUEUED
        assert reason in job.pending_reason
    assert not PlacementDevice.objects.filter(device__uuid="GPU-cccc").exists()
    assert set(Placement.objects.filter(job__in=jobs).values_list("state", flat=True)) == {
        PlacementState.RESERVED
    }

    # a later sync keeps the first time it went missing (and announces nothing again)
    with django_capture_on_commit_callbacks(execute=True):
        report = sync_cluster_inventory(cluster.pk, now=later + timedelta(minutes=5))
    assert len([e for e in events if e[0] == "inventory.bookings_unmatched"]) == 2
    assert sorted(report.devices_missing) == ["GPU-aaaa", "GPU-bbbb"]
    assert Device.objects.get(uuid="GPU-aaaa").missing_since == later

    # the pod on GPU-aaaa ends: the next sync removes that device; GPU-bbbb stays booked
    apply_pod(holder["GPU-aaaa"], _ended(holder["GPU-aaaa"]), now=later)
    report = sync_cluster_inventory(cluster.pk, now=later + timedelta(minutes=10))
    assert report.devices_removed == ["GPU-aaaa"]
    assert report.devices_missing == ["GPU-bbbb"]
    gone = Device.objects.get(uuid="GPU-aaaa")
    assert gone.removed_at == later + timedelta(minutes=10)
    assert gone.missing_since is None
    assert Device.objects.get(uuid="GPU-bbbb").removed_at is None
    # GPU-bbbb's booking is still unmatched: the node stays closed (the jobs set aside are
    # examined again: the test's clock is older than the inadmissible set's)
    release_inadmissible(group.pk)
    assert run_admission_cycle(group.pk).admitted == []
    for job in more:
        job.refresh_from_db()
        assert "NodeBookingsUnmatched: booked device(s) GPU-bbbb no longer" in job.pending_reason
    metrics = client.get(
        "/metrics", HTTP_AUTHORIZATION="Bearer scrape-token-0123456789"
    ).content.decode()
    assert f'console_unmatched_bookings{{cluster="{cluster.name}",node="gpu-1"}} 1.0' in metrics

    # its pod ends too: the booking is reconciled, the new card takes one of the jobs
    apply_pod(holder["GPU-bbbb"], _ended(holder["GPU-bbbb"]), now=timezone.now())
    admitted = run_admission_cycle(group.pk).admitted
    assert len(admitted) == 1 and admitted[0] in {j.pk for j in more}
    assert PlacementDevice.objects.get(placement__job_id=admitted[0]).device.uuid == "GPU-cccc"
    assert (
        "console_unmatched_bookings{"
        not in client.get(
            "/metrics", HTTP_AUTHORIZATION="Bearer scrape-token-0123456789"
        ).content.decode()
    )
