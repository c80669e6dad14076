"""The OpenAPI (3.0) schema of a device model's ``config`` overlay, generated from the
catalogue's pydantic model (:class:`scheduling.devices.schema.DeviceModelConfig`, every key
but ``vendor``; unknown keys are refused), so the API documents exactly what it validates.

pydantic writes JSON Schema 2020-12; OpenAPI 3.0 differs, so: ``$ref`` to ``$defs`` is
inlined, ``anyOf [X, null]`` becomes ``X`` + ``nullable``, a numeric ``exclusiveMinimum``
becomes ``minimum`` + ``exclusiveMinimum: true``, and a ``(name, value)`` pair list (tuples,
``prefixItems``) is documented as either accepted spelling: ``{name: value}`` or a list of
two-item lists. The rules pydantic checks in validators are added by hand (``slicing``'s
enum, ``templates`` as ``{name: MiB}``).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from scheduling.devices.schema import OVERLAY_KEYS, SLICING_MODES, DeviceModelConfig

DROPPED = {"title", "default", "description"}


def _convert(node: Any, defs: dict) -> Any:
    if isinstance(node, list):
        return [_convert(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        return _convert(defs[node["$ref"].rsplit("/", 1)[-1]], defs)
    options = node.get("anyOf")
    if options and {"type": "null"} in options and len(options) == 2:
        (other,) = [o for o in options if o != {"type": "null"}]
        return {**_convert(other, defs), "nullable": True}
    items = node.get("items")
    if node.get("type") == "array" and isinstance(items, dict) and "prefixItems" in items:
        name, value = (_convert(part, defs) for part in items["prefixItems"])
        return {
            "oneOf": [
                {"type": "object", "additionalProperties": value},
                {
                    "type": "array",
                    "items": {
                        "type": "array",
                        "minItems": 2,
                        "maxItems": 2,
                        "items": {"anyOf": [name, value]},
                    },
                },
            ]
        }
    out = {key: _convert(value, defs) for key, value in node.items() if key not in DROPPED}
    if isinstance(out.get("exclusiveMinimum"), int | float) and not isinstance(
        out["exclusiveMinimum"], bool
    ):
        out["minimum"], out["exclusiveMinimum"] = out["exclusiveMinimum"], True
    return out


@cache
def overlay_schema() -> dict:
    """``{"type": "object", "properties": {...}, "additionalProperties": false}``."""
    full = DeviceModelConfig.model_json_schema()
    defs = full.get("$defs", {})
    properties = {
        key: _convert(value, defs)
        for key, value in full["properties"].items()
        if key in OVERLAY_KEYS
    }
    properties["slicing"]["enum"] = list(SLICING_MODES)  # a validator's rule in pydantic
    # templates: a list, or {name: memory MiB} for memory-only ones (a "before" validator)
    properties["templates"] = {
        "oneOf": [
            properties["templates"],
            {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}},
        ]
    }
    return {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
        "description": "Overlay on the catalogue's defaults for this model "
        "(docs/devices.md); every key optional.",
    }
