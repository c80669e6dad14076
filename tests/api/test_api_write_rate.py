"""The write rate limits (issue 37): a batch has its own job allowance so the documented 500
fit at the default rates, a batch heavier than a whole window is a clear 400, and a 429's
``Retry-After`` is the exact wait after which the same request is accepted.

The test settings raise both rates; every test here sets the rates it means and runs on a
fake clock (``WeightedRateThrottle.timer``), so nothing sleeps.
"""

import math

import pytest
from django.core.cache import cache

from core.api.throttling import WeightedRateThrottle
from scheduling.models import Job
from tests.api.test_api_directory import as_user
from tests.api.test_api_job_batch import URL, _item

pytestmark = pytest.mark.django_db

#: The defaults of console/settings/base.py (API_WRITE_RATE, API_BATCH_JOB_RATE).
DEFAULT_RATES = {"writes": "120/min", "batch_jobs": "1000/min"}


class Clock:
    """A throttle ``timer``: seconds, moved by hand."""

    def __init__(self, now: float = 1_000_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch):
    fake = Clock()
    monkeypatch.setattr(WeightedRateThrottle, "timer", fake)
    return fake


@pytest.fixture
def rates(settings, world):
    """Set ``DEFAULT_THROTTLE_RATES`` (the defaults unless changed) with empty histories for
    the world's users; only their throttle keys are dropped, not the shared cache."""
    keys = [
        f"throttle_{scope}_{world[name].pk}"
        for scope in DEFAULT_RATES
        for name in ("alice", "bob", "root")
    ]

    def use(**changed: str) -> None:
        settings.REST_FRAMEWORK = {
            **settings.REST_FRAMEWORK,
            "DEFAULT_THROTTLE_RATES": {**DEFAULT_RATES, **changed},
        }

    cache.delete_many(keys)
    use()
    yield use
    cache.delete_many(keys)


def _batch(client, queue, prefix: str, size: int):
    items = [_item(queue, f"{prefix}-{i}") for i in range(size)]
    return client.post(URL, {"jobs": items}, format="json")


def _single(client, queue, name: str):
    return client.post("/api/jobs/", _item(queue, name), format="json")


def test_a_500_job_batch_is_accepted_at_the_default_rates(api, world, rates, clock):
    client = as_user(api, world["alice"])
    full = _batch(client, world["queue_a"], "full", 500)
    assert full.status_code == 201, full.content[:500]
    assert len(full.json()["jobs"]) == 500
    # the batch was one write of API_WRITE_RATE: single submissions still pass
    assert _single(client, world["queue_a"], "after").status_code == 201
    clock.now += 1
    assert _batch(client, world["queue_a"], "again", 500).status_code == 201  # 1000 of 1000
    clock.now += 1
    third = _batch(client, world["queue_a"], "third", 1)
    assert third.status_code == 429
    assert third["Retry-After"] == "58"  # the first 500 leave the window 60 s after they came
    assert third.json()["error"]["code"] == "throttled"


def test_a_client_that_waits_the_retry_after_is_then_accepted(api, world, rates, clock):
    rates(batch_jobs="10/min")
    client = as_user(api, world["alice"])
    start = clock.now
    assert _batch(client, world["queue_a"], "a", 4).status_code == 201
    clock.now = start + 20.25
    assert _batch(client, world["queue_a"], "b", 4).status_code == 201
    clock.now = start + 30.5
    # the wait depends on the weight: 3 more jobs need the 4 of t=0 gone, 7 more also those
    # of t=20.25 (DRF's own estimate would be the same for both)
    small = _batch(client, world["queue_a"], "small", 3)
    heavy = _batch(client, world["queue_a"], "heavy", 7)
    assert (small.status_code, small["Retry-After"]) == (429, str(math.ceil(60 - 30.5)))
    assert (heavy.status_code, heavy["Retry-After"]) == (429, str(math.ceil(80.25 - 30.5)))

    # a client that obeys the header: one second short is still refused, the wait is not
    answer, tries = heavy, 0
    while answer.status_code == 429:
        tries += 1
        clock.now += int(answer["Retry-After"])
        answer = _batch(client, world["queue_a"], "heavy", 7)
    assert answer.status_code == 201, answer.content
    assert tries == 1 and clock.now == start + 30.5 + 50
    assert Job.objects.filter(name__startswith="heavy-").count() == 7
    assert not Job.objects.filter(name__startswith="small-").exists()


