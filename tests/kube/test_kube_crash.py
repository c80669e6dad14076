"""Crash consistency: the submitting worker is killed (SIGKILL) between the commit of a
placement and the creation of its objects; after the restart the reconciler (and the
redelivered task) lead to exactly one Pod, and the job runs.

The worker is a real separate process running the ``submit_jobs_task`` body against the test
database and the HTTP fake API server; a hook in ``KubernetesGateway._create`` announces the
chosen point on stdout and waits; the test then kills the process with SIGKILL.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.db import connection
from django.utils import timezone

from scheduling.choices import JobState, PlacementState
from scheduling.models import Job, JobContainer, Placement
from scheduling.services.cluster_submission import submit_to_cluster
from scheduling.services.cycle import run_admission_cycle
from scheduling.services.inventory import sync_cluster_inventory
from scheduling.services.jobs import ContainerSpec, JobSpec, enqueue_job
from scheduling.services.kube_reconcile import reconcile_cluster
from tests.builders import make_group, make_tenant
from tests.kube.kube_helpers import make_kube_cluster, nvidia_node, running_status

pytestmark = pytest.mark.django_db(transaction=True)

REPO = Path(__file__).resolve().parents[2]

WORKER = textwrap.dedent("""
    import os, sys, time
    import django
    django.setup()
    from django.db import connections
    connections["default"].settings_dict["NAME"] = os.environ["CRASH_DB_NAME"]
    from scheduling.kube import gateway

    original = gateway.KubernetesGateway._create
    kind, when = os.environ["CRASH_KIND"], os.environ["CRASH_WHEN"]

    def hook(point):
        print("AT-HOOK " + point, flush=True)
        time.sleep(120)  # the test kills us here
        sys.exit(3)

    def create(self, create, read, obj_kind, obj):
        if obj_kind == kind and when == "before":
            hook(f"before {obj_kind}")
        result = original(self, create, read, obj_kind, obj)
        if obj_kind == kind and when == "after":
            hook(f"after {obj_kind}")
        return result

    gateway.KubernetesGateway._create = create
    from scheduling.tasks import submit_jobs_task

    submit_jobs_task.run([int(os.environ["CRASH_JOB_ID"])])
    print("FINISHED", flush=True)
""")


def _admitted_job(fake, tmp_path, mode, monkeypatch):
    cluster = make_kube_cluster(fake, tmp_path, mode=mode)
    fake.put(nvidia_node("gpu-1"))
    sync_cluster_inventory(cluster.pk, now=datetime(2025, 6, 1, 12, 0, tzinfo=UTC))
    group = make_group("g1", models=("NVIDIA-A100-SXM4-80GB",))
    _tenant, queue = make_tenant("team-a", group, devices_milli=100_000)
    job = enqueue_job(
        queue,
        JobSpec(
            name="train",
            cpu_milli=1000,
            host_memory_mib=1024,
            containers=[ContainerSpec(device_count=1, device_memory_mib=8192, cores_percent=25)],
        ),
        enqueue=False,
    )
    JobContainer.objects.filter(job=job).update(image="busybox:1.37")
    enqueued = []
    from scheduling import tasks

    monkeypatch.setattr(tasks.submit_jobs_task, "delay", lambda ids: enqueued.append(ids))
    assert run_admission_cycle(group.pk).admitted == [job.pk]  # committed
    assert enqueued == [[job.pk]]  # the submit task was enqueued after commit
    return cluster, job


def _run_worker_and_kill(job, kind: str, when: str) -> str:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "console.settings.test",
        "CRASH_DB_NAME": connection.settings_dict["NAME"],
        "CRASH_JOB_ID": str(job.pk),
        "CRASH_KIND": kind,
        "CRASH_WHEN": when,
        "PYTHONPATH": str(REPO),
    }
    proc = subprocess.Popen(
        [sys.executable, "-c", WORKER],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline().strip()
        if not line.startswith("AT-HOOK"):
            proc.kill()
            raise AssertionError(f"worker did not reach the hook: {line!r}\n{proc.stderr.read()}")
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdout.close()
        proc.stderr.close()
    return line


@pytest.mark.parametrize(
    ("mode", "kind", "when", "pods_at_crash", "claims_at_crash"),
    [
        ("hami", "Pod", "before", 0, 0),  # committed, nothing created
        ("dra", "Pod", "before", 0, 1),  # claim created, pod not
        ("hami", "Pod", "after", 1, 0),  # pod created, placement still reserved
    ],
)
def test_killed_worker_leads_to_exactly_one_pod_and_the_job_runs(
    fake, tmp_path, monkeypatch, settings, mode, kind, when, pods_at_crash, claims_at_crash
):
    settings.KUBE_RETRY_BASE_DELAY_S = 0.0
    settings.KUBE_SUBMIT_GRACE_S = 60
    cluster, job = _admitted_job(fake, tmp_path, mode, monkeypatch)
    placement = Placement.objects.get(job=job)

    assert _run_worker_and_kill(job, kind, when) == f"AT-HOOK {when} {kind}"
    # the crash left the placement reserved (its devices booked) and the cluster as it was
    assert Placement.objects.get(pk=placement.pk).state == PlacementState.RESERVED
    assert len(fake.list("pods")) == pods_at_crash
    assert len(fake.list("resourceclaims")) == claims_at_crash

    # the reconciler after the grace period: adopts the pod or finishes the submission
    later = timezone.now() + timedelta(seconds=61)
    report = reconcile_cluster(cluster.pk, watch_s=0, now=later)
    if pods_at_crash:
        assert (report.adopted, report.resubmitted) == ([placement.pk], [])
    else:
        assert (report.adopted, report.resubmitted) == ([], [placement.pk])
    # the restarted worker gets the redelivered task (acks_late) and runs it again
    submit_to_cluster(job.pk)

    pods = fake.list("pods")
    assert [p["metadata"]["name"] for p in pods] == [f"p-{placement.pk}-{job.pk}-0"]
    # one create: by the killed worker (then adopted) or by the reconciler; the rerun task
    # finds nothing reserved and creates nothing
    assert len([m for m, p in fake.requests if m == "POST" and p.endswith("/pods")]) == 1
    if mode == "dra":
        (claim,) = fake.list("resourceclaims")
        assert claim["metadata"]["ownerReferences"][0]["uid"] == pods[0]["metadata"]["uid"]
    assert Placement.objects.get(pk=placement.pk).state == PlacementState.SUBMITTED
    assert Placement.objects.filter(job=job).count() == 1

    fake.set_pod_status("tenant-team-a", pods[0]["metadata"]["name"], running_status("gpu-1"))
    reconcile_cluster(cluster.pk, watch_s=0, now=later + timedelta(seconds=400))
    job.refresh_from_db()
    assert job.state == JobState.RUNNING
    assert Placement.objects.get(pk=placement.pk).state == PlacementState.RUNNING
    assert Job.objects.filter(pk=job.pk, state=JobState.RUNNING).exists()
