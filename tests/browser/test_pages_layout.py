"""Every page in a real browser at 1280 and 1920 px on the demo data with history: no
horizontal overflow, every chart drawn with its axes (SVG text labels), no console error.
The committed screenshots (docs/screenshots/) are taken by tests/browser/test_screenshots.py.

History: the demo with 50 admitted jobs (tests/browser/test_screenshots.py), then six hours of
simulated telemetry (a tick every 20 minutes, rolled up) and trend rollups recorded at the
same instants, so the trend, device and node charts have series, and a health event on the
shown device.
"""

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from scheduling.models import Job, Node, Placement
from telemetry.models import DeviceHealthEvent
from telemetry.services.rollups import rollup
from telemetry.services.synthetic import synthetic_tick
from telemetry.services.trends import record_trends
from tenants.models import ResourceGroup
from tests.browser.conftest import login
from tests.browser.test_screenshots import _demo_with_history

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
WIDTHS = (1280, 1920)

#: In the page: horizontal overflow in px and, per chart, its type and drawn text labels.
PROBE = """() => {
  const out = {overflow: document.documentElement.scrollWidth - window.innerWidth, charts: []};
  document.querySelectorAll('[data-chart]').forEach((el) => {
    const spec = JSON.parse(document.getElementById(el.dataset.chart).textContent);
    out.charts.push({id: spec.id, type: spec.type, svg: el.querySelectorAll('svg').length,
                     texts: Array.from(el.querySelectorAll('svg text'))
                       .map((t) => t.textContent).filter((t) => t.trim()).length,
                     width: el.getBoundingClientRect().width});
  });
  const wide = [];
  document.querySelectorAll('main *').forEach((el) => {
    const r = el.getBoundingClientRect();
    if (r.right > window.innerWidth + 1 && getComputedStyle(el).position !== 'fixed') {
      wide.push(el.tagName + (el.id ? '#' + el.id : '') + '.' + el.className);
    }
  });
  out.wide = wide.slice(0, 5);
  return out;
}"""


def _history():
    _demo_with_history()
    now = timezone.now()
    # the queued jobs have waited 1-5 hours (capacity planning has demand to show)
    for i, job in enumerate(Job.objects.filter(state="queued").order_by("pk")):
        Job.objects.filter(pk=job.pk).update(created=now - timedelta(hours=1 + i % 5))
    for step in range(18, -1, -1):
        when = now - timedelta(minutes=20 * step)
        synthetic_tick(now=when)
        rollup(now=when + timedelta(minutes=2))
        record_trends(now=when + timedelta(minutes=2))


def _pages():
    busiest = max(
        Node.objects.all(), key=lambda n: Placement.objects.filter(node=n, state="running").count()
    )
    device = busiest.devices.order_by("index").first()
    DeviceHealthEvent.objects.create(
        serial=device.uuid,
        device=device,
        time=timezone.now() - timedelta(hours=2),
        kind="xid",
        severity="warning",
        value=13,
        message="XID 13 (simulated)",
    )
    job = Job.objects.filter(tenant__name="team-nlp").order_by("pk").first()
    group = max(
        ResourceGroup.objects.order_by("pk"),
        key=lambda g: Job.objects.filter(queue__resource_group=g, state="queued").count(),
    )  # demand for capacity planning
    admin = {
        "overview": "/",
        "quotas": "/quotas/",
        "jobs": "/jobs/",
        "nodes": "/nodes/",
        "card-map-admin": f"/nodes/{busiest.pk}/",
        "topology": f"/clusters/{busiest.cluster_id}/topology/",
        "device": f"/devices/{device.uuid}/",
        "usage": "/usage/",
        "audit": "/audit/",
        "group": f"/groups/{group.pk}/",
        "group-7d": f"/groups/{group.pk}/?range=7d",
        "tenant": "/tenants/team-nlp/",
        "quota-split": "/tenants/research/quota-split/",
        "tokens": "/account/token/",
    }
    member = {
        "overview-member": "/",
        "card-map-member": f"/nodes/{busiest.pk}/",
        "topology-member": f"/clusters/{busiest.cluster_id}/topology/",
        "job-detail": f"/jobs/{job.pk}/",
        "submit": "/jobs/new/",
        "jobs-member": "/jobs/",
    }
    return {"admin": admin, "alice": member}


def _check(page, base, name, url, width, errors):
    page.set_viewport_size({"width": width, "height": 900})
    errors.clear()
    response = page.goto(base + url)
    assert response.status == 200, (name, response.status)
    page.wait_for_load_state("networkidle")
    probe = page.evaluate(PROBE)
    assert probe["overflow"] <= 0, (name, width, probe["overflow"], probe["wide"])
    for chart in probe["charts"]:
        assert chart["svg"] >= 1, (name, width, chart)
        # time and bar charts: axis tick labels (+ axis names); a donut: its legend/total
        assert chart["texts"] >= (4 if chart["type"] != "donut" else 1), (name, width, chart)
        assert chart["width"] > 100, (name, width, chart)
    assert errors == [], (name, width, errors)
    return probe


def test_every_page_fits_draws_charts_and_logs_no_error(chromium, live_server):
    _history()
    base = live_server.url
    charts_seen = {}
    for user, pages in _pages().items():
        page = login(chromium, base, user, "pw-demo")
        errors: list[str] = []
        page.on("console", lambda m, out=errors: out.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e, out=errors: out.append(str(e)))
        for name, url in pages.items():
            for width in WIDTHS:
                probe = _check(page, base, name, url, width, errors)
                charts_seen[name] = [c["id"] for c in probe["charts"]]
        page.context.close()
    assert {
        "overview-alloc",
        "overview-queue",
        "overview-wait",
        "model-capacity",
        "jobs-donut",
    } <= set(charts_seen["overview"])
    assert {"device-util", "device-temperature", "device-power"} <= set(charts_seen["device"])
    assert {"group-alloc", "group-tenants", "planning"} <= set(charts_seen["group"])
    assert any(c.startswith("quota-") for c in charts_seen["tenant"])
    assert json.dumps(charts_seen)  # the ids for the failure message
