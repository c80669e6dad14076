"""Names of topology levels and the synthetic rack layout: one home for both (issue 31).

* :func:`level_word` / :func:`level_short_names` / :func:`resolve_level`: the word a reason
  or a page uses for a level key, and the short names a request (API, submit form) may give
  instead of the key. The word shown is always one of the names accepted, so a level named in
  a reason can be typed back. The console's own shorthand, not Kueue's (Kueue takes the key).
* :data:`RACK_LAYOUT_LEVELS` / :func:`synthetic_rack_labels`: the zone / block / rack / node
  layout (Kueue's sample topology, KEP-2724) given to clusters that have none of their own:
  the demo, a trace import and the topology benchmark (``lab/bench_topology.py``).

Stdlib only.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "BLOCK_LABEL",
    "HOSTNAME_LABEL",
    "RACK_LABEL",
    "RACK_LAYOUT_LEVELS",
    "ZONE_LABEL",
    "level_short_names",
    "level_word",
    "resolve_level",
    "synthetic_rack_labels",
]

ZONE_LABEL = "topology.kubernetes.io/zone"
BLOCK_LABEL = "cloud.provider.com/topology-block"
RACK_LABEL = "cloud.provider.com/topology-rack"
HOSTNAME_LABEL = "kubernetes.io/hostname"
RACK_LAYOUT_LEVELS = (ZONE_LABEL, BLOCK_LABEL, RACK_LABEL, HOSTNAME_LABEL)
"""The levels of the synthetic layout (Kueue's sample topology: zone, block, rack, node),
widest first."""

_PREFIX = "topology-"


def level_word(key: str) -> str:
    """The word a reason or a page uses for a level: the key's last ``/`` segment without a
    leading ``topology-`` (``"cloud.provider.com/topology-rack"`` -> ``"rack"``,
    ``"kubernetes.io/hostname"`` -> ``"hostname"``, ``"nvidia.com/gpu.clique"`` ->
    ``"gpu.clique"``); the key itself when that leaves nothing."""
    return key.rsplit("/", 1)[-1].removeprefix(_PREFIX) or key


def level_short_names(key: str) -> tuple[str, ...]:
    """The short names a request may give for a level key: the key's last ``/`` segment and
    :func:`level_word` when it differs (``cloud.provider.com/topology-rack`` ->
    ``("topology-rack", "rack")``, ``kubernetes.io/hostname`` -> ``("hostname",)``)."""
    tail = key.rsplit("/", 1)[-1]
    word = level_word(key)
    return (tail,) if word == tail else (tail, word)


def resolve_level(levels: Sequence[str], name: str, topology: str = "") -> str:
    """The key of ``levels`` that ``name`` names: a key as written, or its short name
    (:func:`level_short_names`) when exactly one level has that short name.

    Args:
        levels: the topology's level keys, widest first.
        name: what the request gave.
        topology: the topology's name, for the message.

    Raises:
        ValueError: no such level, or a short name shared by several levels; the message
            names the topology and its levels.
    """
    if name in levels:
        return name
    matches = [k for k in levels if name in level_short_names(k)]
    if len(matches) == 1:
        return matches[0]
    named = ", ".join(levels)
    of = f" of topology {topology}" if topology else ""
    if matches:
        raise ValueError(
            f"{name!r} names several levels{of} ({', '.join(matches)}): give the label key; "
            f"its levels are {named}."
        )
    raise ValueError(f"{name!r} is not a level{of}: its levels are {named}.")


def synthetic_rack_labels(
    position: int, node_name: str, nodes_per_rack: int, racks_per_block: int
) -> dict[str, str]:
    """The :data:`RACK_LAYOUT_LEVELS` labels of the ``position``-th node (0-based) of a
    cluster laid out ``nodes_per_rack`` nodes a rack and ``racks_per_block`` racks a block,
    in one zone: ``{zone: "zone-0", block: "block-<b>", rack: "rack-<r>", hostname:
    node_name}`` (racks numbered across the cluster, so a rack value is unique on its own).

    Raises:
        ValueError: a layout size below 1.
    """
    if nodes_per_rack < 1 or racks_per_block < 1:
        raise ValueError("nodes_per_rack and racks_per_block must be at least 1")
    rack = position // nodes_per_rack
    return {
        ZONE_LABEL: "zone-0",
        BLOCK_LABEL: f"block-{rack // racks_per_block}",
        RACK_LABEL: f"rack-{rack}",
        HOSTNAME_LABEL: node_name,
    }
