"""URL composition root: dashboards, auth, admin, REST API, OpenAPI schema, /metrics."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic.base import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

urlpatterns = [
    path("", include("console.dashboards.urls")),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("api/", include("console.api_urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("", include("django_prometheus.urls")),
    # browsers and API clients that ask for /favicon.ico get the console's SVG icon
    path("favicon.ico", RedirectView.as_view(url=static("console/favicon.svg"), permanent=True)),
]
