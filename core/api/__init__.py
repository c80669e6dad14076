"""API helpers: one exception handler that renders every error as the same JSON shape.

Shape: ``{"error": {"code": str, "message": str, "fields": {field: [messages]}}}``.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from core.exceptions import DomainError


def flatten_errors(detail) -> dict[str, list[str]]:
    """DRF error detail as ``{field path: [messages]}``, paths as the API names them
    (``containers[0].cores_percent``; a list serializer's errors come keyed by index);
    errors of no field under ``non_field_errors``."""
    if isinstance(detail, dict):
        out: dict[str, list[str]] = {}
        for raw_key, value in detail.items():
            key = f"[{raw_key}]" if isinstance(raw_key, int) else str(raw_key)
            if isinstance(value, dict):
                for sub, messages in flatten_errors(value).items():
                    sep = "" if sub.startswith("[") else "."
                    out[f"{key}{sep}{sub}"] = messages
            elif isinstance(value, list) and value and isinstance(value[0], dict):
                for index, item in enumerate(value):
                    for sub, messages in flatten_errors(item).items():
                        out[f"{key}[{index}].{sub}"] = messages
            else:
                out[key] = [str(v) for v in (value if isinstance(value, list) else [value])]
        return out
    if isinstance(detail, list):
        return {"non_field_errors": [str(v) for v in detail]}
    return {}


def error_response(code: str, message: str, fields: dict[str, list[str]], status_code: int):
    """A Response in the one error shape (module docstring)."""
    body = {"error": {"code": code, "message": message, "fields": fields}}
    return Response(body, status=status_code)


def exception_handler(exc, context):
    """DRF ``EXCEPTION_HANDLER``: domain errors and DRF errors as one JSON error shape."""
    if isinstance(exc, RequestDataTooBig):  # Django's DATA_UPLOAD_MAX_MEMORY_SIZE
        exc = exceptions.ParseError(
            f"Request body is larger than {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes."
        )
    if isinstance(exc, DomainError):
        fields = {exc.field: [exc.message]} if exc.field else {}
        return error_response(exc.code, exc.message, fields, exc.status_code)
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.ValidationError):
        body = {
            "error": {
                "code": "invalid",
                "message": "The request has invalid fields.",
                "fields": flatten_errors(exc.detail),
            }
        }
        return Response(body, status=status.HTTP_400_BAD_REQUEST, headers=response.headers)
    detail = response.data.get("detail", "") if isinstance(response.data, dict) else ""
    code = getattr(detail, "code", None) or "error"
    response.data = {"error": {"code": code, "message": str(detail), "fields": {}}}
    return response
