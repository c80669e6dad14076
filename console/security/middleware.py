"""Middleware refusing NUL characters in URLs before any view or filter sees them.

PostgreSQL cannot compare text with U+0000, so a lookup such as ``uuid="\\x00"`` raises
``ValueError`` deep in the ORM (a 500). A path containing one names nothing (404); a query
parameter containing one is a 400 naming the parameter. Under ``/api/`` both answers use the
API's error shape ``{"error": {"code", "message", "fields"}}``.
"""

from __future__ import annotations

from django.http import HttpResponseBadRequest, HttpResponseNotFound, JsonResponse

from console.security.parsers import NUL_MESSAGE

API_PREFIX = "/api/"


def _api_error(status: int, code: str, message: str, fields: dict) -> JsonResponse:
    return JsonResponse(
        {"error": {"code": code, "message": message, "fields": fields}}, status=status
    )


class RejectNulCharactersMiddleware:
    """404 for a NUL in the path, 400 for a NUL in a query parameter name or value."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        api = request.path.startswith(API_PREFIX)
        if "\x00" in request.path:
            if api:
                return _api_error(404, "not_found", "Not found.", {})
            return HttpResponseNotFound("Not found.")
        bad = sorted(
            {
                key.replace("\x00", "") or "non_field_errors"
                for key, values in request.GET.lists()
                if "\x00" in key or any("\x00" in v for v in values)
            }
        )
        if bad:
            if api:
                return _api_error(
                    400,
                    "invalid",
                    "The request has invalid fields.",
                    {key: [NUL_MESSAGE] for key in bad},
                )
            return HttpResponseBadRequest(f"{NUL_MESSAGE} (query parameter {', '.join(bad)})")
        return self.get_response(request)
