"""Issue 13, Hygon identity by hardware serial: the same serial seen on another node later is
a move of one card (its row, history and bookings follow), while the same serial on two
nodes in one sync is a conflict that is reported, never merged. From Node objects through
the inventory sync, on PostgreSQL through the official client and the HTTP fake API server.
"""

from __future__ import annotations

import pytest

from scheduling.models import Device
from scheduling.services.inventory import sync_cluster_inventory
from tests.kube.kube_helpers import make_kube_cluster, node_json

pytestmark = pytest.mark.django_db

SERIAL = "T8R1380013061601"


def dcu_node(name: str, serial: str | None, *, registered: bool = True) -> dict:
    """The released DCU plugin's legacy ``DCU-<index>`` registration plus the serial map
    annotation the console reads."""
    ann = {"hami.io/node-dcu-register": "DCU-0,4,65520,100,K100_AI,0,true:"} if registered else {}
    if serial:
        ann["console.llmops.io/dcu-serials"] = f'{{"0": "{serial}"}}'
    return node_json(name, ann, {"cpu": "64", "memory": "256Gi", "hygon.com/dcunum": "4"})


def test_the_same_serial_on_another_node_later_is_a_move(fake, tmp_path):
    cluster = make_kube_cluster(fake, tmp_path)
    fake.put(dcu_node("dcunode3", SERIAL))
    fake.put(dcu_node("dcunode4", None, registered=False))
    assert sync_cluster_inventory(cluster.pk).errors == []
    card = Device.objects.get(uuid=f"DCU-{SERIAL}")
    assert (card.node.name, card.hami_id, card.serial) == ("dcunode3", "DCU-0", SERIAL)

    # the card was moved: dcunode3 no longer registers it, dcunode4 does (also as DCU-0)
    fake.put(dcu_node("dcunode3", None, registered=False))
    fake.put(dcu_node("dcunode4", SERIAL))
    report = sync_cluster_inventory(cluster.pk)
    assert report.errors == []
    moved = Device.objects.get(uuid=f"DCU-{SERIAL}")
    assert moved.pk == card.pk  # one row: history and bookings keep pointing at it
    assert (moved.node.name, moved.removed_at, moved.healthy, moved.error) == (
        "dcunode4",
        None,
        True,
        "",
    )
    assert report.devices_removed == []


def test_the_same_serial_on_two_nodes_in_one_sync_is_a_conflict(fake, tmp_path):
    cluster = make_kube_cluster(fake, tmp_path)
    fake.put(dcu_node("dcunode3", SERIAL))
    assert sync_cluster_inventory(cluster.pk).errors == []
    fake.put(dcu_node("dcunode4", SERIAL))
    report = sync_cluster_inventory(cluster.pk)
    assert len(report.errors) == 1 and f"DCU-{SERIAL}" in report.errors[0]
    assert "dcunode3" in report.errors[0] and "dcunode4" in report.errors[0]
    rows = list(Device.objects.filter(serial=SERIAL))
    assert len(rows) == 1  # never merged into a second row
    assert (rows[0].node.name, rows[0].healthy) == ("dcunode3", False)
    assert rows[0].error
