"""The simulation and notifications pages in a real browser at 1280 and 1920 px, by the rules
of tests/browser/test_pages_layout.py (no horizontal overflow, charts drawn with axes, no
console error). A finished what-if run (the demo's
busiest group, two policies) and a pending one (its progress bar) are shown."""

import pytest

from scheduling.models import Job, SimulationRun
from scheduling.services.whatif import create_run, run_whatif
from tenants.models import ResourceGroup
from tests.browser.conftest import login
from tests.browser.test_pages_layout import WIDTHS, _check, _history

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_simulation_and_notification_pages(chromium, live_server):
    from django.contrib.auth import get_user_model

    _history()
    admin = get_user_model().objects.get(username="admin")
    group = max(
        ResourceGroup.objects.order_by("pk"),
        key=lambda g: Job.objects.filter(queue__resource_group=g).count(),
    )
    done = create_run(
        user=admin, group=group, policies=["FragGuard", "BestFit"], quotas_text="team-nlp = 2"
    )
    assert run_whatif(done.pk) == "done"
    pending = create_run(user=admin, group=group, policies=["GpuPacking"])
    SimulationRun.objects.filter(pk=pending.pk).update(state="running", progress_percent=40)
    base = live_server.url
    page = login(chromium, base, "admin", "pw-demo")
    errors: list[str] = []
    page.on("console", lambda m, out=errors: out.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e, out=errors: out.append(str(e)))
    seen = {}
    for name, url in {
        "simulations": "/simulations/",
        "simulation": f"/simulations/{done.pk}/",
        "simulation-running": f"/simulations/{pending.pk}/",
        "notifications": "/notifications/",
    }.items():
        for width in WIDTHS:
            seen[name] = [c["id"] for c in _check(page, base, name, url, width, errors)["charts"]]
    assert {"sim-allocation", "sim-waits", "sim-fairness", "sim-tenant-waits"} <= set(
        seen["simulation"]
    )
    page.goto(f"{base}/simulations/{pending.pk}/")
    assert page.get_attribute("[role=progressbar]", "aria-valuenow") == "40"
    page.context.close()
