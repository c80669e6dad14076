"""Routes of the telemetry API; mounted at ``/api/telemetry/``."""

from django.urls import path
from rest_framework.routers import DefaultRouter

from telemetry.api import views

router = DefaultRouter()
router.register("targets", views.ScrapeTargetViewSet, basename="telemetry-target")
router.register("prices", views.PriceViewSet, basename="telemetry-price")

urlpatterns = [
    path("devices/<str:serial>/health/", views.device_health, name="telemetry-device-health"),
    path(
        "devices/<str:serial>/health/clear/",
        views.device_health_clear,
        name="telemetry-device-health-clear",
    ),
    path(
        "devices/<str:serial>/utilisation/",
        views.device_utilisation,
        name="telemetry-device-utilisation",
    ),
    path("jobs/<int:job_id>/efficiency/", views.job_efficiency, name="telemetry-job-efficiency"),
    path("efficiency/", views.efficiency, name="telemetry-efficiency"),
    path("idle-jobs/", views.idle_jobs, name="telemetry-idle-jobs"),
    path("cost/", views.cost_report, name="telemetry-cost"),
    path("cost/csv/", views.cost_report_csv, name="telemetry-cost-csv"),
    path("alerts/", views.capacity_alerts, name="telemetry-alerts"),
    *router.urls,
]
