"""What the fault suite does *inside* the console under test: ``python -m tests.faults.actor
<command> [args]`` with ``DATABASE_URL`` / ``REDIS_URL`` naming the suite's own embedded
servers (never the shared ones). Each command prints one JSON object on its last line.

Commands:

* ``seed``: a simulated cluster (2 nodes x 4 A100), one resource group, two tenants with 4
  devices nominal quota each and a member each with an API token.
* ``submit <prefix> <count> [<seconds>]``: submit ``count`` one-device jobs running
  ``seconds`` (default ``JOB_SECONDS``) through the API (POST /api/jobs/ with the members'
  tokens, alternating tenants); prints the HTTP status per job.
* ``submit-across <prefix> <count> <folder>``: submit ``count`` jobs, create
  ``<folder>/ready``, wait for ``<folder>/go`` (the suite restarts PostgreSQL meanwhile), then
  submit ``count`` more in the same process: the web side recovers without a restart.
* ``redeliver``: publish duplicate and out-of-order task deliveries to the broker: the
  submission of every job twice, newest first (whether it is admitted, running or already
  finished), then its group's cycle three times, then a submission of the jobs still queued
  (not admitted yet: must change nothing).
* ``check``: the invariants (see :func:`check`).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import Counter

JOB_SECONDS = 2.0


def _setup() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings.base")
    import django

    django.setup()


def seed() -> dict:
    from rest_framework.authtoken.models import Token

    from tests.builders import make_cluster, make_group, make_tenant, make_user

    make_cluster("c1", nodes=2, gpus=4)
    group = make_group("g1")
    out = {"group": group.pk, "queues": [], "tokens": []}
    for name, user in (("team-a", "alice"), ("team-b", "bob")):
        tenant, queue = make_tenant(name, group, devices_milli=4000)
        member = make_user(user, tenant, "member")
        out["queues"].append(queue.pk)
        out["tokens"].append(Token.objects.create(user=member).key)
    return out


def submit(prefix: str, count: int, duration_s: float = JOB_SECONDS) -> dict:
    from django.db import close_old_connections
    from django.test import Client

    from scheduling.models import Queue

    close_old_connections()  # what Django's request_started does (the test Client does not)
    queues = list(Queue.objects.order_by("pk").select_related("tenant"))
    tokens = {q.pk: _token_of(q) for q in queues}
    client = Client(HTTP_HOST="localhost")
    statuses, errors = {}, {}
    for i in range(count):
        queue = queues[i % len(queues)]
        name = f"{prefix}-{i}"
        close_old_connections()
        body = {
            "queue": queue.pk,
            "name": name,
            "cpu_milli": 1000,
            "host_memory_mib": 1024,
            "duration_s": duration_s,
            "containers": [{"device_count": 1}],
        }
        response = client.post(
            "/api/jobs/",
            json.dumps(body),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Token {tokens[queue.pk]}",
        )
        statuses[name] = response.status_code
        if response.status_code != 201:
            errors[name] = response.content.decode()[:300]
    return {"statuses": statuses, "errors": errors}


def submit_across(prefix: str, count: int, folder: str) -> dict:
    from pathlib import Path

    before = submit(f"{prefix}-before", count)
    Path(folder, "ready").touch()
    deadline = time.monotonic() + 120
    while not Path(folder, "go").exists():
        if time.monotonic() > deadline:
            raise SystemExit("submit-across: no go within 120 s")
        time.sleep(0.05)
    after = submit(f"{prefix}-after", count)
    return {
        "statuses": {**before["statuses"], **after["statuses"]},
        "errors": {**before["errors"], **after["errors"]},
    }


def _token_of(queue) -> str:
    from rest_framework.authtoken.models import Token

    return Token.objects.get(user__memberships__tenant=queue.tenant).key


def redeliver() -> dict:
    from scheduling.choices import JobState
    from scheduling.models import Job
    from scheduling.tasks import admission_cycle_task, submit_jobs_task
    from tenants.models import ResourceGroup

    jobs = list(Job.objects.order_by("-pk").values_list("pk", "state"))
    for job_id, _ in jobs:  # newest first: the reverse of their admission order
        submit_jobs_task.delay([job_id])
        submit_jobs_task.delay([job_id])
    for group_id in ResourceGroup.objects.values_list("pk", flat=True):
        for _ in range(3):
            admission_cycle_task.delay(group_id)
    queued = [job_id for job_id, state in jobs if state == JobState.QUEUED]
    if queued:
        submit_jobs_task.delay(queued)
    return {"jobs": len(jobs), "queued": len(queued)}


def check() -> dict:
    """The invariants after the faults.

    Returns:
        ``jobs`` (name -> state), ``duplicate_names`` (names stored more than once),
        ``overbooked_devices`` (device uuid -> booked vs capacity, over its memory, cores or
        slots), ``multi_placed_jobs`` (jobs with more than one live placement),
        ``ran_twice`` (jobs with more than one placement that was not given back unused),
        ``live_usage`` (stored usage rows above zero), ``drift`` / ``violations`` (stored vs
        recomputed usage and quota invariants of each
        resource group, :func:`scheduling.services.usage.check_usage`).
    """
    from django.db.models import Count, Sum

    from scheduling.choices import BOOKED_PLACEMENT_STATES, PlacementState
    from scheduling.models import Device, Job, Placement, PlacementDevice
    from scheduling.services.usage import check_usage
    from tenants.models import QuotaUsage, ResourceGroup

    jobs = dict(Job.objects.values_list("name", "state"))
    names = Counter(Job.objects.values_list("name", flat=True))
    live = PlacementDevice.objects.filter(placement__state__in=BOOKED_PLACEMENT_STATES)
    booked = live.values("device").annotate(
        memory=Sum("memory_mib"), cores=Sum("cores_percent"), slots=Sum("slots")
    )
    devices = {d.pk: d for d in Device.objects.all()}
    overbooked = {}
    for row in booked:
        device = devices[row["device"]]
        if (
            row["memory"] > device.memory_mib
            or row["cores"] > device.cores_percent
            or row["slots"] > device.split_count
        ):
            overbooked[device.uuid] = {
                **row,
                "capacity": [device.memory_mib, device.cores_percent, device.split_count],
            }
    multi = list(
        Placement.objects.filter(state__in=BOOKED_PLACEMENT_STATES)
        .values("job")
        .annotate(n=Count("pk"))
        .filter(n__gt=1)
        .values_list("job", flat=True)
    )
    ran_twice = list(
        Placement.objects.exclude(state=PlacementState.RELEASED)
        .values("job")
        .annotate(n=Count("pk"))
        .filter(n__gt=1)
        .values_list("job", flat=True)
    )
    drift, violations = [], []
    for group_id in ResourceGroup.objects.values_list("pk", flat=True):
        report = check_usage(group_id)
        while report.locked_out:  # a cycle holds the group's lock: check after it
            time.sleep(0.2)
            report = check_usage(group_id)
        drift += report.drift
        violations += report.violations
    live_usage = list(
        QuotaUsage.objects.filter(amount__gt=0).values_list("tenant__name", "dimension", "amount")
    )
    return {
        "jobs": jobs,
        "live_usage": live_usage,
        "duplicate_names": [n for n, c in names.items() if c > 1],
        "overbooked_devices": overbooked,
        "multi_placed_jobs": multi,
        "ran_twice": ran_twice,
        "drift": drift,
        "violations": violations,
    }


def main(argv: list[str]) -> int:
    _setup()
    command, args = argv[0], argv[1:]
    if command == "seed":
        result = seed()
    elif command == "submit":
        result = submit(args[0], int(args[1]), *(float(a) for a in args[2:3]))
    elif command == "submit-across":
        result = submit_across(args[0], int(args[1]), args[2])
    elif command == "redeliver":
        result = redeliver()
    elif command == "check":
        result = check()
    else:
        raise SystemExit(f"unknown command {command!r}")
    sys.stdout.write(json.dumps(result, default=str) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
