"""The split view of a parent tenant's quota (issue 30): per resource group, flavor and
dimension, the parent's quota row and each child's nominal quota, borrowing limit and
lending limit (Kueue terms) with usage. Whoever manages the children's quotas
(``tenants.selectors.can_manage_quota``: a platform admin, the parent's tenant admin) edits
the children's shares here; ``tenants.services.split_quota`` checks and saves the split as a
whole (the children's nominal quotas together stay within the parent's row), so a refused
split is a form error and nothing is saved."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect, render

from core.exceptions import DomainError
from scheduling.selectors.quota_board import SplitBoard, quota_split
from tenants import services
from tenants.models import MAX_QUOTA_AMOUNT, Quota, Tenant
from tenants.selectors import can_manage_quota, get_visible_tenant_ids

RAW_UNITS = {"devices": "milli-devices", "memory_mib": "MiB", "cores_percent": "%"}
"""The unit of each dimension's stored amounts, as the API takes them."""
LIMITS = ("nominal", "borrowing_limit", "lending_limit")
EMPTY_MEANS = {"borrowing_limit": "unlimited", "lending_limit": "all"}


class SplitForm(forms.Form):
    """Nominal quota, borrowing limit and lending limit of every child row shown
    (``q<row id>_<field>``; an empty limit = unlimited / all of it)."""

    def __init__(self, boards: list[SplitBoard], *args, **kwargs):
        super().__init__(*args, **kwargs)
        for board in boards:
            for row in board.rows:
                for bar in row.children:
                    where = (
                        f"{bar.tenant} {{}} {bar.dimension} ({bar.flavor}) in {board.group.name}"
                    )
                    for name in LIMITS:
                        self.fields[f"q{bar.quota_id}_{name}"] = forms.IntegerField(
                            min_value=0,
                            max_value=MAX_QUOTA_AMOUNT,
                            required=name == "nominal",
                            initial=getattr(bar, name),
                            widget=forms.NumberInput(
                                attrs={
                                    "aria-label": where.format(name.replace("_", " ")),
                                    "placeholder": EMPTY_MEANS.get(name, ""),
                                }
                            ),
                        )

    def shares(self, rows: dict[int, Quota]) -> list[services.QuotaShare]:
        """The rows whose amounts the form changes, as the service's shares."""
        out = []
        for pk, quota in rows.items():
            values = [self.cleaned_data[f"q{pk}_{name}"] for name in LIMITS]
            if values != [quota.nominal, quota.borrowing_limit, quota.lending_limit]:
                out.append(services.QuotaShare(quota, *values))
        return out


def _save(request, parent: Tenant, form: SplitForm, rows: dict[int, Quota]) -> bool:
    """Save the split through the service; a refusal becomes a form error (False)."""
    shares = form.shares(rows)
    try:
        services.split_quota(parent, shares, actor=request.user)
    except DomainError as exc:
        field = (exc.field or "").removeprefix("quotas[").replace("].", "_")
        form.add_error(f"q{field}" if f"q{field}" in form.fields else None, exc.message)
        return False
    names = sorted({s.quota.tenant.name for s in shares})
    messages.success(request, f"Split saved: {', '.join(names) or 'nothing changed'}.")
    return True


@login_required
def quota_split_page(request, name: str):
    """GET: the split view of tenant ``name`` (whoever reads it; 404 for others). POST: the
    children's new shares (403 unless the user manages the children's quotas)."""
    visible = get_visible_tenant_ids(request.user)
    tenants = Tenant.objects.all() if visible is None else Tenant.objects.filter(pk__in=visible)
    parent = get_object_or_404(tenants, name=name)
    children = list(tenants.filter(parent=parent).order_by("name"))
    can_edit = bool(children) and can_manage_quota(request.user, children[0])
    boards = quota_split(parent.pk, [c.pk for c in children])
    ids = [b.quota_id for board in boards for row in board.rows for b in row.children]
    form = SplitForm(boards, request.POST if request.method == "POST" else None)
    if request.method == "POST":
        if not can_edit:
            raise PermissionDenied("Quotas are split by the parent tenant's admin.")
        rows = Quota.objects.select_related("tenant", "resource_group").in_bulk(ids)
        if form.is_valid() and _save(request, parent, form, rows):
            return redirect("dashboards:quota-split", name=parent.name)
    return render(
        request,
        "dashboards/quota_split.html",
        {
            "tenant": parent,
            "children": children,
            "boards": boards,
            "form": form,
            "inputs": {pk: [form[f"q{pk}_{n}"] for n in LIMITS] for pk in ids},
            "can_edit": can_edit,
            "units": RAW_UNITS,
        },
        status=400 if form.is_bound and form.errors else 200,
    )
