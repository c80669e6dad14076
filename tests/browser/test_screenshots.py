"""Screenshots of the main pages for the README (docs/screenshots/*.png).

Runs only when ``CONSOLE_SCREENSHOTS`` names the output folder, e.g.
``CONSOLE_SCREENSHOTS=docs/screenshots python -m pytest tests/browser/test_screenshots.py``.
The data is the built-in demo (seed_demo) plus 50 sample jobs, admitted and started, with
two weeks of finished history for the usage page.
"""

import os
import random
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from scheduling.models import Job, Node, Placement
from scheduling.services.cycle import run_admission_cycle
from scheduling.services.demo import seed_demo, submit_demo_job
from scheduling.services.submissions import submit_to_cluster
from tenants.models import ResourceGroup
from tests.browser.conftest import login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
OUT = os.environ.get("CONSOLE_SCREENSHOTS", "")


def _demo_with_history():
    seed_demo("pw-demo")
    rng = random.Random(7)
    for _ in range(50):
        submit_demo_job(rng)
    for group in ResourceGroup.objects.all():
        run_admission_cycle(group.pk)
    for job in Job.objects.filter(state="admitted"):
        submit_to_cluster(job.pk)
    now = timezone.now()
    for i, placement in enumerate(Placement.objects.filter(state="running").order_by("id")):
        if i % 3 == 0:  # a third ran and finished earlier this month
            start = now - timedelta(days=1 + i % 10, hours=i % 7)
            Placement.objects.filter(pk=placement.pk).update(
                started_at=start, ended_at=start + timedelta(hours=3 + i % 9), state="succeeded"
            )
            Job.objects.filter(pk=placement.job_id).update(state="succeeded", finished_at=now)
        else:
            Placement.objects.filter(pk=placement.pk).update(
                started_at=now - timedelta(hours=2 + i % 30)
            )


@pytest.mark.skipif(not OUT, reason="set CONSOLE_SCREENSHOTS=<folder> to take screenshots")
def test_screenshots(chromium, live_server):
    _demo_with_history()
    out = Path(OUT)
    out.mkdir(parents=True, exist_ok=True)
    base = live_server.url
    busiest = max(
        Node.objects.all(), key=lambda n: Placement.objects.filter(node=n, state="running").count()
    )
    device = busiest.devices.order_by("index").first()
    admin = login(chromium, base, "admin", "pw-demo")
    shots = {
        "overview.png": "/",
        "quotas.png": "/quotas/",
        "jobs.png": "/jobs/",
        "nodes.png": "/nodes/",
        "card-map-admin.png": f"/nodes/{busiest.pk}/",
        "device.png": f"/devices/{device.uuid}/",
        "usage.png": "/usage/",
        "audit.png": "/audit/",
    }
    for name, url in shots.items():
        admin.goto(base + url)
        admin.screenshot(path=str(out / name), full_page=True)
    admin.context.close()
    job = (
        Job.objects.filter(state="queued", tenant__name="team-nlp").first()
        or Job.objects.filter(tenant__name="team-nlp").first()
    )
    alice = login(chromium, base, "alice", "pw-demo")
    for name, url in {
        "card-map-member.png": f"/nodes/{busiest.pk}/",
        "job-detail.png": f"/jobs/{job.pk}/",
        "submit.png": "/jobs/new/",
        "overview-member.png": "/",
    }.items():
        alice.goto(base + url)
        alice.screenshot(path=str(out / name), full_page=True)
    alice.context.close()
