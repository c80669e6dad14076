"""Routes of the notifications API; mounted at ``/api/notifications/``."""

from rest_framework.routers import DefaultRouter

from notifications.api import views

router = DefaultRouter()
router.register("subscriptions", views.SubscriptionViewSet, basename="notification-subscription")
router.register("deliveries", views.DeliveryViewSet, basename="notification-delivery")

urlpatterns = router.urls
