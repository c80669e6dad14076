"""HAMi's Kubernetes codec (pure: no Django, no ``kubernetes`` import): node register
annotations, pod annotations and resources and Kubernetes quantities <-> the placement
core's types; :func:`place_from_kube` answers "where would HAMi put this pod" from API dicts
(HAMi's config files are read by ``scheduling.devices.hami_files``), and :mod:`.cli` is its
command line (``manage.py place``).
"""

from scheduling.kube.hami.nodes import node_from_kube, parse_node_devices, snapshot_from_kube
from scheduling.kube.hami.place import decision_annotations, place_from_kube
from scheduling.kube.hami.pods import (
    apply_existing_pods,
    decode_pod_devices,
    encode_pod_devices,
    pod_request_from_kube,
)

__all__ = [
    "decision_annotations",
    "place_from_kube",
    "node_from_kube",
    "parse_node_devices",
    "snapshot_from_kube",
    "apply_existing_pods",
    "decode_pod_devices",
    "encode_pod_devices",
    "pod_request_from_kube",
]
