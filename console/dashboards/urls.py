from django.urls import path

from console.dashboards import views

app_name = "dashboards"
urlpatterns = [
    path("", views.overview, name="overview"),
    path("quotas/", views.quotas, name="quotas"),
    path("jobs/", views.job_list, name="jobs"),
    path("jobs/new/", views.job_submit, name="job-submit"),
    path("jobs/<int:pk>/", views.job_detail, name="job-detail"),
    path("jobs/<int:pk>/cancel/", views.job_cancel, name="job-cancel"),
    path("nodes/", views.nodes, name="nodes"),
    path("nodes/<int:pk>/", views.node_detail, name="node-detail"),
    path("devices/<path:uuid>/cordon/", views.device_cordon, name="device-cordon"),
    path("devices/<path:uuid>/uncordon/", views.device_uncordon, name="device-uncordon"),
    path("devices/<path:uuid>/", views.device_detail, name="device-detail"),
    path("usage/", views.usage, name="usage"),
    path("usage.csv", views.usage_csv, name="usage-csv"),
    path("tenants/<slug:name>/", views.team, name="team"),
    path("account/token/", views.tokens, name="tokens"),
    path("audit/", views.audit_log, name="audit"),
]
