"""OpenAPI schema additions: the schema generator (``ConsoleAutoSchema``) and a
``POSTPROCESSING_HOOKS`` entry adding the error answers every operation can give, in the
API's one error shape, so that the schema lists every status code the API really sends
(checked by schemathesis, tests/api/test_api_schemathesis.py).

Error shape (``core.api.exception_handler``)::

    {"error": {"code": "invalid", "message": "The request has invalid fields.",
               "fields": {"containers[0].name": ["This field is required."]}}}

Codes per operation:

* every operation: 400 (a NUL character in a query parameter, an invalid filter value, an
  invalid or oversized body), 401 (no or bad credentials), 403 (role or CSRF), 404 (an object
  that does not exist or belongs to another tenant, a page past the end, a path the router
  does not know);
* writes (POST, PUT, PATCH, DELETE): 409 (a conflict with the current state) and 429 (the
  write throttle, with ``Retry-After``).
"""

from __future__ import annotations

from drf_spectacular.openapi import AutoSchema
from rest_framework.serializers import ListSerializer

ERROR_SCHEMA = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message", "fields"],
            "properties": {
                "code": {"type": "string", "example": "invalid"},
                "message": {"type": "string"},
                "fields": {
                    "type": "object",
                    "description": "Field path (``containers[0].name``) to its messages.",
                    "additionalProperties": {"type": "array", "items": {"type": "string"}},
                },
            },
        }
    },
}

COMMON = {
    "400": "Invalid input: a field error per offending field.",
    "401": "Authentication credentials were not provided or are invalid.",
    "403": "Your role does not allow this.",
    "404": "No such object (or it belongs to another tenant), or no such page.",
}
WRITES = {
    "409": "The request conflicts with the current state (e.g. a protected delete).",
    "429": "Too many writes; retry after the number of seconds in Retry-After.",
}
WRITE_METHODS = {"post", "put", "patch", "delete"}


def document_error_responses(result, generator, request, public):
    """Add the ``Error`` component and the error responses above to every operation (an
    operation's own description of a code wins)."""
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    ref = {"$ref": "#/components/schemas/Error"}
    for item in result.get("paths", {}).values():
        for method, operation in item.items():
            if method not in WRITE_METHODS | {"get", "head", "options"}:
                continue
            codes = {**COMMON, **(WRITES if method in WRITE_METHODS else {})}
            responses = operation.setdefault("responses", {})
            for code, description in codes.items():
                responses.setdefault(
                    code,
                    {"description": description, "content": {"application/json": {"schema": ref}}},
                )
    return result


class ConsoleAutoSchema(AutoSchema):
    """drf-spectacular's schema generator (``DEFAULT_SCHEMA_CLASS``) that also states the
    length bounds of nested lists (``Serializer(many=True, min_length=1, max_length=16)``:
    ``minItems``/``maxItems``), which DRF checks and drf-spectacular leaves out."""

    def _map_serializer_field(self, field, direction, bypass_extensions=False):
        schema = super()._map_serializer_field(field, direction, bypass_extensions)
        if schema is not None and isinstance(field, ListSerializer):
            # DRF sets both on ListSerializer; django-stubs does not declare them
            min_length = getattr(field, "min_length", None)
            max_length = getattr(field, "max_length", None)
            if min_length is not None:
                schema["minItems"] = min_length
            if max_length is not None:
                schema["maxItems"] = max_length
        return schema
