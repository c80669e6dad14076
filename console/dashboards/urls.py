from django.urls import path, register_converter
from django.urls.converters import PathConverter

from console.dashboards import (
    job_kind_views,
    notifications,
    overview,
    quota_split,
    team,
    topology,
    trends,
    views,
    whatif,
)


class DeviceIdConverter(PathConverter):
    """A device uuid (DRA ids hold '/'): any characters but NUL, which PostgreSQL refuses in
    a query (a NUL in the address is a 404, not a server error)."""

    regex = "[^\x00]+"


register_converter(DeviceIdConverter, "device")

app_name = "dashboards"
urlpatterns = [
    path("", overview.overview, name="overview"),
    path("quotas/", views.quotas, name="quotas"),
    path("jobs/", views.job_list, name="jobs"),
    path("jobs/new/", views.job_submit, name="job-submit"),
    path("jobs/<int:pk>/", views.job_detail, name="job-detail"),
    path("jobs/<int:pk>/cancel/", views.job_cancel, name="job-cancel"),
    path("jobs/<int:pk>/scale/", job_kind_views.job_scale, name="job-scale"),
    path("jobs/<int:pk>/stop/", job_kind_views.job_stop, name="job-stop"),
    path("jobs/<int:pk>/resume/", job_kind_views.job_resume, name="job-resume"),
    path("nodes/", views.nodes, name="nodes"),
    path("nodes/<int:pk>/", views.node_detail, name="node-detail"),
    path("clusters/<int:pk>/topology/", topology.cluster_topology, name="cluster-topology"),
    path("devices/<device:uuid>/cordon/", views.device_cordon, name="device-cordon"),
    path("devices/<device:uuid>/uncordon/", views.device_uncordon, name="device-uncordon"),
    path("devices/<device:uuid>/", views.device_detail, name="device-detail"),
    path("groups/<int:pk>/", trends.group_detail, name="group-detail"),
    path("usage/", views.usage, name="usage"),
    path("usage.csv", views.usage_csv, name="usage-csv"),
    path("tenants/<slug:name>/", team.team, name="team"),
    path("tenants/<slug:name>/quota-split/", quota_split.quota_split_page, name="quota-split"),
    path("account/token/", views.tokens, name="tokens"),
    path("account/invitations/", team.invitations, name="invitations"),
    path(
        "account/invitations/<int:pk>/<str:answer>/",
        team.invitation_answer,
        name="invitation-answer",
    ),
    path("audit/", views.audit_log, name="audit"),
    path("simulations/", whatif.simulation_page, name="simulations"),
    path("simulations/<int:pk>/", whatif.simulation_detail, name="simulation-detail"),
    path("notifications/", notifications.notifications_page, name="notifications"),
    path("notifications/<int:pk>/", notifications.notifications_action, name="notification-action"),
]
