"""Horizontal scale: two web processes (gunicorn, as the web Deployment runs them) and three
Celery worker processes plus beat, all on one PostgreSQL and one Redis, take jobs submitted
and cancelled through both webs at once; afterwards every invariant holds (no device or node
overbooked, every job in one consistent state with its placements, stored usage equal to the
recomputed usage and within quota, no job lost).

The processes are the console's real entry points with the settings of an install
(``DATABASE_URL`` = this test's database, ``REDIS_URL`` = the test Redis, a queue of their
own so no other test's worker takes these tasks); jobs run on a simulated cluster.
"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
from django.conf import settings
from django.db import connection, connections
from django.db.models import Sum
from rest_framework.authtoken.models import Token

from scheduling.choices import BOOKED_PLACEMENT_STATES, JobState
from scheduling.models import Device, Job, Node, Placement, PlacementDevice
from scheduling.services.usage import check_usage
from tenants.models import Quota
from tests.builders import A100, make_cluster, make_group, make_tenant, make_user

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
JOBS = 60
WORKERS = 3
DEADLINE_S = 70.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _database_url() -> str:
    """``DATABASE_URL`` naming this test's database."""
    parts = urlsplit(settings.DATABASE_URL)
    return urlunsplit(parts._replace(path="/" + connection.settings_dict["NAME"]))


def _request(
    base: str, method: str, path: str, token: str, body: dict | None = None
) -> tuple[int, dict]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(
        base + path,
        data=data,
        method=method,
        headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read() or b"{}")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def _world():
    make_cluster("c1", nodes=4, gpus=4)  # 16 A100
    group = make_group("g1", models=(A100,))
    users = []
    for i, nominal in enumerate((6000, 6000, 4000)):
        tenant, queue = make_tenant(f"team-{i}", group, devices_milli=nominal, flavor=A100)
        Quota.objects.filter(tenant=tenant).update(borrowing_limit=4000)
        user = make_user(f"u{i}", tenant, role="member")
        users.append((Token.objects.create(user=user).key, queue.pk))
    return group, users


