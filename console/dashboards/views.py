"""Dashboard pages (server-rendered, login required, tenant-scoped)."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from scheduling.selectors.overview import (
    capacity_by_group,
    capacity_by_model,
    jobs_by_state,
    pending_reasons,
)
from tenants.selectors import get_user_tenant_ids


@login_required
def overview(request):
    """Capacity vs allocated per device model and resource group, jobs by state."""
    tenant_ids = get_user_tenant_ids(request.user)
    models = capacity_by_model()
    total_devices = sum(r.devices for r in models)
    allocated = sum(r.allocated_devices for r in models)
    context = {
        "models": models,
        "groups": capacity_by_group(),
        "jobs": jobs_by_state(tenant_ids),
        "reasons": pending_reasons(tenant_ids),
        "total_devices": total_devices,
        "allocated_devices": allocated,
        "allocation_pct": 100.0 * allocated / total_devices if total_devices else 0.0,
        "scope": "all tenants" if tenant_ids is None else "your tenants",
    }
    return render(request, "dashboards/overview.html", context)
