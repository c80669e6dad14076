from django.urls import path
from rest_framework.routers import DefaultRouter

from scheduling.api.admission import JobDryRunView, QuotaDryRunView, UsageView
from scheduling.api.fragmentation import FragmentationView
from scheduling.api.inventory import ClusterViewSet, DeviceModelViewSet, PlacementViewSet
from scheduling.api.topology import TopologyListView
from scheduling.api.views import (
    DeviceViewSet,
    JobViewSet,
    NodeViewSet,
    PriorityClassViewSet,
    QueueViewSet,
)

router = DefaultRouter()
router.register("jobs", JobViewSet, basename="job")
router.register("queues", QueueViewSet, basename="queue")
router.register("priority-classes", PriorityClassViewSet, basename="priority-class")
router.register("nodes", NodeViewSet, basename="node")
router.register("devices", DeviceViewSet, basename="device")
router.register("device-models", DeviceModelViewSet, basename="device-model")
router.register("clusters", ClusterViewSet, basename="cluster")
router.register("placements", PlacementViewSet, basename="placement")
# explicit paths first: "quotas/dry-run/" must win over the tenants router's "quotas/<pk>/"
urlpatterns = [
    path("dry-run/", JobDryRunView.as_view(), name="job-dry-run"),
    path("quotas/dry-run/", QuotaDryRunView.as_view(), name="quota-dry-run"),
    path("usage/", UsageView.as_view(), name="usage"),
    path("fragmentation/", FragmentationView.as_view(), name="fragmentation"),
    path("topologies/", TopologyListView.as_view(), name="topologies"),
    *router.urls,
]
