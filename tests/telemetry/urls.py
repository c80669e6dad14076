"""A URLconf that is the console's plus ``/api/telemetry/`` — used by the telemetry tests
until ``console/api_urls.py`` includes ``telemetry.api.urls`` under ``telemetry/``."""

from django.urls import include, path

from console.urls import urlpatterns as console_urlpatterns

urlpatterns = [path("api/telemetry/", include("telemetry.api.urls")), *console_urlpatterns]
