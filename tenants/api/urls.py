from rest_framework.routers import DefaultRouter

from tenants.api.views import QuotaViewSet, TenantViewSet

router = DefaultRouter()
router.register("tenants", TenantViewSet, basename="tenant")
router.register("quotas", QuotaViewSet, basename="quota")
urlpatterns = router.urls
