from rest_framework.routers import DefaultRouter

from scheduling.api.inventory import ClusterViewSet, DeviceModelViewSet, PlacementViewSet
from scheduling.api.views import DeviceViewSet, JobViewSet, NodeViewSet, QueueViewSet

router = DefaultRouter()
router.register("jobs", JobViewSet, basename="job")
router.register("queues", QueueViewSet, basename="queue")
router.register("nodes", NodeViewSet, basename="node")
router.register("devices", DeviceViewSet, basename="device")
router.register("device-models", DeviceModelViewSet, basename="device-model")
router.register("clusters", ClusterViewSet, basename="cluster")
router.register("placements", PlacementViewSet, basename="placement")
urlpatterns = router.urls
