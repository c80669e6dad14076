"""The API's request parser (``DEFAULT_PARSER_CLASSES``: JSON only) and its bounds.

* Size: at most ``DATA_UPLOAD_MAX_MEMORY_SIZE`` bytes are read (Django applies that limit to
  ``request.body`` only; DRF reads the raw stream, so the bound is enforced here).
* Depth: JSON nested deeper than ``API_MAX_JSON_DEPTH`` (default 32) levels of arrays and
  objects is refused before any serializer recurses into it.
* NUL: a U+0000 in any string or key is a field error naming the path of the value
  (``containers[0].env.A``); PostgreSQL ``text`` and ``jsonb`` cannot store it.

Errors: ``ParseError`` (400 ``parse_error``) for size and depth, ``ValidationError``
(400 ``invalid`` with ``fields``) for NUL characters.
"""

from __future__ import annotations

import io

from django.conf import settings
from rest_framework import parsers
from rest_framework.exceptions import ParseError, ValidationError

NUL_MESSAGE = "Null characters are not allowed."
DEFAULT_MAX_JSON_DEPTH = 32


def _max_depth() -> int:
    return getattr(settings, "API_MAX_JSON_DEPTH", DEFAULT_MAX_JSON_DEPTH)


def read_bounded(stream) -> bytes:
    """Read the whole body from ``stream`` (None = empty body); DRF 3.18 hands JSON and form
    parsers ``request.body`` (Django applies the limit), older versions the raw stream.

    Raises:
        ParseError: more than ``DATA_UPLOAD_MAX_MEMORY_SIZE`` bytes (None = unbounded).
    """
    if stream is None:
        return b""
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    if limit is None:
        return stream.read()
    raw = stream.read(limit + 1)
    if len(raw) > limit:
        raise ParseError(f"Request body is larger than {limit} bytes.")
    return raw


def _child_path(path: str, key) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def check_json_value(value, max_depth: int) -> None:
    """Walk a decoded JSON value without recursion.

    Raises:
        ParseError: arrays/objects nested deeper than ``max_depth``.
        ValidationError: a NUL character in a string or key, keyed by the value's path
            (``non_field_errors`` for the top level).
    """
    errors: dict[str, list[str]] = {}
    stack = [(value, "", 0)]
    while stack:
        item, path, depth = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                errors.setdefault(path or "non_field_errors", [NUL_MESSAGE])
            continue
        if not isinstance(item, dict | list):
            continue
        if depth >= max_depth:
            raise ParseError(f"JSON is nested deeper than {max_depth} levels.")
        pairs = item.items() if isinstance(item, dict) else enumerate(item)
        for key, child in pairs:
            if isinstance(key, str) and "\x00" in key:
                errors.setdefault(path or "non_field_errors", [NUL_MESSAGE])
                continue
            stack.append((child, _child_path(path, key), depth + 1))
    if errors:
        raise ValidationError(errors)


class BoundedJSONParser(parsers.JSONParser):
    """DRF's JSON parser with the size, depth and NUL bounds of this module."""

    def parse(self, stream, media_type=None, parser_context=None):
        raw = read_bounded(stream)
        try:
            data = super().parse(io.BytesIO(raw), media_type, parser_context)
        except RecursionError:
            # CPython's decoder gives up near the interpreter's recursion limit
            raise ParseError(f"JSON is nested deeper than {_max_depth()} levels.") from None
        check_json_value(data, _max_depth())
        return data
