"""``manage.py seed_demo``: the built-in heterogeneous demo, created once (a demo seeded before
is left as the operator left it; :func:`scheduling.services.demo.seed_demo`)."""

import os

from django.core.management.base import BaseCommand

from scheduling.services.demo import DEMO_USERS, seed_demo


class Command(BaseCommand):
    help = "Create the demo cluster (NVIDIA, Ascend, Cambricon, Hygon), tenants, users and jobs."

    def handle(self, *args, **options):
        password = os.environ.get("CONSOLE_DEMO_PASSWORD", "console-demo")
        created = seed_demo(password)
        self.stdout.write(
            f"demo: +{created['nodes']} nodes, +{created['devices']} devices, "
            f"+{created['jobs']} jobs"
        )
        users = ", ".join(
            ["admin (platform admin)"] + [f"{u} ({r} of {t})" for u, t, r in DEMO_USERS]
        )
        self.stdout.write(f"log in as {users}; password from CONSOLE_DEMO_PASSWORD ({password!r})")
