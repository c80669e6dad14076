"""Signals other apps listen to (the scheduling app never imports its listeners)."""

from django.dispatch import Signal

#: Sent after every admission cycle that ran (not when locked out), after commit.
#: Keyword arguments: ``group_name`` (str), ``duration_s`` (float, wall time),
#: ``admitted`` (int jobs), ``preempted`` (int jobs).
admission_cycle_finished = Signal()
