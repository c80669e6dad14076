"""API load against the running console: a burst (as fast as the clients go) and a steady
offered load (jobs/s on a fixed schedule), with a watcher that sees when each job is placed.

"Placed" = the job left ``queued`` for ``admitted`` (or later) in the database, as any page or
API read would see it; the watcher polls every ``POLL_S`` seconds, so latencies carry up to
that much extra. Submit time = when the client sent the POST.
"""

from __future__ import annotations

import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import requests
from django.contrib.auth import get_user_model
from django.db import close_old_connections, connection
from rest_framework.authtoken.models import Token

from scheduling.choices import JobState
from scheduling.models import Cluster, Device, DeviceModel, Job, Node, Queue
from tenants.models import Membership, Quota, ResourceGroup, Tenant

POLL_S = 0.05
MODEL = "NVIDIA-A100-SXM4-80GB"
#: GPU shares the load jobs ask (percent of a device: cores = memory), cycled.
SHARES = (25, 50, 10, 100, 30, 20)


@dataclass
class LoadWorld:
    """The synthetic cluster, group, tenant, queue and API token of the load phases."""

    group_id: int
    queue_id: int
    token: str
    gpus: int


def build_load_world(
    nodes: int, gpus_per_node: int, fragmentation: str, name: str = "load"
) -> LoadWorld:
    """:func:`build_pool` ``name`` (``fragmentation`` policy) and a member of its tenant with
    an API token."""
    group, tenant, queue, gpus = build_pool(name, nodes, gpus_per_node, fragmentation)
    return LoadWorld(group.pk, queue.pk, _member_token(name, tenant), gpus)


def build_pool(
    name: str, nodes: int, gpus_per_node: int, fragmentation: str = "none", *, zones: bool = False
) -> tuple[ResourceGroup, Tenant, Queue, int]:
    """A simulated cluster ``name`` of ``nodes`` nodes "<name>-n<i>" x ``gpus_per_node`` A100s
    labelled ``pool=<name>`` (and ``zone`` a/b/c in turn with ``zones``), a resource group
    over them (``fragmentation`` policy; "none" = HAMi's own policies), one tenant "<name>-team"
    with quota for all of it and its queue "default" (every name derived from ``name``, so
    pools can sit side by side).

    Returns:
        ``(group, tenant, queue, devices)``.
    """
    cluster = Cluster.objects.create(name=name, backend="simulated")
    model, _ = DeviceModel.objects.get_or_create(
        name=MODEL,
        defaults={"vendor": "NVIDIA", "config": {"memory_mib": 81920, "split_count": 10}},
    )
    made = Node.objects.bulk_create(
        Node(
            cluster=cluster,
            name=f"{name}-n{i:05d}",
            cpu_milli=256_000,
            host_memory_mib=2_097_152,
            labels={"pool": name, **({"zone": "abc"[i % 3]} if zones else {})},
        )
        for i in range(nodes)
    )
    Device.objects.bulk_create(
        (
            Device(
                uuid=f"GPU-{name}-{i:05d}-{j}",
                node=node,
                model=model,
                index=j,
                memory_mib=81920,
                split_count=10,
            )
            for i, node in enumerate(made)
            for j in range(gpus_per_node)
        ),
        batch_size=5000,
    )
    group = ResourceGroup.objects.create(
        name=name,
        device_models=[MODEL],
        node_selector={"pool": name},
        fragmentation_policy=fragmentation,
    )
    tenant = Tenant.objects.create(name=f"{name}-team")
    queue = Queue.objects.create(tenant=tenant, resource_group=group, name="default")
    gpus = nodes * gpus_per_node
    for dim, amount in (
        ("devices", 1000 * gpus),
        ("memory_mib", 81920 * gpus),
        ("cores_percent", 100 * gpus),
    ):
        Quota.objects.create(
            tenant=tenant, resource_group=group, flavor="*", dimension=dim, nominal=amount
        )
    return group, tenant, queue, gpus


