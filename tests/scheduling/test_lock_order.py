"""The lock order's row locks never wait on the ``FOR KEY SHARE`` locks that inserts of
referencing rows take (telemetry rollups, ledger rows): a newcomer's run of the README saw the
admission cycle deadlock with the telemetry rollup on ``scheduling_device`` rows because the
cycle locked devices ``FOR UPDATE``."""

from __future__ import annotations

import psycopg
import pytest
from django.db import connection, transaction

from scheduling.models import Device, Job, Node
from scheduling.services.locking import lock_capacity_rows, lock_jobs
from tests.builders import gpu_job, make_cluster, make_group, make_tenant

pytestmark = pytest.mark.django_db(transaction=True)


def _other_connection():
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    return psycopg.connect(**params)


def test_capacity_and_job_locks_do_not_wait_on_key_share_locks():
    make_cluster("c1", nodes=1, gpus=2)
    group = make_group("g1")
    _tenant, queue = make_tenant("team-a", group, devices_milli=2000)
    job = gpu_job(queue, "j", count=1, memory_percent=100, cores=100)
    node = Node.objects.get()
    device_ids = sorted(Device.objects.values_list("pk", flat=True))
    with _other_connection() as other:
        # what an INSERT of a row referencing them holds until its transaction commits
        other.execute("SELECT 1 FROM scheduling_device WHERE id = ANY(%s) FOR KEY SHARE",
                      [device_ids])
        other.execute("SELECT 1 FROM scheduling_node WHERE id = %s FOR KEY SHARE", [node.pk])
        other.execute("SELECT 1 FROM scheduling_job WHERE id = %s FOR KEY SHARE", [job.pk])
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL lock_timeout = '2s'")
            nodes, devices = lock_capacity_rows([node.pk], device_ids)
            assert sorted(devices) == device_ids and list(nodes) == [node.pk]
            assert lock_jobs([job.pk]) == [job.pk]
        other.rollback()
    assert Job.objects.filter(pk=job.pk).exists()
