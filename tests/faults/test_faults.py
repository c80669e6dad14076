"""Fault suite (marker ``faults``, run by ``make test``): the console keeps its promises
through the faults an operator meets, on real processes and servers of its own
(:mod:`tests.faults.conftest`).

One run, in order: jobs submitted through the API; the Celery worker and beat killed
(``SIGKILL``) while an admission cycle holds its lock, then restarted; Redis stopped while
jobs are submitted (each must be accepted), then restarted; PostgreSQL stopped under the
running worker, beat and a web process, then restarted (they recover without a restart of
their own);
duplicate and out-of-order task deliveries. Afterwards every accepted job ran exactly once
and finished (two long ones still run), no device was ever booked beyond its capacity
(sampled throughout), no quota invariant is broken and the usage stored equals the usage
recomputed from the live placements.
"""

from __future__ import annotations

import time

import pytest

from console import embedded
from tests.faults.actor import JOB_SECONDS
from tests.faults.conftest import wait_for

pytestmark = [pytest.mark.faults, pytest.mark.django_db]

# Devices whose live bookings exceed their memory, cores or slots (never expected).
OVERBOOKED_SQL = """
SELECT d.uuid, SUM(pd.memory_mib), SUM(pd.cores_percent), SUM(pd.slots)
FROM scheduling_placementdevice pd
JOIN scheduling_placement p ON p.id = pd.placement_id
JOIN scheduling_device d ON d.id = pd.device_id
WHERE p.state IN ('reserved', 'submitted', 'running')
GROUP BY d.id, d.uuid, d.memory_mib, d.cores_percent, d.split_count
HAVING SUM(pd.memory_mib) > d.memory_mib OR SUM(pd.cores_percent) > d.cores_percent
    OR SUM(pd.slots) > d.split_count
"""
CYCLE_RUNNING_SQL = """
SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted
"""


def _accepted(answer: dict) -> list[str]:
    statuses = answer["statuses"]
    assert set(statuses.values()) == {201}, answer["errors"]
    return sorted(statuses)


def test_no_job_lost_duplicated_or_overbooked_through_the_faults(stack):
    stack.actor("seed")
    stack.start("worker")
    stack.start("beat")
    # two jobs that run through it all: the final check compares live usage, not zeros
    running = _accepted(stack.actor("submit", "long", "2", "3600"))
    accepted = running + _accepted(stack.actor("submit", "first", "16"))
    overbooked: list = []

    # 1. worker and beat die while a cycle holds its group lock; both come back
    wait_for(
        lambda: stack.sql(CYCLE_RUNNING_SQL)[0][0],
        60,
        step=0.01,
        what="an admission cycle in progress",
    )
    stack.kill("worker")
    stack.kill("beat")
    overbooked += stack.sql(OVERBOOKED_SQL)
    stack.start("worker")
    stack.start("beat")

    # 2. Redis (cache and broker) down: the API still accepts every job, once
    embedded.stop_redis(stack.base)
    accepted += _accepted(stack.actor("submit", "no-redis", "6"))
    embedded.ensure_redis(stack.base)

    # 3. PostgreSQL stopped under the running worker and beat and a web process that has
    #    served requests, then started again: all carry on without a restart of their own
    gate = stack.base / "gate"
    gate.mkdir()
    web = stack.actor_process("submit-across", "pg-restart", "3", str(gate))
    wait_for(
        lambda: (gate / "ready").exists() or web.poll() is not None,
        120,
        what="the first submissions",
    )
    embedded.stop_postgres(stack.base)
    time.sleep(2)
    embedded.ensure_postgres(stack.base)
    (gate / "go").touch()
    accepted += _accepted(stack.answer(web))
    overbooked += stack.sql(OVERBOOKED_SQL)

    # 4. duplicate and out-of-order deliveries of the cycle and submission tasks
    assert stack.actor("redeliver")["jobs"] == len(accepted)

    def all_finished():
        nonlocal overbooked
        overbooked += stack.sql(OVERBOOKED_SQL)
        states = dict(stack.sql("SELECT name, state FROM scheduling_job"))
        return all(
            state == ("running" if name in running else "succeeded")
            for name, state in states.items()
        )

    try:
        wait_for(all_finished, 30 * JOB_SECONDS + 60, step=0.25, what="every job finished")
    except AssertionError as exc:
        states = stack.sql("SELECT state, count(*) FROM scheduling_job GROUP BY state")
        raise AssertionError(f"{exc}: {states}\nworker log:\n{stack.log('worker')}") from None
    stack.kill("beat")
    stack.kill("worker")

    found = stack.actor("check")
    assert sorted(found["jobs"]) == sorted(accepted)  # none lost, none extra
    assert {name: state for name, state in found["jobs"].items() if name in running} == (
        dict.fromkeys(running, "running")
    )
    assert {state for name, state in found["jobs"].items() if name not in running} == {"succeeded"}
    assert found["live_usage"], "the long jobs' usage is stored"
    assert found["duplicate_names"] == []
    assert found["ran_twice"] == []
    assert found["multi_placed_jobs"] == []
    assert found["overbooked_devices"] == {} and overbooked == []
    assert found["drift"] == [] and found["violations"] == []
