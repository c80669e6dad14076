"""Explicit placement builders for telemetry DB tests (no admission cycle involved)."""

from __future__ import annotations

from scheduling.models import Device, Placement, PlacementDevice
from tests.builders import gpu_job


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
