from rest_framework.routers import DefaultRouter

from tenants.api.directory import MembershipViewSet, ResourceGroupViewSet, TenantViewSet
from tenants.api.invitations import InvitationViewSet
from tenants.api.views import QuotaViewSet

router = DefaultRouter()
router.register("tenants", TenantViewSet, basename="tenant")
router.register("members", MembershipViewSet, basename="membership")
router.register("resource-groups", ResourceGroupViewSet, basename="resource-group")
router.register("quotas", QuotaViewSet, basename="quota")
router.register("invitations", InvitationViewSet, basename="invitation")
urlpatterns = router.urls
