"""URL composition root: dashboards, auth, admin, REST API, OpenAPI schema, /metrics."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

urlpatterns = [
    path("", include("console.dashboards.urls")),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("api/", include("console.api_urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # split view: the init script is a separate request (no inline script, for the CSP)
    path("api/docs/", SpectacularSwaggerSplitView.as_view(
        url_name="schema", template_name="console/swagger_ui.html"), name="api-docs"),
    path("", include("django_prometheus.urls")),
]

handler404 = "console.errors.page_not_found"
handler500 = "console.errors.server_error"
