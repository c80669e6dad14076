"""Trace parsing, including bad rows (file, line, column in the error)."""

import pytest

from scheduling.placement.whatif.trace import (
    TraceError,
    build_snapshot,
    pod_request,
    read_nodes,
    read_pods,
)

POD_HEADER = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
    "deletion_time,scheduled_time\n"
)


def write(tmp_path, text, name="f.csv"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_nodes_and_snapshot(tmp_path):
    p = write(
        tmp_path, "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,2,P100\nn1,96000,786432,0,\n"
    )
    nodes = read_nodes(p)
    assert [(n.name, n.cpu_milli, n.gpu_count, n.model, n.line) for n in nodes] == [
        ("n0", 64000, 2, "P100", 2),
        ("n1", 96000, 0, "", 3),
    ]
    snap = build_snapshot(nodes, replicas=2)
    assert sorted(snap.nodes) == ["n0", "n0-r1", "n1", "n1-r1"]
    d = snap.nodes["n0-r1"].devices[1]
    assert (d.uuid, d.type, d.vendor, d.cores_percent, d.memory_mib) == (
        "n0-r1-gpu1",
        "P100",
        "NVIDIA",
        100,
        16384,
    )


def test_pods_full_and_five_column_files(tmp_path):
    p = write(
        tmp_path,
        POD_HEADER
        + "p0,6000,12288,1,460,T4|P100|T4,LS,Running,5,100,5\n"
        + "p1,88000,327680,8,1000,,BE,Failed,0,9,\n",
    )
    a, b = read_pods(p)
    assert (a.gpu_milli, a.gpu_spec, a.is_gpu_share, a.creation_time, a.deletion_time) == (
        460,
        ("P100", "T4"),
        True,
        5,
        100,
    )
    assert (b.total_gpu_milli, b.scheduled_time) == (8000, None)
    req = pod_request(a)
    dr = req.containers[0].devices[0]
    assert (dr.count, dr.cores_percent, dr.memory_percent, dr.types_include) == (
        1,
        46,
        46,
        ("P100", "T4"),
    )
    q = write(tmp_path, "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,10,0,0\n", "m.csv")
    (c,) = read_pods(q)
    assert (c.qos, c.creation_time, pod_request(c).containers[0].devices) == ("", None, ())


@pytest.mark.parametrize(
    ("row", "line", "column"),
    [
        ("p0,abc,1,1,500,,LS,Running,0,1,0", 2, "cpu_milli"),
        ("p0,1,1,1,505,,LS,Running,0,1,0", 2, "gpu_milli"),
        ("p0,1,1,2,500,,LS,Running,0,1,0", 2, "gpu_milli"),
        ("p0,1,1,0,500,,LS,Running,0,1,0", 2, "gpu_milli"),
        ("p0,1,1,9,1000,,LS,Running,0,1,0", 2, "num_gpu"),
        ("p0,1,1,1,500,,LS,Running,10,1,0", 2, "deletion_time"),
        ("p0,1,1,1,500,,LS", 2, ""),
    ],
)
def test_bad_pod_rows(tmp_path, row, line, column):
    p = write(tmp_path, POD_HEADER + row + "\n")
    with pytest.raises(TraceError) as exc:
        read_pods(p)
    assert (exc.value.line, exc.value.column) == (line, column)
    assert str(p) in str(exc.value)


def test_bad_node_rows(tmp_path):
    with pytest.raises(TraceError) as exc:
        read_nodes(write(tmp_path, "sn,cpu_milli,memory_mib,gpu,model\nn0,1,1,2,\n"))
    assert (exc.value.line, exc.value.column) == (2, "model")
    with pytest.raises(TraceError) as exc:
        read_nodes(write(tmp_path, "sn,cpu_milli,memory_mib,gpu,model\nn0,1,1,1,T4\nn0,1,1,1,T4\n"))
    assert (exc.value.line, exc.value.column) == (3, "sn")
    with pytest.raises(TraceError) as exc:
        read_nodes(write(tmp_path, "sn,cpu_milli,gpu,model\n"))
    assert (exc.value.line, exc.value.column) == (1, "memory_mib")
    with pytest.raises(TraceError):
        read_nodes(tmp_path / "missing.csv")
