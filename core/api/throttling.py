"""Rate limiting of write endpoints (rate ``DEFAULT_THROTTLE_RATES["writes"]``)."""

import logging
import time

from django.core.cache import caches
from rest_framework.permissions import SAFE_METHODS
from rest_framework.throttling import UserRateThrottle

from core.dispatch import CACHE_ERRORS

logger = logging.getLogger(__name__)
#: Seconds between two "cache unavailable" warnings of one process.
WARN_EVERY_S = 60.0
_last_warning = 0.0


class WriteRateThrottle(UserRateThrottle):
    """Throttles POST/PUT/PATCH/DELETE per user; reads are never throttled.

    The request history lives in the shared cache (Redis). When that cache is unreachable
    the throttle degrades to the process-local cache ``CACHES["local"]`` (the limit then
    holds per web worker process) and logs a warning, so writes keep working during a Redis
    outage instead of failing with 500.

    A view may weigh a request: ``view.write_cost(request)`` (a positive int, default 1) is
    how many writes it counts for, e.g. one per job of a batch submission; a request that
    would take the history past the rate is refused whole.
    """

    scope = "writes"
    cost = 1
    num_requests: int  # set by SimpleRateThrottle.__init__ from the rate
    duration: int

    def allow_request(self, request, view):
        if request.method in SAFE_METHODS:
            return True
        weigh = getattr(view, "write_cost", None)
        self.cost = max(1, int(weigh(request))) if weigh is not None else 1
        try:
            return super().allow_request(request, view)
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
            return super().allow_request(request, view)

    def throttle_success(self):
        """Record ``cost`` writes at ``now`` (the parent records one), unless they would
        exceed the rate."""
        if len(self.history) + self.cost > self.num_requests:
            return self.throttle_failure()
        self.history[:0] = [self.now] * self.cost
        self.cache.set(self.key, self.history, self.duration)
        return True
