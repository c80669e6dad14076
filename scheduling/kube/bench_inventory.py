"""Benchmark: what one hostile Node object costs the inventory reader (issue 15).

``python -m scheduling.kube.bench_inventory [--repeat N]`` reads each case with
:func:`scheduling.kube.hami.nodes.node_from_kube` and the default bounds, and prints the time
per node and the peak memory the read allocated (``tracemalloc``, measured on a separate
run so that tracing does not slow the timing), plus the first words of the error the node is
flagged with. Figures are recorded in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import time
import tracemalloc
from collections.abc import Callable

from scheduling.devices.defaults import default_device_configs
from scheduling.kube.hami.nodes import node_from_kube

REG = "hami.io/node-nvidia-register"


def _node(annotations: dict | None = None, capacity: dict | None = None) -> dict:
    cap = {"cpu": "8", "memory": "64Gi", **(capacity or {})}
    return {
        "metadata": {"name": "n", "annotations": annotations or {}},
        "status": {"capacity": cap, "allocatable": cap},
    }


def _gpus(n: int) -> str:
    return json.dumps(
        [
            {
                "id": f"GPU-{i}",
                "index": i,
                "count": 10,
                "devmem": 81920,
                "devcore": 100,
                "type": "NVIDIA A100-SXM4-80GB",
                "health": True,
            }
            for i in range(n)
        ]
    )


CASES: dict[str, Callable[[], dict]] = {
    "8 GPUs (a good node)": lambda: _node({REG: _gpus(8)}),
    "enflame.com/gcu: 2000000": lambda: _node(capacity={"enflame.com/gcu": "2000000"}),
    "JSON 5,000 deep": lambda: _node(
        {REG: '[{"id": "G", "custominfo": ' + "[" * 5000 + "]" * 5000 + "}]"}
    ),
    "1 MiB of '['": lambda: _node({REG: "[" * (1 << 20)}),
    "1 MiB of '[]'": lambda: _node({REG: "[]" * ((1 << 19) - 8)}),
    "count 10^30": lambda: _node({REG: '[{"id": "G", "count": ' + "1" + "0" * 30 + "}]"}),
}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args(argv)
    configs = default_device_configs()
    print(f"{'case':<28} {'ms/node':>9} {'peak KiB':>9}  flagged with")
    for name, build in CASES.items():
        obj = build()
        start = time.perf_counter()
        for _ in range(args.repeat):
            node = node_from_kube(obj, configs)
        per = (time.perf_counter() - start) / args.repeat
        tracemalloc.start()
        node_from_kube(obj, configs)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        print(f"{name:<28} {per * 1e3:>9.2f} {peak / 1024:>9.0f}  {(node.error or '-')[:60]}")


if __name__ == "__main__":
    main()
