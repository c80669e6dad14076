from django.apps import AppConfig


class NotificationsConfig(AppConfig):
    name = "notifications"
    verbose_name = "Notifications"

    def ready(self) -> None:
        """Listen to every domain event (the lower layers never import this app)."""
        from core.events import domain_event  # noqa: PLC0415 - app registry ready
        from notifications.services import on_domain_event  # noqa: PLC0415 - app registry ready

        domain_event.connect(on_domain_event, dispatch_uid="notifications.on_domain_event")
