"""App config of the telemetry app (label ``telemetry``)."""

from django.apps import AppConfig

from scheduling.signals import admission_cycle_finished


class TelemetryConfig(AppConfig):
    """Registers the console's Prometheus collector when the app is ready."""

    name = "telemetry"
    label = "telemetry"
    verbose_name = "Telemetry, health and cost"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Imported here, not at the top: the collector reads models, which exist only once
        # the app registry is ready (Django's AppConfig.ready pattern).
        from telemetry import metrics  # noqa: PLC0415 - app registry ready (registers collectors)

        metrics.register_collector()
        admission_cycle_finished.connect(
            metrics.on_admission_cycle, dispatch_uid="telemetry-record-cycle"
        )
