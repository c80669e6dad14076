"""Rate limiting of write endpoints, per user, over a sliding window.

Two scopes of ``REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]``, read when a throttle is made (for
every request, so a changed setting applies to the next one):

* ``writes`` (``API_WRITE_RATE``, default ``120/min``): every POST/PUT/PATCH/DELETE counts one
  write, a batch submission included;
* ``batch_jobs`` (``API_BATCH_JOB_RATE``, default ``1000/min``): every job submitted through
  ``POST /api/jobs/batch/`` counts one.

Why a batch has its own allowance rather than one write per job: the batch endpoint takes up
to 500 jobs (``MAX_BATCH_JOBS``) in one transaction whose query count does not grow with its
size, so a job of a batch costs the database far less than a ``POST /api/jobs/``; counted
against ``writes`` the documented 500 could never be accepted at the default rate. The batch
request still counts one write, so single-job batches cannot step around ``API_WRITE_RATE``.

Refusals:

* 429 (``Throttled``) with ``Retry-After`` = the whole seconds, rounded up, until enough of the
  recorded history has left the window for this request's weight to fit (computed from the
  stored timestamps); a client that waits exactly that long and retries is accepted, unless
  it wrote something else meanwhile;
* 400 (:class:`~core.exceptions.ExceedsRateWindow`) for a request heavier than the whole
  window (more jobs in one batch than ``API_BATCH_JOB_RATE`` counts): waiting can never help,
  so it names the largest weight the rate allows instead of answering a 429.

A refused request records nothing. The history lives in the shared cache (Redis); when that
cache is unreachable the throttles count in the process-local cache ``CACHES["local"]`` (the
limit then holds per web worker process) and log a warning, so writes keep working during a
Redis outage instead of failing with 500.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar, cast

from django.core.cache import caches
from rest_framework.permissions import SAFE_METHODS
from rest_framework.settings import api_settings
from rest_framework.throttling import BaseThrottle, UserRateThrottle

from core.dispatch import CACHE_ERRORS
from core.exceptions import ExceedsRateWindow

logger = logging.getLogger(__name__)
#: Seconds between two "cache unavailable" warnings of one process.
WARN_EVERY_S = 60.0
_last_warning = 0.0
T = TypeVar("T")


class WeightedRateThrottle(UserRateThrottle):
    """DRF's sliding-window user throttle where one request may count for several units
    (:meth:`weight`). Reads (GET, HEAD, OPTIONS) are never throttled.

    Besides DRF's ``allow_request`` it offers the two halves, :meth:`fits` then
    :meth:`record`, so that :class:`BatchSubmitThrottle` can admit a request under several
    scopes at once or under none.

    Class attributes: ``scope`` (the key of ``DEFAULT_THROTTLE_RATES``), ``setting`` (the
    environment variable of the rate, named in refusals), ``unit`` (what one count is, plural)
    and ``field`` (the request field a too-heavy refusal is filed under).
    """

    scope = "writes"
    setting = "API_WRITE_RATE"
    unit = "writes"
    field: str | None = None
    cost = 1
    num_requests: int  # set by SimpleRateThrottle.__init__ from the rate
    duration: int  # seconds of the window

    def get_rate(self) -> str | None:
        """The rate of ``scope`` from the live ``api_settings`` (DRF's class attribute
        ``THROTTLE_RATES`` is frozen at import, so an overridden setting would not apply).

        Raises:
            ImproperlyConfigured: no rate for ``scope``.
        """
        self.THROTTLE_RATES = cast(dict[str, str | None], api_settings.DEFAULT_THROTTLE_RATES)
        return super().get_rate()

    def weight(self, request, view) -> int:
        """Units this request counts for (at least 1); 1 unless a subclass says otherwise."""
        return 1

    def allow_request(self, request, view) -> bool:
        if not self.fits(request, view):
            return False
        self.record()
        return True

    def fits(self, request, view) -> bool:
        """Whether this request's weight fits in the window now; records nothing.

        Sets ``cost``, ``key``, ``history`` (timestamps, newest first, the expired dropped)
        and ``now`` (seconds, from ``timer``) for :meth:`record` and :meth:`wait`.

        Raises:
            ExceedsRateWindow: the weight is more than the rate counts in a whole window.
        """
        self.key = None
        if request.method in SAFE_METHODS or self.rate is None:
            return True
        self.cost = max(1, int(self.weight(request, view)))
        if self.cost > self.num_requests:
            raise ExceedsRateWindow(
                f"{self.cost} {self.unit} in one request are more than {self.setting} "
                f"({self.rate}) allows in a whole window; send at most {self.num_requests} "
                f"{self.unit} per request.",
                field=self.field,
            )
        self.key = self.get_cache_key(request, view)
        if self.key is None:
            return True
        self.history = self._on_cache(lambda: self.cache.get(self.key, []))
        self.now = self.timer()
        while self.history and self.history[-1] <= self.now - self.duration:
            self.history.pop()
        return len(self.history) + self.cost <= self.num_requests

    def record(self) -> None:
        """Record ``cost`` units at ``now`` (after :meth:`fits` answered True)."""
        if self.key is None:
            return
        self.history[:0] = [self.now] * self.cost
        self._on_cache(lambda: self.cache.set(self.key, self.history, self.duration))

    def wait(self) -> float:
        """Seconds (> 0 after a refusal) until enough of the history has left the window for
        ``cost`` more units to fit: the entry that must leave last is dropped once ``now``
        reaches its timestamp plus ``duration``. DRF rounds it up for ``Retry-After``."""
        excess = len(self.history) + self.cost - self.num_requests
        if excess <= 0:
            return 0.0
        return max(0.0, self.history[-excess] + self.duration - self.now)

    def _on_cache(self, operation: Callable[[], T]) -> T:
        """``operation()`` on the shared cache, or on ``CACHES["local"]`` while the shared one
        is unreachable (warned at most every :data:`WARN_EVERY_S` seconds)."""
        try:
            return operation()
        except CACHE_ERRORS as exc:
            global _last_warning
            if time.monotonic() - _last_warning > WARN_EVERY_S:
                _last_warning = time.monotonic()
                logger.warning(
                    "write throttle: shared cache unavailable (%s); counting in "
                    "this process until it is back",
                    exc,
                )
            self.cache = caches["local"]
            return operation()


class WriteRateThrottle(WeightedRateThrottle):
    """Every write request of a user counts one write of ``writes`` (``API_WRITE_RATE``)."""


class BatchJobRateThrottle(WeightedRateThrottle):
    """A batch submission counts one ``batch_jobs`` unit (``API_BATCH_JOB_RATE``) per job:
    ``view.batch_job_count(request)``."""

    scope = "batch_jobs"
    setting = "API_BATCH_JOB_RATE"
    unit = "jobs"
    field = "jobs"

    def weight(self, request, view) -> int:
        return view.batch_job_count(request)


class BatchSubmitThrottle(BaseThrottle):
    """Throttle of ``POST /api/jobs/batch/``: one write of :class:`WriteRateThrottle` and a
    unit of :class:`BatchJobRateThrottle` per job, both recorded or neither.

    Listing the two as separate ``throttle_classes`` would let DRF record the one that
    allows while the other refuses, so a refused batch would still use up allowance and the
    ``Retry-After`` of the refusing one would not be the time until the retry is accepted.
    Here the wait is the longest of the refusing parts; the others keep fitting meanwhile.

    Raises (from ``allow_request``):
        ExceedsRateWindow: more jobs than ``API_BATCH_JOB_RATE`` counts in a whole window.
    """

    part_classes: tuple[type[WeightedRateThrottle], ...] = (WriteRateThrottle, BatchJobRateThrottle)

    def __init__(self) -> None:
        self.parts = [cls() for cls in self.part_classes]
        self._wait: float | None = None

    def allow_request(self, request, view) -> bool:
        refused = [part for part in self.parts if not part.fits(request, view)]
        if refused:
            self._wait = max(part.wait() for part in refused)
            return False
        for part in self.parts:
            part.record()
        return True

    def wait(self) -> float | None:
        """Seconds until the refused request fits every part (see the class docstring)."""
        return self._wait
