"""``manage.py import_trace``: load an Alibaba GPU-sharing trace into a simulated cluster."""

import time

from django.core.management.base import BaseCommand, CommandError

from scheduling.dispatch import enqueue_admission_cycle
from scheduling.placement.whatif.trace import TraceError
from scheduling.services.trace_import import import_trace


class Command(BaseCommand):
    help = (
        "Load openb_node_list_*.csv as a simulated cluster and openb_pod_list_*.csv as jobs "
        "spread over N tenants; the admission cycle then places them."
    )

    def add_arguments(self, parser):
        parser.add_argument("--nodes", required=True, help="node list CSV")
        parser.add_argument("--pods", required=True, help="pod list CSV")
        parser.add_argument("--cluster", default="openb", help="name of the new cluster")
        parser.add_argument("--tenants", type=int, default=4, help="demo tenants (default 4)")
        parser.add_argument(
            "--time-scale",
            type=float,
            default=1.0,
            help="simulated seconds per trace second (default 1.0)",
        )
        parser.add_argument(
            "--quota-share",
            type=float,
            default=1.0,
            help="each tenant's nominal quota as a share of capacity (default 1.0)",
        )
        parser.add_argument(
            "--no-place", action="store_true", help="only load; do not trigger admission"
        )
        parser.add_argument(
            "--fragmentation-policy",
            default="FragGuard",
            choices=["FragGuard", "FGD", "none"],
            help="the resource group's fragmentation policy (default FragGuard; none = HAMi "
            "node score)",
        )

        parser.add_argument(
            "--nodes-per-rack",
            type=int,
            default=8,
            help="synthetic rack layout: nodes a rack, in node list order (default 8)",
        )
        parser.add_argument(
            "--racks-per-block",
            type=int,
            default=16,
            help="synthetic rack layout: racks a block (default 16)",
        )

    def handle(self, *args, **options):
        started = time.monotonic()
        try:
            result = import_trace(
                options["nodes"],
                options["pods"],
                cluster_name=options["cluster"],
                tenants=options["tenants"],
                time_scale=options["time_scale"],
                quota_share=options["quota_share"],
                fragmentation_policy=options["fragmentation_policy"],
                nodes_per_rack=options["nodes_per_rack"],
                racks_per_block=options["racks_per_block"],
            )
        except (TraceError, ValueError, OSError) as exc:
            raise CommandError(str(exc)) from exc
        elapsed = time.monotonic() - started
        self.stdout.write(
            f"imported cluster {result.cluster}: {result.nodes} nodes, {result.devices} devices, "
            f"{result.jobs} jobs over {result.tenants} tenants in {elapsed:.1f}s"
        )
        if not options["no_place"]:
            enqueue_admission_cycle(result.group_id)
            self.stdout.write("admission cycle enqueued; the workers place the jobs")
