"""Rate limiting of write endpoints (rate ``DEFAULT_THROTTLE_RATES["writes"]``)."""

from rest_framework.permissions import SAFE_METHODS
from rest_framework.throttling import UserRateThrottle


class WriteRateThrottle(UserRateThrottle):
    """Throttles POST/PUT/PATCH/DELETE per user; reads are never throttled."""

    scope = "writes"

    def allow_request(self, request, view):
        if request.method in SAFE_METHODS:
            return True
        return super().allow_request(request, view)
