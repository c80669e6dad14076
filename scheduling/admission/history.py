"""History-aware fair share: usage decayed with a half-life over the ledger.

Source: Kueue Admission Fair Sharing (``pkg/util/admissionfairsharing/
admission_fair_sharing.go``: ``calculateAlphaRate``, ``CalculateDecayedConsumed``,
``CalculateEntryPenalty``). Kueue samples ``consumed' = consumed * (1 - a) + current * a``
with ``a = 1 - 0.5^(elapsed / half_life)``; over ledger intervals with a constant amount the
recurrence has an exact closed form, used here without sampling error::

    decayed(t) = sum_i amount_i * (2^(-(t - min(end_i, t)) / H) - 2^(-(t - start_i) / H))

(an open interval ends at ``t``). It tends to the current usage while usage is constant and
halves every ``H`` once it stops. A job admitted in the current cycle adds Kueue's entry
penalty ``weighted charges * a(sampling interval)`` at once, because its ledger interval has
not accumulated anything yet.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from scheduling.admission.types import AdmissionInputError, Dimension, FlavorResource


@dataclass(frozen=True, slots=True)
class UsageInterval:
    """One ledger interval: ``amount`` held from ``start`` to ``end`` (None = still held).

    ``amount`` is already weighted (e.g. whole devices); times are timezone-aware.
    """

    amount: float
    start: datetime
    end: datetime | None = None


def alpha(elapsed_s: float, half_life_s: float) -> float:
    """Kueue ``calculateAlphaRate``: ``1 - 0.5^(elapsed / half life)``.

    Raises:
        AdmissionInputError: ``half_life_s`` <= 0.
    """
    if half_life_s <= 0:
        raise AdmissionInputError("half_life_s must be > 0")
    return 1.0 - 0.5 ** (max(0.0, elapsed_s) / half_life_s)


def decayed_usage(intervals: Iterable[UsageInterval], now: datetime, half_life_s: float) -> float:
    """Decayed usage at ``now`` of the ``intervals`` (module docstring formula); intervals
    that start after ``now`` count nothing.

    Raises:
        AdmissionInputError: ``half_life_s`` <= 0.
    """
    if half_life_s <= 0:
        raise AdmissionInputError("half_life_s must be > 0")
    total = 0.0
    for interval in intervals:
        if interval.start >= now:
            continue
        end = now if interval.end is None or interval.end > now else interval.end
        since_end = (now - end).total_seconds() / half_life_s
        since_start = (now - interval.start).total_seconds() / half_life_s
        total += interval.amount * (2.0**-since_end - 2.0**-since_start)
    return total


def weighted_amount(
    charges: Mapping[FlavorResource, int], weights: Mapping[Dimension, float]
) -> float:
    """``sum of weight[dimension] * amount`` (Kueue ``resourceWeights``; a dimension without a
    weight counts 0)."""
    return sum(weights.get(Dimension(fr[1]), 0.0) * amount for fr, amount in charges.items())


def entry_penalty(
    charges: Mapping[FlavorResource, int],
    weights: Mapping[Dimension, float],
    interval_s: float,
    half_life_s: float,
) -> float:
    """Kueue ``CalculateEntryPenalty``: ``weighted charges * alpha(interval, half life)``."""
    return weighted_amount(charges, weights) * alpha(interval_s, half_life_s)