def _member_token(name: str, tenant: Tenant) -> str:
    """The API token of a new member ``<name>-user`` of ``tenant``."""
    user = get_user_model().objects.create_user(f"{name}-user", password=f"{name}-user-pw")
    Membership.objects.create(user=user, tenant=tenant, role="member")
    return Token.objects.get_or_create(user=user)[0].key


def _body(queue_id: int, i: int) -> dict:
    share = SHARES[i % len(SHARES)]
    return {
        "queue": queue_id,
        "name": f"load-{i}",
        "cpu_milli": 1000,
        "host_memory_mib": 2048,
        "duration_s": 10_000_000,
        "containers": [{"device_count": 1, "memory_percent": share, "cores_percent": share}],
    }


@dataclass
class Watch:
    """Ids seen placed, with the monotonic time they were first seen."""

    queue_id: int
    placed: dict[int, float] = field(default_factory=dict)
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                now = time.monotonic()
                for pk in (
                    Job.objects.filter(queue_id=self.queue_id)
                    .exclude(state=JobState.QUEUED)
                    .values_list("pk", flat=True)
                ):
                    self.placed.setdefault(pk, now)
                time.sleep(POLL_S)
        finally:
            connection.close()


def _session(token: str) -> requests.Session:
    s = requests.Session()
    s.headers["Authorization"] = f"Token {token}"
    adapter = requests.adapters.HTTPAdapter(pool_connections=16, pool_maxsize=16)
    s.mount("http://", adapter)
    return s


def _submit(
    session: requests.Session, base_url: str, bodies: list[dict], batch: bool
) -> list[tuple[float, int | None, int]]:
    """POST ``bodies``: one ``POST /api/jobs/`` (one body, ``batch`` False) or one
    ``POST /api/jobs/batch/``; per job ``(sent at, job id or None, HTTP status or 0 for a
    broken connection)``."""
    sent = time.monotonic()
    url = base_url + ("/api/jobs/batch/" if batch else "/api/jobs/")
    try:
        r = session.post(url, json={"jobs": bodies} if batch else bodies[0], timeout=60)
    except requests.ConnectionError:
        return [(sent, None, 0)] * len(bodies)
    if r.status_code != 201:
        return [(sent, None, r.status_code)] * len(bodies)
    ids = [j["id"] for j in r.json()["jobs"]] if batch else [r.json().get("id")]
    return [(sent, pk, r.status_code) for pk in ids]


