"""Django's error views (``handler404`` / ``handler500``): under ``/api/`` they answer in the
API's JSON error shape (``{"error": {"code", "message", "fields"}}``) like every DRF view,
so a client gets JSON even for a URL no route matches; pages keep Django's HTML views."""

from __future__ import annotations

from django.http import JsonResponse
from django.views import defaults

API_PREFIX = "/api/"


def _api_error(status: int, code: str, message: str) -> JsonResponse:
    return JsonResponse({"error": {"code": code, "message": message, "fields": {}}}, status=status)


def page_not_found(request, exception, template_name=defaults.ERROR_404_TEMPLATE_NAME):
    """404: JSON under /api/, Django's page elsewhere."""
    if request.path.startswith(API_PREFIX):
        return _api_error(404, "not_found", "Not found.")
    return defaults.page_not_found(request, exception, template_name)


def server_error(request, template_name=defaults.ERROR_500_TEMPLATE_NAME):
    """500: JSON under /api/, Django's page elsewhere."""
    if request.path.startswith(API_PREFIX):
        return _api_error(500, "server_error", "Internal server error.")
    return defaults.server_error(request, template_name)
