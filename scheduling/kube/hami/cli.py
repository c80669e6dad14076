"""CLI: ``python -m scheduling.kube.hami.cli --nodes N --pods P --pod POD
[--node-policy binpack|spread] [--device-policy binpack|spread|topology-aware|mutex]
[--config C]``.

Files are JSON or YAML (YAML needs PyYAML, imported only when a file is not JSON). Prints
the :func:`place_from_kube` answer as JSON, and one ``warning:`` line on stderr per booking
of an existing pod on a device its node does not register (``unmatched_bookings``). Exit 0
for any decision (schedulable or not), exit 2 with one line ``error: ...`` on stderr for bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from scheduling.devices.policies import DEVICE_POLICIES, NODE_POLICIES, policy_word
from scheduling.kube.hami.place import place_from_kube


def load_file(path: str, what: str) -> Any:
    """Read a JSON or YAML file. Raises ValueError naming the option and path."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as exc:
        raise ValueError(f"{what} {path}: {exc.strerror}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    try:
        import yaml  # noqa: PLC0415 - optional, only for YAML inputs
    except ImportError:
        raise ValueError(f"{what} {path}: not JSON, and PyYAML is not installed") from None
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        raise ValueError(f"{what} {path}: invalid YAML/JSON ({str(exc).splitlines()[0]})") from None
    if len(docs) == 1:
        return docs[0]
    return docs


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit code."""
    ap = argparse.ArgumentParser(
        prog="python -m scheduling.kube.hami.cli",
        description="HAMi-conformant placement of one pod",
    )
    ap.add_argument("--nodes", required=True, help="Node list (JSON/YAML)")
    ap.add_argument("--pods", required=True, help="existing Pod list (JSON/YAML)")
    ap.add_argument("--pod", required=True, help="Pod manifest to place (JSON/YAML)")
    # any case, stray spaces ignored (the words as every reader normalises them)
    ap.add_argument("--node-policy", type=policy_word, choices=NODE_POLICIES)
    ap.add_argument("--device-policy", type=policy_word, choices=DEVICE_POLICIES)
    ap.add_argument(
        "--config",
        help="HAMi chart values.yaml, the scheduler's "
        "device-config.yaml or its ConfigMap (JSON/YAML), detected by shape",
    )
    args = ap.parse_args(argv)
    try:
        nodes = load_file(args.nodes, "--nodes")
        pods = load_file(args.pods, "--pods")
        pod = load_file(args.pod, "--pod")
        config = load_file(args.config, "--config") if args.config else None
        out = _run(nodes, pods, pod, args, config)
    except ValueError as exc:
        print(f"error: {exc}".splitlines()[0], file=sys.stderr)  # noqa: T201 - CLI output
        return 2
    for b in out.get("unmatched_bookings", ()):
        print(  # noqa: T201 - CLI output
            f"warning: pod {b['pod']} books device {b['uuid']} that node {b['node']} does not "
            "register; not counted (as HAMi), its capacity may be in use",
            file=sys.stderr,
        )
    print(json.dumps(out, indent=2))  # noqa: T201 - CLI output
    return 0


def _run(nodes: Any, pods: Any, pod: Any, args: argparse.Namespace, config: Any) -> dict:
    for what, path, data in (("--nodes", args.nodes, nodes), ("--pods", args.pods, pods)):
        if not isinstance(data, (list, dict)):
            raise ValueError(f"{what} {path}: expected a list of objects")
    try:
        return place_from_kube(nodes, pods, pod, args.node_policy, args.device_policy, config)
    except ValueError as exc:
        msg = str(exc)
        src = (
            args.pods
            if msg.startswith("pods")
            else args.pod
            if msg.startswith("pod")
            else args.config
            if msg.startswith("config")
            else args.nodes
        )
        raise ValueError(f"{src}: {msg}") from None


if __name__ == "__main__":
    sys.exit(main())
