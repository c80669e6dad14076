"""The replay benchmark on a tiny synthetic trace (values worked out by hand)."""

import json

from scheduling.placement.lab import bench
from scheduling.placement.whatif.trace import read_nodes, read_pods

NODES = "sn,cpu_milli,memory_mib,gpu,model\nn0,8000,32768,1,T4\nn1,8000,32768,1,T4\n"
PODS = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
    "s0,1000,1024,1,500,,LS,Running,0,100,0\n"
    "s1,1000,1024,1,500,,LS,Running,10,100,10\n"
    "w0,1000,1024,1,1000,,LS,Running,20,50,20\n"
    "w1,1000,1024,1,1000,,LS,Running,30,60,30\n"
)


def files(tmp_path):
    (tmp_path / "n.csv").write_text(NODES)
    (tmp_path / "p.csv").write_text(PODS)
    return tmp_path / "n.csv", tmp_path / "p.csv"


def test_bucket_means_window():
    arrived = [24.6, 50.2, 75.0, 99.6, 100.4]
    vals = [10.0, 20.0, 30.0, 40.0, 50.0]
    got = bench.bucket_means(arrived, vals, buckets=(25, 50, 76, 100, 130))
    # 76 is empty: window 75..77 -> 30; 100 holds 99.6 and 100.4
    assert got == {25: 10.0, 50: 20.0, 76: 30.0, 100: 45.0, 130: None}


def test_inflate_tunes_to_target():
    pods = read_pods_from_text()
    order = bench.inflate(pods, 2000, 2.0, seed=7)
    total = sum(p.total_gpu_milli for p in order)
    assert total <= 4000 and sorted(p.name for p in order[:4]) == ["s0", "s1", "w0", "w1"]
    down = bench.inflate(pods, 2000, 0.5, seed=7)
    assert sum(p.total_gpu_milli for p in down) <= 1000


def read_pods_from_text(tmp_path_factory=None):
    import tempfile
    from pathlib import Path

    d = Path(tempfile.mkdtemp())
    (d / "p.csv").write_text(PODS)
    return read_pods(d / "p.csv")


def test_arrivals_two_gpus_one_whole_task_fails(tmp_path):
    n, p = files(tmp_path)
    nodes, pods = read_nodes(n), read_pods(p)
    wl = bench.TargetWorkload.from_classes(bench.task_classes(pods), 1.0)
    for seed in (1, 2, 3):
        res = bench.run_arrivals("BestFit", nodes, pods, seed, 0, 1, wl, wl)
        # BestFit stacks both halves on one GPU, so exactly one whole-GPU task finds no GPU
        assert (res.tasks, res.failed, res.failed_by_kind) == (4, 1, {"1gpu": 1})


def test_departures_queue_and_average(tmp_path):
    n, p = files(tmp_path)
    nodes, pods = read_nodes(n), read_pods(p)
    wl = bench.TargetWorkload.from_classes(bench.task_classes(pods), 1.0)
    res = bench.run_departures("BestFit", nodes, pods, 0, 1, wl, wl)
    # t0 s0 -> n0 (500); t10 s1 -> n0 (1000 booked); t20 w0 -> n1; t30 w1 waits;
    # t50 w0 leaves, w1 starts (waited 20 s), runs 30 s -> leaves t80; s0, s1 leave t100.
    assert (res.waited, res.mean_wait_s, res.never_placed) == (1, 20.0, 0)
    # booked milli x seconds: 500*10 + 1000*10 + 2000*30 + 2000*30 + 1000*20 = 155000 over 100 s
    assert res.time_avg_allocation == 100 * 155000 / (100 * 2000)


def test_cli_json_and_list(tmp_path, capsys):
    n, p = files(tmp_path)
    assert bench.main(["--list-policies"]) == 0
    assert capsys.readouterr().out.split()[0] == "FragGuard"
    assert (
        bench.main(
            [
                "--nodes",
                str(n),
                "--pods",
                str(p),
                "--policy",
                "BestFit,FGD",
                "--seeds",
                "1-2",
                "--tune",
                "0",
                "--json",
            ]
        )
        == 0
    )
    rows = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [r["policy"] for r in rows] == ["BestFit", "FGD"]
    assert rows[0]["seeds"] == [1, 2] and rows[0]["failed"] == 1.0
    assert bench.main(["--nodes", str(n), "--pods", str(tmp_path / "nope.csv")]) == 2


def test_consolidation_moves_a_half_so_a_whole_task_fits(tmp_path):
    from dataclasses import replace

    from scheduling.placement import PlacementRequest, place
    from scheduling.placement.lab.bench_consolidation import Consolidator
    from scheduling.placement.whatif.replay import Replay
    from scheduling.placement.whatif.trace import build_snapshot, pod_request

    n, p = files(tmp_path)
    nodes, pods = read_nodes(n), read_pods(p)
    wl = bench.TargetWorkload.from_classes(bench.task_classes(pods), 1.0)
    rp = Replay("BestFit", build_snapshot(nodes), wl, wl, 0)
    cons = Consolidator(rp, budget=None)
    by_name = {q.name: q for q in pods}
    gpus = [d.uuid for node in rp.snapshot.nodes.values() for d in node.devices]
    for name, uuid in zip(["s0", "s1"], gpus, strict=True):  # one half on each GPU
        req = pod_request(by_name[name])
        container = req.containers[0]
        pinned = replace(
            req,
            containers=(
                replace(container, devices=(replace(container.devices[0], uuids_include=(uuid,)),)),
            ),
        )
        dec = place(rp.snapshot, PlacementRequest(name, (pinned,)), rp.fw)
        rp.book(req, dec, 500)
        cons.placed(req, dec, True, 500)
    whole = pod_request(by_name["w0"])
    assert not rp.place(whole, 1000).schedulable

    dec = cons.rescue(whole, 1, 1000)

    assert dec is not None and dec.schedulable
    assert (cons.moves, cons.rescued, rp.allocated) == (1, 1, 2000)
    assert {d.used_cores_percent for n in rp.snapshot.nodes.values() for d in n.devices} == {100}
    budget_spent = Consolidator(rp, budget=0)
    assert budget_spent.rescue(pod_request(by_name["w1"]), 1, 1000) is None
