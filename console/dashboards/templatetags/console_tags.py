"""Template filters for units: MiB → GiB, percent of a device, durations, pending causes."""

from django import template
from django.utils import timezone

from console.dashboards.live import FRAGMENT_PARAM
from tenants.models import Membership
from tenants.selectors import administers_a_tenant

register = template.Library()


@register.filter
def gib(mib) -> str:
    """MiB → ``"12.5 GiB"`` (``"—"`` for None)."""
    if mib is None or mib == "":
        return "—"
    value = int(mib) / 1024
    return f"{value:.0f} GiB" if value == int(value) else f"{value:.1f} GiB"


@register.filter
def duration(seconds) -> str:
    """Seconds → ``"3 h 05 min"`` / ``"4 min 10 s"`` / ``"12 s"``."""
    if seconds is None:
        return "—"
    s = int(seconds)
    if s >= 3600:
        return f"{s // 3600} h {s % 3600 // 60:02d} min"
    if s >= 60:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s} s"


def _number(value, unit: str) -> str:
    """``0.5`` → ``"0.5"``, ``50`` percent → ``"50%"``."""
    shown = f"{value:g}" if isinstance(value, float) else str(value)
    return f"{shown}%" if unit == "percent" else shown


def _amount(value, unit: str) -> str:
    """``4`` + ``"devices"`` → ``"4 devices"`` (``"1 device"``, ``"50%"``, ``"512 MiB"``)."""
    if unit in ("percent", ""):
        return _number(value, unit)
    return f"{_number(value, unit)} {'device' if unit == 'devices' and value == 1 else unit}"


@register.filter
def cause_headline(cause) -> str:
    """One ``Job.pending_causes`` object as a headline with its unit: ``"needs 4 devices, 0
    free (bounded by cohort g1)"`` (``", 2 borrowable"`` when some is); ``"needs 2 devices:
    RULE"`` without a free amount; the rule alone without an amount."""
    if not cause:
        return ""
    needed, unit, rule = cause.get("needed"), cause.get("unit") or "", cause.get("rule", "")
    if needed is None:
        return rule
    if cause.get("free") is None:
        return f"needs {_amount(needed, unit)}: {rule}"
    text = f"needs {_amount(needed, unit)}, {_number(cause['free'], unit)} free"
    if cause.get("borrowable"):
        text += f", {_number(cause['borrowable'], unit)} borrowable"
    return f"{text} ({rule})" if rule else text


@register.filter
def seconds_until(moment) -> float | None:
    """Seconds from now until ``moment`` (an aware datetime; <= 0 once it passed), None for
    None: a number the templates compare (a ``date:"U"`` string compared as text put an
    11-digit timestamp, after 2286, before today's)."""
    if moment is None:
        return None
    return (moment - timezone.now()).total_seconds()


@register.filter
def get_item(mapping, key):
    """``mapping[key]`` or None."""
    return mapping.get(key) if mapping else None


@register.simple_tag(takes_context=True)
def live_src(context) -> str:
    """The address a live region polls (``data-src`` of ``data-live``, static/console/live.js):
    this page's path and query string (its filters, page and sort kept) plus ``fragment=1``,
    which the view answers with the region's fragment alone."""
    request = context["request"]
    query = request.GET.copy()
    query[FRAGMENT_PARAM] = "1"
    return f"{request.path}?{query.urlencode()}"


@register.simple_tag
def user_tenants(user):
    """``[(tenant name, role)]`` of the user's memberships, for the navigation bar."""
    if not getattr(user, "is_authenticated", False):
        return []
    return list(
        Membership.objects.filter(user=user)
        .order_by("tenant__name")
        .values_list("tenant__name", "role")
    )


@register.simple_tag
def may_simulate(user, memberships) -> bool:
    """Whether the navigation links the Simulation page: the page's own rule
    (``tenants.selectors.administers_a_tenant``: platform and tenant admins), read from
    ``memberships``, the ``[(tenant name, role)]`` of :func:`user_tenants`."""
    if not getattr(user, "is_authenticated", False):
        return False
    return administers_a_tenant(user, roles=[role for _name, role in memberships])


@register.simple_tag
def open_invitation_count(user) -> int:
    """Number of open invitations addressed to the user (0 when logged out)."""
    if not getattr(user, "is_authenticated", False):
        return 0
    from tenants.selectors import pending_invitations_for  # noqa: PLC0415 - loaded on first use

    return pending_invitations_for(user).count()
