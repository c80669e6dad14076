"""One live admission cycle of mixed request shapes, with and without the placement core's
incremental node selection (phase ``cycle`` of ``python -m console.bench_e2e``).

Two identical worlds (``--cycle-nodes`` nodes x 8 A100 each, a HAMi-policy group over each,
one tenant with quota for all of it) get the same ``--cycle-jobs`` queued jobs, drawn from 40
job templates of shapes the trace fast path declines: 1, 2 or 4 devices, absolute device memory
or a memory share unlike the cores share, type include/exclude lists, a zone node selector,
HAMi per-pod policy annotations, two containers, 2-3 pod gangs. Then one admission cycle
(:func:`scheduling.services.cycle.run_admission_cycle`, in this process, batch = all jobs) runs
on each world, the first with the selector (``PLACEMENT_INCREMENTAL_SELECTOR = True``), the
second without it, after a warm-up cycle on a 4-node world. Reported per run: wall and CPU
seconds of the cycle, jobs admitted, and whether both worlds placed every job on the same node
numbers.
"""

from __future__ import annotations

import random
import time
from dataclasses import replace

from django.test import override_settings

from console.bench_e2e.load import MODEL, build_pool
from scheduling.choices import JobState
from scheduling.models import Job, Placement, Queue
from scheduling.services.cycle import run_admission_cycle
from scheduling.services.jobs import ContainerSpec, JobSpec, enqueue_job

GPUS_PER_NODE = 8


def build_world(tag: str, nodes: int) -> Queue:
    """``nodes`` nodes "cyc-<tag>-n<i>" of 8 A100 labelled ``pool=cyc-<tag>`` and zone a/b/c
    (in turn), a HAMi binpack/spread group over them and a tenant queue with quota for all
    (:func:`console.bench_e2e.load.build_pool`)."""
    return build_pool(f"cyc-{tag}", nodes, GPUS_PER_NODE, zones=True)[2]


def job_specs(jobs: int, templates: int = 40, seed: int = 7) -> list[JobSpec]:
    """``jobs`` specs drawn from ``templates`` job templates of the mixed shapes of the module
    docstring (a queue where users resubmit the same jobs; seeded)."""
    rnd = random.Random(seed)  # noqa: S311 - reproducible job mix, not security
    pool = _templates(rnd, templates)
    return [replace(rnd.choice(pool), name=f"cyc-{k}") for k in range(jobs)]


def _templates(rnd: random.Random, count: int) -> list[JobSpec]:
    out = []
    for k in range(count):
        kind = rnd.randrange(7)
        main = ContainerSpec(
            device_count=rnd.choice((1, 1, 2, 4)),
            device_memory_mib=rnd.choice((4000, 10000, 20000)) if kind in (0, 1) else 0,
            memory_percent=None if kind in (0, 1) else rnd.choice((10, 25, 50)),
            cores_percent=rnd.choice((10, 25, 50, 100)),
            device_types=[MODEL] if kind == 2 else [],
            device_types_exclude=["Tesla-T4"] if kind == 3 else [],
        )
        containers = [main]
        if kind == 4:
            containers.append(
                ContainerSpec(name="side", device_count=1, device_memory_mib=2000, cores_percent=10)
            )
        annotations = {}
        if rnd.random() < 0.3:
            annotations["hami.io/node-scheduler-policy"] = rnd.choice(("binpack", "spread"))
        out.append(
            JobSpec(
                name=f"template-{k}",
                containers=containers,
                pod_count=rnd.choice((2, 3)) if kind == 5 else 1,
                cpu_milli=rnd.choice((1000, 4000, 8000)),
                host_memory_mib=rnd.choice((4096, 16384)),
                duration_s=10_000_000,
                node_selector={"zone": rnd.choice("abc")} if kind == 6 else {},
                annotations=annotations,
            )
        )
    return out


def _placed_nodes(queue: Queue) -> dict[str, list[str]]:
    """Job name -> node numbers of its placements (the tag-free suffix of the node names)."""
    out: dict[str, list[str]] = {}
    rows = Placement.objects.filter(job__queue=queue).values_list("job__name", "node__name")
    for job, node in rows.order_by("job__name", "node__name"):
        out.setdefault(job, []).append(node.rsplit("-", 1)[-1])
    return out


def run_cycles(nodes: int, jobs: int) -> dict:
    """Build both worlds, queue the jobs, run one cycle each (module docstring)."""
    specs = job_specs(jobs)
    warm = build_world("warm", 4)  # first cycle of the process pays imports and catalogue reads
    for spec in specs[:10]:
        enqueue_job(warm, spec, enqueue=False, check_fit=False)
    run_admission_cycle(warm.resource_group_id, batch=10)
    queues = {tag: build_world(tag, nodes) for tag in ("selector", "loop")}
    for queue in queues.values():
        for spec in specs:
            enqueue_job(queue, spec, enqueue=False, check_fit=False)
    out: dict = {"nodes": nodes, "gpus": nodes * GPUS_PER_NODE, "jobs": jobs}
    for tag, queue in queues.items():
        with override_settings(PLACEMENT_INCREMENTAL_SELECTOR=tag == "selector"):
            wall, cpu = time.perf_counter(), time.process_time()
            report = run_admission_cycle(queue.resource_group_id, batch=jobs)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        out[tag] = {
            "cycle_wall_s": round(wall, 2),
            "cycle_cpu_s": round(cpu, 2),
            "admitted": len(report.admitted),
            "queued_after": Job.objects.filter(queue=queue, state=JobState.QUEUED).count(),
        }
    out["same_placements"] = _placed_nodes(queues["selector"]) == _placed_nodes(queues["loop"])
    return out
