from rest_framework.routers import DefaultRouter

from scheduling.api.views import DeviceViewSet, JobViewSet, NodeViewSet

router = DefaultRouter()
router.register("jobs", JobViewSet, basename="job")
router.register("nodes", NodeViewSet, basename="node")
router.register("devices", DeviceViewSet, basename="device")
urlpatterns = router.urls
