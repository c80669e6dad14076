"""The topology benchmark's pieces and its JSON summary on a tiny trace (issue 31)."""

from __future__ import annotations

import json

from scheduling.placement.lab import bench_topology as bt
from scheduling.placement.topology_names import ZONE_LABEL, synthetic_rack_labels
from scheduling.placement.whatif.trace import PodRecord, build_snapshot, read_nodes


def write_trace(tmp_path, nodes=32):
    node_csv = tmp_path / "nodes.csv"
    node_csv.write_text(
        "sn,cpu_milli,memory_mib,gpu,model\n"
        + "".join(f"node-{i:03d},96000,786432,8,G2\n" for i in range(nodes))
    )
    pod_csv = tmp_path / "pods.csv"
    rows = ["name,cpu_milli,memory_mib,num_gpu,gpu_milli"]
    for i in range(40):
        rows.append(f"single-{i:03d},4000,16384,1,{500 if i % 2 else 1000}")
    for i in range(6):
        rows.append(f"multi-{i:03d},16000,65536,{(2, 4, 8)[i % 3]},1000")
    pod_csv.write_text("\n".join(rows) + "\n")
    return node_csv, pod_csv


def test_label_racks_gives_block_rack_and_host_in_node_order(tmp_path):
    node_csv, _ = write_trace(tmp_path, nodes=10)
    snap = build_snapshot(read_nodes(node_csv))
    bt.label_racks(snap, rack_nodes=4, block_racks=2)
    labels = [snap.nodes[n].labels for n in sorted(snap.nodes)]
    assert [lab[bt.RACK] for lab in labels] == ["rack-0"] * 4 + ["rack-1"] * 4 + ["rack-2"] * 2
    assert [lab[bt.BLOCK] for lab in labels] == ["block-0"] * 8 + ["block-1"] * 2
    assert labels[9][bt.HOST] == "node-009"
    # the one layout a trace import gives too (one home: topology_names)
    assert labels[5] == synthetic_rack_labels(5, "node-005", 4, 2)
    assert labels[5][ZONE_LABEL] == "zone-0"


def test_units_make_gangs_of_multi_gpu_pods_only():
    pods = [
        PodRecord("one", 1000, 1024, 1, 1000),
        PodRecord("two", 1000, 1024, 2, 1000),
        PodRecord("eight", 1000, 1024, 8, 1000),
    ]
    units = bt.make_units(pods, 1_000_000, 0, 3, [4], 1.0)
    by_name = {u.pod.name: u for u in units}
    assert by_name["one"].k == 1 and by_name["one"].mode == ""
    # every gang required (share 1.0): 4 x 2 GPUs = 8 <= 32 -> a rack; 4 x 8 = 32 -> a rack
    assert (by_name["two"].k, by_name["two"].mode, by_name["two"].level) == (4, "required", bt.RACK)
    assert by_name["eight"].gpu_milli == 32000
    units = bt.make_units(pods, 1_000_000, 0, 3, [8], 1.0)
    assert {u.pod.name: u.level for u in units}["eight"] == bt.BLOCK  # 64 GPUs > 32


def test_main_prints_one_json_summary_last(tmp_path, capsys):
    node_csv, pod_csv = write_trace(tmp_path)
    args = ["--nodes", str(node_csv), "--pods", str(pod_csv), "--seeds", "1-2"]
    args += ["--large-nodes", "64", "--rack-nodes", "4", "--block-racks", "2"]
    assert bt.main(args) == 0
    last = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    keys = {
        "preferred_one_rack_pct",
        "required_placed_pct",
        "allocation_pct_100",
        "fragguard_allocation_pct_100",
        "placements_per_s_1213",
        "placements_per_s_10000",
    }
    assert keys <= set(last)
    assert set(last["baselines"]) == {"best_fit_no_topology", "kueue_least_free"}
    for base in last["baselines"].values():
        assert keys <= set(base)
    assert last["gangs"] > 0 and last["placements_per_s_10000"] > 0
    assert 0 < last["allocation_pct_100"] <= 100
    # with topology every placed required gang is inside one domain of its level
    assert (
        last["required_placed_pct"]
        >= last["baselines"]["best_fit_no_topology"]["required_placed_pct"]
    )
