"""URL composition root: dashboards, auth, admin, REST API, OpenAPI schema, /metrics."""

import logging

import requests
from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.http import Http404
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic.base import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from mozilla_django_oidc import views as oidc_views

from console.metrics import metrics_view
from console.oidc import ConsoleOIDCAuthenticationRequestView
from console.oidc_discovery import ProviderUnavailable, is_provider_down

logger = logging.getLogger(__name__)


def _sso(view):
    """``view`` when OpenID Connect is configured (``OIDC_RP_CLIENT_ID``), else 404. When the
    identity provider is down (unreachable, 5xx: ``console.oidc_discovery``) the login page
    says so with status 503, and one log line says why."""

    def guarded(request, *args, **kwargs):
        if not settings.OIDC_RP_CLIENT_ID:
            raise Http404("Single sign-on is not configured.")
        try:
            return view(request, *args, **kwargs)
        except ProviderUnavailable as exc:
            logger.warning("Identity provider unavailable: %s", exc)
        except requests.RequestException as exc:
            if not is_provider_down(exc):
                raise
            logger.warning("Identity provider unavailable: %s", str(exc).splitlines()[0])
        response = _login(request, sso_down=True)
        response.status_code = 503
        return response

    return guarded


def _login(request, *args, sso_down: bool = False, **kwargs):
    """Django's login form, with the SSO button when OpenID Connect is configured (and, with
    ``sso_down``, the notice that the identity provider is unreachable)."""
    sso = settings.OIDC_PROVIDER_NAME if settings.OIDC_RP_CLIENT_ID else ""
    context = {"sso_name": sso, "sso_down": sso_down}
    return auth_views.LoginView.as_view(extra_context=context)(request, *args, **kwargs)


urlpatterns = [
    path("", include("console.dashboards.urls")),
    path("accounts/login/", _login, name="login"),
    # local and SSO sessions; an SSO one also at the provider (OIDC_OP_LOGOUT_URL_METHOD)
    path("accounts/logout/", oidc_views.OIDCLogoutView.as_view(), name="logout"),
    path(
        "oidc/authenticate/",
        _sso(ConsoleOIDCAuthenticationRequestView.as_view()),
        name="oidc_authentication_init",
    ),
    path(
        "oidc/callback/",
        _sso(oidc_views.OIDCAuthenticationCallbackView.as_view()),
        name="oidc_authentication_callback",
    ),
    path("admin/", admin.site.urls),
    path("api/", include("console.api_urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # split view: the init script is a separate request (no inline script, for the CSP)
    path(
        "api/docs/",
        SpectacularSwaggerSplitView.as_view(
            url_name="schema", template_name="console/swagger_ui.html"
        ),
        name="api-docs",
    ),
    # Prometheus exposition behind METRICS_TOKEN or a platform admin's session (console.metrics)
    path("metrics", metrics_view, name="prometheus-django-metrics"),
    # browsers and API clients that ask for /favicon.ico get the console's SVG icon
    path("favicon.ico", RedirectView.as_view(url=static("console/favicon.svg"), permanent=True)),
]

handler404 = "console.errors.page_not_found"
handler500 = "console.errors.server_error"
