"""In-tree plugin names (kube-scheduler ``plugins/names/names.go`` style)."""

NODE_REGISTRATION = "NodeRegistration"
NODE_UNSCHEDULABLE = "NodeUnschedulable"
NODE_SELECTOR = "NodeSelector"
NODE_RESOURCES_FIT = "NodeResourcesFit"
DEVICE_FIT = "DeviceFit"
HAMI_NODE_SCORE = "HAMiNodeScore"
DEFAULT_RESERVE = "DefaultReserve"
