"""REST API routes of every app under /api/."""

from django.urls import include, path

urlpatterns = [
    path("", include("scheduling.api.urls")),
    path("", include("tenants.api.urls")),
    path("telemetry/", include("telemetry.api.urls")),
    path("notifications/", include("notifications.api.urls")),
]
