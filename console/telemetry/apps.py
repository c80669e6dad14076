"""App config of the telemetry app (label ``telemetry``)."""

from django.apps import AppConfig


class TelemetryConfig(AppConfig):
    """Registers the console's Prometheus collector when the app is ready."""

    name = "console.telemetry"
    label = "telemetry"
    verbose_name = "Telemetry, health and cost"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from console.telemetry.metrics import register_collector

        register_collector()
