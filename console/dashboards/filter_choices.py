"""The list pages' filter boxes as selects of names. The filtering is the API's FilterSet
(:mod:`scheduling.filtersets`); only the widgets of the page's form change: a tenant, queue,
vendor or model select lists what the user may see (tenant isolation:
:func:`tenants.selectors.visible_tenants`, :func:`scheduling.selectors.access.visible_queues`)
and is read when the form is drawn."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

from django import forms

from scheduling.models import DeviceModel
from scheduling.selectors.access import visible_queues
from tenants.selectors import visible_tenants


def job_filter_selects(form: forms.Form, user) -> forms.Form:
    """Turn ``form``'s (a ``JobFilterSet`` form) tenant, queue, vendor and model boxes into
    selects whose options (``""`` = any, then ids or names) are read at render time; returns
    ``form``."""
    catalogue = cache(
        lambda: list(DeviceModel.objects.order_by("vendor", "name").values_list("vendor", "name"))
    )
    choices: dict[str, Callable[[], list[tuple]]] = {
        "tenant": lambda: [(t.pk, t.name) for t in visible_tenants(user)],
        "queue": lambda: [(q.pk, f"{q.tenant.name} / {q.name}") for q in visible_queues(user)],
        "vendor": lambda: [(v, v) for v in dict.fromkeys(v for v, _ in catalogue())],
        "model": lambda: [(n, f"{n} ({v})") for v, n in catalogue()],
    }
    for name, read in choices.items():
        form.fields[name].widget = forms.Select(choices=lambda read=read: [("", "any")] + read())
    return form