def test_one_second_before_the_retry_after_is_still_refused(api, world, rates, clock):
    rates(writes="2/min")
    client = as_user(api, world["alice"])
    start = clock.now
    assert _single(client, world["queue_a"], "w0").status_code == 201
    clock.now = start + 15.5
    assert _single(client, world["queue_a"], "w1").status_code == 201
    clock.now = start + 20
    refused = _single(client, world["queue_a"], "w2")
    assert (refused.status_code, refused["Retry-After"]) == (429, "40")
    clock.now += 39
    early = _single(client, world["queue_a"], "w2")
    assert (early.status_code, early["Retry-After"]) == (429, "1")
    clock.now += 1
    assert _single(client, world["queue_a"], "w2").status_code == 201


def test_a_refused_batch_uses_up_neither_allowance(api, world, rates, clock):
    rates(writes="2/min", batch_jobs="10/min")
    client = as_user(api, world["alice"])
    start = clock.now
    assert _batch(client, world["queue_a"], "a", 8).status_code == 201  # 1 write, 8 jobs
    clock.now = start + 1
    too_many = _batch(client, world["queue_a"], "b", 5)
    assert (too_many.status_code, too_many["Retry-After"]) == (429, "59")
    # the refused batch took no write: the second write of the window is still free
    assert _single(client, world["queue_a"], "single").status_code == 201
    clock.now = start + 2
    no_write = _batch(client, world["queue_a"], "c", 1)  # jobs fit, writes do not
    assert (no_write.status_code, no_write["Retry-After"]) == (429, "58")
    clock.now = start + 60  # the batch of t=0 (its write and its 8 jobs) leaves the window
    assert _batch(client, world["queue_a"], "b", 2).status_code == 201  # 8 + 2 would not fit
    assert _batch(client, world["queue_a"], "d", 1).status_code == 429  # single of t=1 + b


def test_a_batch_heavier_than_the_whole_window_is_a_clear_400(api, world, rates, clock):
    rates(batch_jobs="100/min")
    client = as_user(api, world["alice"])
    for _ in range(2):  # the same answer on every try: no 429 that could never succeed
        refused = _batch(client, world["queue_a"], "big", 130)
        assert refused.status_code == 400
        assert "Retry-After" not in refused
        error = refused.json()["error"]
        assert error["code"] == "exceeds_rate"
        assert error["fields"] == {
            "jobs": [
                "130 jobs in one request are more than API_BATCH_JOB_RATE (100/min) allows "
                "in a whole window; send at most 100 jobs per request."
            ]
        }
    assert not Job.objects.filter(name__startswith="big-").exists()
    # nothing was counted: the largest batch the rate allows passes right after
    assert _batch(client, world["queue_a"], "fits", 100).status_code == 201


def test_a_batch_over_the_documented_bound_gets_its_field_error_not_the_rate(
    api, world, rates, clock
):
    rates(batch_jobs="100/min")
    client = as_user(api, world["alice"])
    oversized = _batch(client, world["queue_a"], "over", 501)
    assert oversized.status_code == 400
    assert oversized.json()["error"]["code"] == "invalid"
    assert list(oversized.json()["error"]["fields"]) == ["jobs.non_field_errors"]
    assert _batch(client, world["queue_a"], "fits", 99).status_code == 201  # it counted 1


def test_rates_are_per_user(api, world, rates, clock):
    rates(batch_jobs="5/min")
    alice = as_user(api, world["alice"])
    assert _batch(alice, world["queue_a"], "a", 5).status_code == 201
    assert _batch(alice, world["queue_a"], "a2", 1).status_code == 429
    bob = as_user(api, world["bob"])
    assert _batch(bob, world["queue_b"], "b", 5).status_code == 201
