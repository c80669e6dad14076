from django.apps import AppConfig


class DashboardsConfig(AppConfig):
    name = "console.dashboards"
    label = "dashboards"
    verbose_name = "Dashboards"
