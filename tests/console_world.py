"""A small two-tenant world for page and API tests (explicit values, no randomness).

Cluster ``c1``: nodes ``c1-n0`` and ``c1-n1``, two A100-80GB each (81920 MiB, 100 % cores).
Group ``g1`` (shared, A100). Tenants ``team-a`` and ``team-b``, 2 devices nominal each.
Users: ``alice`` (member of team-a), ``ada`` (tenant admin of team-a), ``victor`` (viewer of
team-a), ``bob`` (member of team-b), ``root`` (platform admin). Jobs after one admission
cycle: ``a-train`` (team-a, 1 device at 40 % memory / 30 % cores, placed), ``b-secret``
(team-b, 1 whole device, placed), ``a-wait`` (team-a, 4 whole devices: over quota, queued).
"""

from __future__ import annotations

from django.contrib.auth import get_user_model

from scheduling.services.cluster_submission import submit_to_cluster
from scheduling.services.cycle import run_admission_cycle
from tests.builders import gpu_job, make_cluster, make_group, make_tenant, make_user


def build_world() -> dict:
    make_cluster("c1", nodes=2, gpus=2)
    group = make_group("g1")
    team_a, queue_a = make_tenant("team-a", group, devices_milli=2000)
    team_b, queue_b = make_tenant("team-b", group, devices_milli=2000)
    users = {
        "alice": make_user("alice", team_a, "member"),
        "ada": make_user("ada", team_a, "tenant_admin"),
        "victor": make_user("victor", team_a, "viewer"),
        "bob": make_user("bob", team_b, "member"),
        "root": get_user_model().objects.create_superuser("root", "root@example.org", "pw-root"),
    }
    a_train = gpu_job(queue_a, "a-train", count=1, memory_percent=40, cores=30)
    b_secret = gpu_job(queue_b, "b-secret", count=1)
    run_admission_cycle(group.pk)
    for job in (a_train, b_secret):
        submit_to_cluster(job.pk)
    a_wait = gpu_job(queue_a, "a-wait", count=4)
    run_admission_cycle(group.pk)
    for job in (a_train, b_secret, a_wait):
        job.refresh_from_db()
    return {
        "group": group,
        "team_a": team_a,
        "team_b": team_b,
        "queue_a": queue_a,
        "queue_b": queue_b,
        "a_train": a_train,
        "b_secret": b_secret,
        "a_wait": a_wait,
        **users,
    }
