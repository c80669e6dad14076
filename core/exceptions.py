"""Domain errors raised by services; the API maps them to JSON responses in one place."""


class DomainError(Exception):
    """Base class: a request that is well-formed but cannot be carried out."""

    status_code = 409
    code = "conflict"

    def __init__(self, message: str, *, field: str | None = None):
        super().__init__(message)
        self.message = message
        self.field = field


class NotFound(DomainError):
    status_code = 404
    code = "not_found"


class Conflict(DomainError):
    status_code = 409
    code = "conflict"


class InvalidRequest(DomainError):
    status_code = 400
    code = "invalid"


class ExceedsRateWindow(InvalidRequest):
    """A write heavier than its rate limit counts in a whole window (e.g. a batch of more
    jobs than ``API_BATCH_JOB_RATE`` allows): no wait would let it through, so it answers
    400 naming the largest weight the rate allows, never 429 (``core.api.throttling``)."""

    code = "exceeds_rate"


class NeverFits(InvalidRequest):
    """A request no node of its pool could ever hold (by shape, not by current load).

    ``reasons``: for a batch, ``{index of the item: why}`` of every such item (the message is
    the first); empty for a single request.
    """

    code = "never_fits"

    def __init__(
        self, message: str, *, field: str | None = None, reasons: dict[int, str] | None = None
    ):
        super().__init__(message, field=field)
        self.reasons = dict(reasons or {})


class Forbidden(DomainError):
    status_code = 403
    code = "forbidden"
