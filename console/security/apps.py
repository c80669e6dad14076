from django.apps import AppConfig


class SecurityConfig(AppConfig):
    """Request hardening (no models): installs the strict DRF input types at start-up."""

    name = "console.security"
    label = "console_security"

    def ready(self) -> None:
        from console.security import strict_types

        strict_types.install()
