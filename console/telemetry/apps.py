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
        from scheduling.signals import admission_cycle_finished

        register_collector()
        admission_cycle_finished.connect(_on_cycle, dispatch_uid="telemetry-record-cycle")


def _on_cycle(sender, *, group_name, duration_s, admitted, preempted, **kwargs):
    """Count every admission cycle in the console's /metrics (``record_cycle``)."""
    from console.telemetry.metrics import record_cycle

    record_cycle(group_name, duration_s, admitted=admitted, preempted=preempted)
