"""``manage.py seed_demo_history``: a few hours of history for the built-in demo (``make run``
runs it after ``seed_demo``; once: a second run writes nothing).

Hours from ``--hours`` or ``DEMO_HISTORY_HOURS`` (default 6, at most 48; 0 = none). Writes
nothing outside the demo (:mod:`telemetry.services.demo_history`)."""

import time

from django.core.management.base import BaseCommand, CommandError

from core.env import env_int
from telemetry.services.demo_history import MAX_HOURS, seed_demo_history


class Command(BaseCommand):
    help = "Seed hours of finished jobs, device rollups and trend rollups for the demo cluster."

    def add_arguments(self, parser):
        parser.add_argument("--hours", type=int, default=None, help="default DEMO_HISTORY_HOURS")

    def handle(self, *args, **options):
        hours = options["hours"]
        if hours is None:
            hours = env_int("DEMO_HISTORY_HOURS", 6, minimum=0)
        if not 0 <= hours <= MAX_HOURS:
            raise CommandError(f"--hours / DEMO_HISTORY_HOURS: 0 to {MAX_HOURS}, got {hours}")
        began = time.monotonic()
        counts = seed_demo_history(hours)
        if not counts.jobs:
            self.stdout.write("demo history: nothing to add (present already, or no demo)")
            return
        self.stdout.write(
            f"demo history: {counts.hours:g} h, +{counts.jobs} finished jobs, "
            f"+{counts.rollups} device rollups, +{counts.trend_rollups} trend rollups "
            f"in {time.monotonic() - began:.1f} s"
        )
