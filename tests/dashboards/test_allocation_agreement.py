"""One data set, four readers: the overview, the nodes list, the quotas page and /metrics give
the same allocation for every vendor (scheduling.selectors.allocation's rule: a device counts
the larger of its booked memory share and booked cores share, capped at 1).

Three vendors, two devices each, one node each:
- NVIDIA A100 (81920 MiB): 40960 MiB / 30 % on one device -> 0.5 device.
- Ascend 910B (65536 MiB), booked by memory only as HAMi's Ascend templates do (cores 0):
  32768 MiB on one device and the whole 65536 MiB of the other -> 0.5 + 1 = 1.5 devices.
  (Counting booked cores, as /metrics once did, gave 0 here while the overview said 75 %.)
- Hygon DCU K100 (65536 MiB): 8192 MiB / 50 % cores -> 0.5 device.
"""

import re

import pytest

from scheduling.models import Node
from scheduling.selectors.quota_board import quota_board
from scheduling.services.usage import check_usage
from tests.builders import make_cluster, make_group, make_tenant, make_user
from tests.telemetry.dbhelpers import place

pytestmark = pytest.mark.django_db

SETS = {  # vendor: (model, memory MiB, cluster, bookings per device, expected devices)
    "NVIDIA": ("NVIDIA-A100-SXM4-80GB", 81920, "nv", [(40960, 30)], 0.5),
    "Ascend": ("Ascend910B", 65536, "asc", [(32768, 0), (65536, 0)], 1.5),
    "DCU": ("K100_AI", 65536, "dcu", [(8192, 50)], 0.5),
}


@pytest.fixture
def mixed(db):
    tenant_user = None
    for vendor, (model, mem, cluster, bookings, _) in SETS.items():
        make_cluster(cluster, nodes=1, gpus=2, memory_mib=mem, model=model, vendor=vendor)
        group = make_group(f"g-{cluster}", models=(model,), selector={"pool": cluster})
        tenant, queue = make_tenant(f"t-{cluster}", group, devices_milli=2000)
        tenant_user = tenant_user or make_user("viewer", tenant, "viewer")
        for i, (mib, cores) in enumerate(bookings):
            place(queue, f"{cluster}-{i}", [(f"GPU-{cluster}-0-{i}", mib, cores)])
        # placed by hand, not by a cycle: the usage reconcile charges them as a cycle would
        # (the quotas page reads the stored usage)
        check_usage(group.pk, repair=True)
    return make_user("admin", is_superuser=True)


def _metric(text, name, labels):
    pattern = re.escape(name + "{" + labels + "}") + r" ([0-9.e+-]+)"
    return float(re.search(pattern, text).group(1))


def test_overview_nodes_quotas_and_metrics_agree(client, mixed):
    client.force_login(mixed)
    overview = {r.vendor: r for r in client.get("/?fragment=1").context["vendors"]}
    nodes = client.get("/nodes/").context["allocation"]
    boards = {b.group.name: b for b in quota_board(None)}
    metrics = client.get("/metrics").content.decode()
    for vendor, (model, _mem, cluster, _b, expected) in SETS.items():
        node = Node.objects.get(name=f"{cluster}-n0")
        used_milli = sum(r.used for r in boards[f"g-{cluster}"].rows if r.dimension == "devices")
        figures = {
            "overview": overview[vendor].allocated_devices,
            "overview %": overview[vendor].allocated_pct / 100 * 2,
            "nodes list": nodes[node.pk].allocated_devices,
            "quotas page": used_milli / 1000,
            "metrics devices": _metric(
                metrics, "console_allocated_devices", f'model="{model}",vendor="{vendor}"'
            ),
            "metrics ratio": 2
            * _metric(metrics, "console_allocation_ratio", f'resource_group="g-{cluster}"'),
        }
        assert figures == {k: pytest.approx(expected) for k in figures}, vendor
        assert (
            _metric(metrics, "console_capacity_devices", f'model="{model}",vendor="{vendor}"')
            == 2.0
        )


def test_nodes_list_shows_allocated_devices(client, mixed):
    client.force_login(mixed)
    text = client.get("/nodes/").content.decode()
    assert "1.50 / 2 (75.0 %)" in text  # the Ascend node, booked by memory only
    assert text.count("0.50 / 2 (25.0 %)") == 2
