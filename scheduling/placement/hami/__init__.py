"""HAMi I/O (pure): node registration and pod annotations <-> placement types."""

from scheduling.placement.hami.config import HamiConfig, config_from_helm
from scheduling.placement.hami.kube import decision_annotations, place_from_kube
from scheduling.placement.hami.nodes import node_from_kube, parse_node_devices, snapshot_from_kube
from scheduling.placement.hami.pods import (
    apply_existing_pods,
    decode_pod_devices,
    encode_pod_devices,
    pod_request_from_kube,
)

__all__ = ["HamiConfig", "config_from_helm", "decision_annotations", "place_from_kube",
           "node_from_kube", "parse_node_devices", "snapshot_from_kube", "apply_existing_pods",
           "decode_pod_devices", "encode_pod_devices", "pod_request_from_kube"]
