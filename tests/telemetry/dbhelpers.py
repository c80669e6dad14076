"""Explicit placement builders for telemetry DB tests (no admission cycle involved)."""

from __future__ import annotations

from datetime import UTC, datetime

from scheduling.models import Cluster, Device, Job, Placement, PlacementDevice
from telemetry.services.prices import set_price
from tests.builders import gpu_job, make_group, make_tenant, make_user

#: The budget tests' "now": 10 days into March 2025 (:func:`budget_world`).
NOW = datetime(2025, 3, 11, tzinfo=UTC)


def place(queue, name, bookings, *, state="running", started=None, ended=None, pod=None):
    """A job with one placement booking ``[(device uuid, memory_mib, cores_percent)]``.

    Returns ``(job, placement)``; the placement's pod name is ``pod`` (default ``name``).
    """
    job = gpu_job(queue, name, count=len(bookings))
    devices = {d.uuid: d for d in Device.objects.filter(uuid__in=[b[0] for b in bookings])}
    node = devices[bookings[0][0]].node
    placement = Placement.objects.create(
        job=job,
        pod_index=0,
        node=node,
        state=state,
        backend_ref=pod or name,
        started_at=started,
        ended_at=ended,
    )
    for uuid, memory_mib, cores in bookings:
        PlacementDevice.objects.create(
            placement=placement, device=devices[uuid], memory_mib=memory_mib, cores_percent=cores
        )
    job_state = {"running": "running", "succeeded": "succeeded"}.get(state, "admitted")
    type(job).objects.filter(pk=job.pk).update(
        state=job_state, started_at=started, finished_at=ended
    )
    job.refresh_from_db()
    return job, placement


def devices(
    cluster, node_name, uuids, *, model="NVIDIA-A100-SXM4-80GB", vendor="NVIDIA", memory_mib=81920
):
    """Devices with the given serials / UUIDs on a node of ``cluster`` (created if needed)."""
    from scheduling.models import DeviceModel, Node

    device_model, _ = DeviceModel.objects.get_or_create(
        name=model, defaults={"vendor": vendor, "config": {"memory_mib": memory_mib}}
    )
    node, _ = Node.objects.get_or_create(
        cluster=cluster,
        name=node_name,
        defaults={"cpu_milli": 64000, "host_memory_mib": 262144, "labels": {"pool": cluster.name}},
    )
    return [
        Device.objects.create(
            uuid=uuid, node=node, model=device_model, index=i, memory_mib=memory_mib
        )
        for i, uuid in enumerate(uuids)
    ]


def budget_world():
    """team-a (ada admin, alice and al members) and team-b (bert admin); A100 at 2.00 USD
    per device-hour. alice ran one device 48 h (Mar 1-3) and runs one since Mar 10 00:00
    with a 2-day runtime bound: 72 device-hours spent by NOW."""
    cluster = Cluster.objects.create(name="billing")
    devices(cluster, "n1", ["GPU-b-0", "GPU-b-1", "GPU-b-2", "GPU-b-3"])
    group = make_group("g-bill", models=())
    a, qa = make_tenant("team-a", group, devices_milli=8000)
    b, qb = make_tenant("team-b", group, devices_milli=8000)
    set_price("NVIDIA-A100-SXM4-80GB", datetime(2025, 1, 1, tzinfo=UTC), "2.00")
    users = {
        "ada": make_user("ada", a, "tenant_admin"),
        "alice": make_user("alice", a),
        "al": make_user("al", a),
        "bert": make_user("bert", b, "tenant_admin"),
    }
    done, _ = place(
        qa,
        "a-done",
        [("GPU-b-1", 81920, 100)],
        state="succeeded",
        started=datetime(2025, 3, 1, tzinfo=UTC),
        ended=datetime(2025, 3, 3, tzinfo=UTC),
    )
    running, _ = place(
        qa, "a-run", [("GPU-b-0", 81920, 100)], started=datetime(2025, 3, 10, tzinfo=UTC)
    )
    Job.objects.filter(pk__in=[done.pk, running.pk]).update(submitted_by=users["alice"])
    Job.objects.filter(pk=running.pk).update(max_runtime_s=2 * 86400)
    return {"group": group, "a": a, "qa": qa, "b": b, **users}