def _chunks(world: LoadWorld, first: int, jobs: int, batch: int) -> list[list[dict]]:
    """The bodies of jobs ``first`` .. ``first + jobs - 1`` in requests of ``batch``."""
    bodies = [_body(world.queue_id, first + i) for i in range(jobs)]
    return [bodies[i : i + batch] for i in range(0, jobs, batch)]


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def _wait_placed(watch: Watch, ids: set[int], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and not ids <= watch.placed.keys():
        time.sleep(POLL_S)


def burst(
    base_url: str,
    world: LoadWorld,
    jobs: int,
    clients: int,
    offset: int,
    batch: int = 1,
    timeout_s: float = 300.0,
) -> dict:
    """Submit ``jobs`` jobs with ``clients`` threads as fast as they go (one job per
    ``POST /api/jobs/``, or ``batch`` > 1 jobs per ``POST /api/jobs/batch/``); returns
    submissions/s, placed jobs/s (jobs / time from the first POST to the last job placed) and
    the submit→placed percentiles."""
    watch = Watch(world.queue_id)
    watcher = threading.Thread(target=watch.run, daemon=True)
    watcher.start()
    sessions = [_session(world.token) for _ in range(clients)]
    chunks = _chunks(world, offset, jobs, batch)
    start = time.monotonic()
    with ThreadPoolExecutor(clients) as pool:
        results = [
            one
            for done in pool.map(
                lambda i: _submit(sessions[i % clients], base_url, chunks[i], batch > 1),
                range(len(chunks)),
            )
            for one in done
        ]
    submitted_s = time.monotonic() - start
    sent = {pk: t for t, pk, _ in results if pk is not None}
    _wait_placed(watch, set(sent), timeout_s)
    watch.stop.set()
    watcher.join()
    close_old_connections()
    placed = [watch.placed[pk] for pk in sent if pk in watch.placed]
    lat = sorted(watch.placed[pk] - t for pk, t in sent.items() if pk in watch.placed)
    errors = sum(1 for _, pk, _ in results if pk is None)
    last = max(placed) if placed else start
    return {
        "jobs": jobs,
        "jobs_per_request": batch,
        "clients": clients,
        "http_errors": errors,
        "api_submissions_per_s": round(len(sent) / submitted_s, 1),
        "placed": len(placed),
        "placed_jobs_per_s": round(len(placed) / (last - start), 1) if placed else 0.0,
        "submit_to_placed_p50_s": _round(_percentile(lat, 50)),
        "submit_to_placed_p99_s": _round(_percentile(lat, 99)),
    }


def steady(
    base_url: str,
    world: LoadWorld,
    rate_per_s: float,
    seconds: float,
    offset: int,
    clients: int = 8,
    batch: int = 1,
    timeout_s: float = 120.0,
) -> dict:
    """Offer ``rate_per_s`` jobs/s for ``seconds`` (POSTs sent on schedule by ``clients``
    threads: one job each, or ``batch`` jobs every ``batch / rate_per_s`` s); returns the
    achieved rate and the submit→placed percentiles."""
    watch = Watch(world.queue_id)
    watcher = threading.Thread(target=watch.run, daemon=True)
    watcher.start()
    total = int(rate_per_s * seconds)
    sessions = [_session(world.token) for _ in range(clients)]
    chunks = _chunks(world, offset, total, batch)
    start = time.monotonic()

    def one(i: int):
        due = start + i * batch / rate_per_s
        delay = due - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        return _submit(sessions[i % clients], base_url, chunks[i], batch > 1)

    with ThreadPoolExecutor(clients) as pool:
        results = [r for done in pool.map(one, range(len(chunks))) for r in done]
    offered_s = time.monotonic() - start
    sent = {pk: t for t, pk, _ in results if pk is not None}
    _wait_placed(watch, set(sent), timeout_s)
    watch.stop.set()
    watcher.join()
    close_old_connections()
    lat = sorted(watch.placed[pk] - t for pk, t in sent.items() if pk in watch.placed)
    late = sum(1 for t, _, _ in results if t - start > seconds + 1.0)
    return {
        "offered_jobs_per_s": rate_per_s,
        "jobs_per_request": batch,
        "seconds": seconds,
        "jobs": total,
        "achieved_submissions_per_s": round(len(sent) / offered_s, 1),
        "sent_more_than_1s_late": late,
        "http_errors": sum(1 for _, pk, _ in results if pk is None),
        "placed": len(lat),
        "submit_to_placed_p50_s": _round(_percentile(lat, 50)),
        "submit_to_placed_p99_s": _round(_percentile(lat, 99)),
        "submit_to_placed_max_s": _round(lat[-1] if lat else None),
    }


def run_load(base_url: str, args) -> dict:
    """The load phases of ``python -m console.bench_e2e`` for each ``--batch`` size, each on
    its own synthetic cluster and group (``--load-nodes`` x 8 A100, FragGuard): a burst of
    ``--burst`` jobs from 8 clients, then ``--rate`` jobs/s offered for ``--seconds``."""
    out = {}
    for size in (int(b) for b in str(args.batch).split(",") if b):
        name = f"load{size}"
        world = build_load_world(args.load_nodes, 8, "FragGuard", name=name)
        out[f"jobs_per_request_{size}"] = {
            "world": {"nodes": args.load_nodes, "gpus": world.gpus},
            "burst": burst(base_url, world, args.burst, 8, 0, batch=size),
            "steady": steady(base_url, world, args.rate, args.seconds, args.burst, batch=size),
        }
    return out


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)