def _start(env: dict, tmp_path: Path, ports: list[int], queue: str) -> list[subprocess.Popen]:
    procs = []
    logs = tmp_path / "logs"
    logs.mkdir()

    def spawn(name: str, argv: list[str]) -> None:
        out = open(logs / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
        procs.append(
            subprocess.Popen(
                argv,
                cwd=ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )

    for i, port in enumerate(ports):
        spawn(
            f"web{i}",
            [
                str(BIN / "gunicorn"),
                "console.wsgi",
                f"--bind=127.0.0.1:{port}",
                "--workers=1",
                "--threads=4",
                "--timeout=60",
            ],
        )
    for i in range(WORKERS):
        spawn(
            f"worker{i}",
            [
                str(BIN / "celery"),
                "-A",
                "console",
                "worker",
                "-Q",
                queue,
                "--pool=solo",
                f"--hostname=w{i}-{os.getpid()}@scale",
                "--without-gossip",
                "--without-mingle",
                "--loglevel=WARNING",
            ],
        )
    spawn(
        "beat",
        [
            str(BIN / "celery"),
            "-A",
            "console",
            "beat",
            "--loglevel=WARNING",
            f"--schedule={tmp_path / 'beat-schedule'}",
        ],
    )
    return procs


def _wait_ready(bases: list[str], procs, tmp_path: Path) -> None:
    deadline = time.monotonic() + 45
    for base in bases:
        while True:
            dead = [p for p in procs if p.poll() is not None]
            assert not dead, (tmp_path / "logs").joinpath("web0.log").read_text()[-3000:]
            try:
                with urllib.request.urlopen(base + "/healthz", timeout=5) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, "web did not start within 45 s"
            time.sleep(0.5)


def _drive(bases: list[str], users, rng: random.Random) -> tuple[list[int], Counter]:
    """Submit ``JOBS`` jobs through both webs at once, cancelling some as they go."""
    stats: Counter = Counter()
    shapes = [(1, 100, 0), (2, 100, 0), (1, 50, 8192), (1, 30, 16384)]

    def one(i: int) -> int | None:
        token, queue = users[i % len(users)]
        count, cores, mem = shapes[rng.randrange(len(shapes))]
        status, body = _request(
            bases[i % 2],
            "POST",
            "/api/jobs/",
            token,
            {
                "queue": queue,
                "name": f"j{i}",
                "cpu_milli": 500,
                "host_memory_mib": 512,
                "duration_s": 0.2 + (i % 4) * 0.2,
                "containers": [
                    {
                        "name": "main",
                        "device_count": count,
                        "cores_percent": cores,
                        "device_memory_mib": mem,
                        "memory_percent": None if mem else 100,
                    }
                ],
            },
        )
        stats[f"submit {status}"] += 1
        if status != 201:
            return None
        if i % 9 == 0:  # cancel through the other web
            status, _ = _request(
                bases[(i + 1) % 2], "POST", f"/api/jobs/{body['id']}/cancel/", token
            )
            stats[f"cancel {status}"] += 1
        return body["id"]

    with ThreadPoolExecutor(max_workers=8) as pool:
        ids = [job_id for job_id in pool.map(one, range(JOBS)) if job_id is not None]
    return ids, stats


def _check_invariants(group, job_ids: list[int]) -> Counter:
    booked = PlacementDevice.objects.filter(placement__state__in=BOOKED_PLACEMENT_STATES)
    for row in booked.values("device_id").annotate(
        mem=Sum("memory_mib"), cores=Sum("cores_percent"), slots=Sum("slots")
    ):
        device = Device.objects.get(pk=row["device_id"])
        assert row["mem"] <= device.memory_mib, device.uuid
        assert row["cores"] <= device.cores_percent, device.uuid
        assert row["slots"] <= device.split_count, device.uuid
    for row in (
        Placement.objects.filter(state__in=BOOKED_PLACEMENT_STATES)
        .values("node_id")
        .annotate(cpu=Sum("cpu_milli"), mem=Sum("host_memory_mib"))
    ):
        node = Node.objects.get(pk=row["node_id"])
        assert row["cpu"] <= node.cpu_milli and row["mem"] <= node.host_memory_mib, node.name
    live: dict[int, int] = defaultdict(int)
    for job_id in Placement.objects.filter(state__in=BOOKED_PLACEMENT_STATES).values_list(
        "job_id", flat=True
    ):
        live[job_id] += 1
    states = Counter()
    for job in Job.objects.filter(pk__in=job_ids).only("pk", "state", "pod_count", "min_pods"):
        states[job.state] += 1
        if job.state in (JobState.ADMITTED, JobState.RUNNING):
            assert (job.min_pods or job.pod_count) <= live[job.pk] <= job.pod_count, job.pk
        else:
            assert live[job.pk] == 0, (job.pk, job.state)
    assert sum(states.values()) == len(job_ids)  # no job lost
    check = check_usage(group.pk)
    assert not check.locked_out and check.drift == [], check.drift
    assert check.violations == [], check.violations
    return states


@pytest.mark.django_db(transaction=True)
def test_two_webs_and_three_workers_on_one_database_keep_every_invariant(tmp_path):
    group, users = _world()
    assert not connection.in_atomic_block
    connections.close_all()
    queue = f"scale-{os.getpid()}"
    ports = [_free_port(), _free_port()]
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "PYTHONDONTWRITEBYTECODE": "1",
        "DJANGO_SETTINGS_MODULE": "console.settings.base",
        "DATABASE_URL": _database_url(),
        "REDIS_URL": settings.REDIS_URL,
        "SECRET_KEY": "scale-" + "k" * 50,
        "CELERY_TASK_DEFAULT_QUEUE": queue,
        "ADMISSION_TICK_S": "1",
        "RECONCILE_TICK_S": "1",
        "USAGE_RECONCILE_TICK_S": "5",
        "KUBE_TICK_S": "3600",
        "ALLOWED_HOSTS": "127.0.0.1",
    }
    procs = _start(env, tmp_path, ports, queue)
    bases = [f"http://127.0.0.1:{p}" for p in ports]
    started = time.monotonic()
    try:
        _wait_ready(bases, procs, tmp_path)
        job_ids, stats = _drive(bases, users, random.Random(7))
        assert stats[f"submit {201}"] == JOBS, stats
        while time.monotonic() < started + DEADLINE_S:
            if not Job.objects.filter(
                pk__in=job_ids, state__in=[JobState.QUEUED, JobState.ADMITTED, JobState.RUNNING]
            ).exists():
                break
            time.sleep(1.0)
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
    states = _check_invariants(group, job_ids)
    print(
        f"\n2 webs + {WORKERS} workers, {JOBS} jobs in {time.monotonic() - started:.1f}s: "
        f"{dict(stats)}; final states {dict(states)}"
    )
    # the workers did the work: every job left the queue and most ran to the end
    assert states[JobState.SUCCEEDED] + states[JobState.CANCELLED] + states[JobState.FAILED] == len(
        job_ids
    ), states
    assert states[JobState.SUCCEEDED] > JOBS // 2
