"""Input validators shared by serializers."""

from rest_framework import serializers


def no_nul_characters(value):
    """Reject a JSON value with a NUL character in any key or string (PostgreSQL ``jsonb``
    and ``text`` cannot store U+0000), as a 400 field error instead of a database error."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                raise serializers.ValidationError("Null characters are not allowed.")
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return value
