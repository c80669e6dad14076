"""Strict, typed readers for settings taken from the environment.

Every reader raises :class:`ImproperlyConfigured` naming the variable and the bad value, so a
typo stops start-up with a clear message instead of running with a silent default.
"""

from __future__ import annotations

import os
import re
import string
from urllib.parse import urlparse

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _raw(name: str) -> str | None:
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return None
    return value.strip()


def env_str(name: str, default: str = "") -> str:
    """Return ``$name`` as a string, or ``default`` when unset or empty."""
    value = _raw(name)
    return default if value is None else value


def env_bool(name: str, default: bool) -> bool:
    """Return ``$name`` as a bool.

    Accepts 1/0, true/false, yes/no, on/off (any case).

    Raises:
        ImproperlyConfigured: any other value.
    """
    value = _raw(name)
    if value is None:
        return default
    lowered = value.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={value!r} is not a boolean (use true/false, 1/0, yes/no)")


def _number(name: str, default, minimum, parse, kind: str):
    value = _raw(name)
    if value is None:
        return default
    try:
        number = parse(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r} is not {kind}") from None
    if minimum is not None and number < minimum:
        raise ImproperlyConfigured(f"{name}={number} must be at least {minimum}")
    return number


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    """Return ``$name`` as an int, at least ``minimum`` when given.

    Raises:
        ImproperlyConfigured: not an integer, or below ``minimum``.
    """
    return _number(name, default, minimum, int, "an integer")


def env_float(name: str, default: float, *, minimum: float | None = None) -> float:
    """Return ``$name`` as a float, at least ``minimum`` when given.

    Raises:
        ImproperlyConfigured: not a number, or below ``minimum``.
    """
    return _number(name, default, minimum, float, "a number")


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    """Return ``$name``, one of ``choices`` (as written), or ``default`` when unset or empty.

    Raises:
        ImproperlyConfigured: any other value (the message lists the choices).
    """
    value = env_str(name, default)
    if value not in choices:
        listed = ", ".join(choices[:-1]) + f" or {choices[-1]}" if len(choices) > 1 else choices[0]
        raise ImproperlyConfigured(f"{name}={value!r}: use {listed}")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    """Return ``$name`` split on commas, blanks dropped."""
    value = _raw(name)
    if value is None:
        return list(default)
    return [item.strip() for item in value.split(",") if item.strip()]


def env_ints(name: str, default: tuple[int, ...], *, minimum: int = 0) -> tuple[int, ...]:
    """Return ``$name`` as comma-separated integers, exactly as many as ``default`` has.

    Raises:
        ImproperlyConfigured: not integers, another count, or one below ``minimum``.
    """
    value = _raw(name)
    if value is None:
        return tuple(default)
    try:
        numbers = tuple(int(item) for item in value.split(","))
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r} is not comma-separated integers") from None
    if len(numbers) != len(default):
        raise ImproperlyConfigured(f"{name}={value!r} needs {len(default)} integers")
    if min(numbers) < minimum:
        raise ImproperlyConfigured(f"{name}={value!r}: every value must be at least {minimum}")
    return numbers


_RATE = re.compile(r"(\d+)/(s|sec|second|m|min|minute|h|hour|d|day)")


def env_rate(name: str, default: str) -> str:
    """Return ``$name`` as a DRF throttle rate ``<count>/<period>`` (count at least 1; period
    ``s``/``sec``/``second``, ``m``/``min``/``minute``, ``h``/``hour`` or ``d``/``day``), or
    ``default`` when unset.

    Raises:
        ImproperlyConfigured: another spelling, or a count of 0.
    """
    value = env_str(name, default)
    match = _RATE.fullmatch(value)
    if match is None:
        raise ImproperlyConfigured(
            f"{name}={value!r} is not a rate (use <count>/<period>, e.g. 120/min; period "
            "s, min, hour or day)"
        )
    if int(match.group(1)) < 1:
        raise ImproperlyConfigured(f"{name}={value!r}: the count must be at least 1")
    return value


def env_url(name: str, schemes: tuple[str, ...]) -> str | None:
    """Return ``$name`` when it is a URL with one of ``schemes``; ``None`` when unset.

    Raises:
        ImproperlyConfigured: a scheme outside ``schemes`` or a URL without a location.
    """
    value = _raw(name)
    if value is None:
        return None
    parsed = urlparse(value)
    if parsed.scheme not in schemes:
        allowed = ", ".join(schemes)
        raise ImproperlyConfigured(f"{name} must start with one of {allowed}; got {value!r}")
    if not (parsed.netloc or parsed.path or parsed.query):
        raise ImproperlyConfigured(f"{name}={value!r} names no server")
    return value


def template_error(
    template: str, fields: tuple[str, ...], required: tuple[str, ...] = ()
) -> str | None:
    """Why ``template`` is not a ``str.format`` template over ``fields``, or None when it is.

    Every replacement field must be a plain name among ``fields`` (no index, attribute,
    conversion or format spec) and each name in ``required`` must appear.
    """
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        return f"{template!r} is not a format template ({exc})"
    used = set()
    for _text, name, spec, conversion in parsed:
        if name is None:
            continue
        if name not in fields or spec or conversion:
            allowed = ", ".join("{" + f + "}" for f in fields)
            return f"{template!r}: unknown placeholder {{{name}}} (use {allowed})"
        used.add(name)
    missing = [f for f in required if f not in used]
    if missing:
        return f"{template!r} must contain " + ", ".join("{" + f + "}" for f in missing)
    return None


def env_template(
    name: str, default: str, *, fields: tuple[str, ...], required: tuple[str, ...] = ()
) -> str:
    """Return ``$name`` as a ``str.format`` template over ``fields`` (see
    :func:`template_error`), or ``default`` when unset.

    Raises:
        ImproperlyConfigured: a placeholder outside ``fields``, or a required one missing.
    """
    value = env_str(name, default)
    error = template_error(value, fields, required)
    if error is not None:
        raise ImproperlyConfigured(f"{name}: {error}")
    return value
