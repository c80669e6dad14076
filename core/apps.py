from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "core"
    label = "core"
    verbose_name = "Console core"

    def ready(self) -> None:
        """Install the strict JSON input types of DRF fields (:mod:`core.api.strict_types`)."""
        from core.api import strict_types  # noqa: PLC0415 - app registry ready

        strict_types.install()
