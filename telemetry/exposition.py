"""Prometheus text exposition → plain samples, tolerant of malformed and truncated payloads.

Parsing is prometheus_client's (``prometheus_client.parser.text_string_to_metric_families``).
A payload that does not parse as a whole is parsed again line by line so that one bad line
(a truncated last line, a value that is not a number, an HTML error page) costs that line only;
the rejected lines are counted and the first error kept for the target's status.

Pure: no Django. Used by :mod:`telemetry.services` for every scrape.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

__all__ = ["RawSample", "ParseResult", "parse_exposition"]

MAX_ERROR_CHARS = 300


@dataclass(frozen=True, slots=True)
class RawSample:
    """One sample line of an exposition.

    Attributes:
        name: the sample name as exposed (e.g. ``DCGM_FI_DEV_GPU_UTIL``).
        labels: label name → value.
        value: the value (finite; NaN and ±Inf samples are dropped and counted).
    """

    name: str
    labels: dict[str, str]
    value: float


@dataclass
class ParseResult:
    """What a payload yielded.

    Attributes:
        samples: the parsed finite samples, in payload order.
        rejected_lines: sample lines that did not parse.
        non_finite: samples dropped because their value was NaN or infinite.
        first_error: the first parse error, ``"line N: message"`` (empty when none).
    """

    samples: list[RawSample] = field(default_factory=list)
    rejected_lines: int = 0
    non_finite: int = 0
    first_error: str = ""

    @property
    def ok(self) -> bool:
        """True when every line parsed."""
        return self.rejected_lines == 0

    @property
    def empty(self) -> bool:
        """True when no usable sample came out."""
        return not self.samples


def _collect(families, out: ParseResult) -> None:
    for family in families:
        for sample in family.samples:
            value = float(sample.value)
            if not math.isfinite(value):
                out.non_finite += 1
                continue
            out.samples.append(RawSample(sample.name, dict(sample.labels), value))


def parse_exposition(text: str) -> ParseResult:
    """Parse a Prometheus text exposition (version 0.0.4).

    Args:
        text: the payload, decoded.

    Returns:
        The samples and the count of rejected lines. Never raises on bad input.
    """
    result = ParseResult()
    try:
        _collect(text_string_to_metric_families(text), result)
        return result
    except Exception:  # noqa: BLE001 - any parser failure falls back to per-line parsing
        result = ParseResult()
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        try:
            _collect(text_string_to_metric_families(stripped + "\n"), result)
        except Exception as exc:  # noqa: BLE001 - one bad line costs that line only
            result.rejected_lines += 1
            if not result.first_error:
                result.first_error = f"line {number}: {exc}"[:MAX_ERROR_CHARS]
    return result
