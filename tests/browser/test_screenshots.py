"""Screenshots of every page for every demo role (docs/screenshots/<page>-<role>.png), and
the data the layout tests share (:func:`_demo_with_history`).

Runs only when ``CONSOLE_SCREENSHOTS`` names the output folder, e.g.
``CONSOLE_SCREENSHOTS=docs/screenshots python -m pytest tests/browser/test_screenshots.py``
(so CI never writes into the checkout). The data is what ``make run`` shows a few minutes
in: the built-in demo (seed_demo) with six hours of its history (seed_demo_history), 50
sample jobs admitted and started, one telemetry tick, and two what-if runs of dave's (one
done, one running). One browser, one context per role, viewport 1280 x 800; each shot is
the page's full height, at most :data:`MAX_HEIGHT` px.

Roles (:data:`ROLES`): ``platform-admin`` (admin), ``tenant-admin`` (dave, research),
``member`` (alice, team-nlp), ``viewer`` (carol, team-nlp). A page a role may not open
(:data:`DENIED`) is not shot: the test asserts it answers 403 or 404 to that role and that
the role's overview and page header link nowhere to it.
"""

import os
import random
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from scheduling.models import Job, Node, Placement, SimulationRun
from scheduling.services.cluster_submission import submit_to_cluster
from scheduling.services.cycle import run_admission_cycle
from scheduling.services.demo import seed_demo, submit_demo_job
from scheduling.services.whatif import create_run, run_whatif
from telemetry.services.demo_history import seed_demo_history
from telemetry.services.rollups import rollup
from telemetry.services.synthetic import synthetic_tick
from telemetry.services.usage_months import refresh_usage_months
from telemetry.tasks import gauges_task
from tenants.models import ResourceGroup
from tests.browser.conftest import login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
OUT = os.environ.get("CONSOLE_SCREENSHOTS", "")
VIEWPORT = {"width": 1280, "height": 800}
MAX_HEIGHT = 4000

#: role name in the file names -> (demo user, the tenant whose pages it is shown)
ROLES = {
    "platform-admin": ("admin", "team-nlp"),
    "tenant-admin": ("dave", "research"),
    "member": ("alice", "team-nlp"),
    "viewer": ("carol", "team-nlp"),
}
#: pages a role may not open (403 or 404, no link to them)
DENIED = {
    "platform-admin": set(),
    "tenant-admin": {"audit"},
    "member": {"audit", "quota-split", "simulations", "simulation", "simulation-running"},
    "viewer": {"audit", "quota-split", "simulations", "simulation", "simulation-running", "submit"},
}


def _demo_with_history():
    """The layout tests' data (tests/browser/test_pages_layout.py): the demo with 50 sample
    jobs admitted and started, a third of them finished earlier this month."""
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


def _as_make_run_leaves_it():
    """The demo with six hours of history, 50 sample jobs admitted and started, one
    telemetry tick now, and dave's two what-if runs (module docstring). Returns the runs."""
    seed_demo("pw-demo")
    seed_demo_history(6)
    rng = random.Random(7)
    for _ in range(50):
        submit_demo_job(rng)
    for group in ResourceGroup.objects.order_by("pk"):
        run_admission_cycle(group.pk)
    for job in Job.objects.filter(state="admitted"):
        submit_to_cluster(job.pk)
    now = timezone.now()
    synthetic_tick(now=now)
    rollup(now=now + timedelta(minutes=1))
    refresh_usage_months(now)
    gauges_task()
    dave = get_user_model().objects.get(username="dave")
    group = ResourceGroup.objects.get(name="nvidia-shared")
    done = create_run(user=dave, group=group, policies=["FragGuard", "BestFit"])
    assert run_whatif(done.pk) == "done"
    running = create_run(user=dave, group=group, policies=["GpuPacking"])
    SimulationRun.objects.filter(pk=running.pk).update(state="running", progress_percent=40)
    return done, running


def _pages(tenant: str, runs) -> dict[str, str]:
    """Every page of the console, ``{page name: path}``, with the objects of ``tenant``."""
    busiest = max(
        Node.objects.order_by("pk"),
        key=lambda n: Placement.objects.filter(node=n, state="running").count(),
    )
    device = busiest.devices.order_by("index").first()
    job = (
        Job.objects.filter(tenant__name=tenant, state="running", parent=None).order_by("pk").first()
        or Job.objects.filter(tenant__name=tenant).order_by("pk").first()
    )
    group = ResourceGroup.objects.get(name="nvidia-shared")
    return {
        "overview": "/",
        "quotas": "/quotas/",
        "jobs": "/jobs/",
        "job": f"/jobs/{job.pk}/",
        "submit": "/jobs/new/",
        "nodes": "/nodes/",
        "card-map": f"/nodes/{busiest.pk}/",
        "device": f"/devices/{device.uuid}/",
        "group": f"/groups/{group.pk}/",
        "usage": "/usage/",
        "tenant": f"/tenants/{tenant}/",
        "quota-split": "/tenants/research/quota-split/",
        "notifications": "/notifications/",
        "tokens": "/account/token/",
        "invitations": "/account/invitations/",
        "audit": "/audit/",
        "simulations": "/simulations/",
        "simulation": f"/simulations/{runs[0].pk}/",
        "simulation-running": f"/simulations/{runs[1].pk}/",
    }


def _links(page) -> set[str]:
    return set(page.eval_on_selector_all("a[href]", "els => els.map(e => e.getAttribute('href'))"))


def _shoot(page, path: Path) -> None:
    page.wait_for_load_state("networkidle")
    height = min(MAX_HEIGHT, page.evaluate("document.documentElement.scrollHeight"))
    page.screenshot(
        path=str(path),
        full_page=True,
        clip={"x": 0, "y": 0, "width": VIEWPORT["width"], "height": height},
    )


@pytest.mark.skipif(not OUT, reason="set CONSOLE_SCREENSHOTS=<folder> to take screenshots")
def test_screenshots_of_every_page_for_every_role(chromium, live_server):
    runs = _as_make_run_leaves_it()
    out = Path(OUT)
    out.mkdir(parents=True, exist_ok=True)
    base = live_server.url
    shot = []
    for role, (username, tenant) in ROLES.items():
        page = login(chromium, base, username, "pw-demo")
        page.set_viewport_size(VIEWPORT)
        page.set_default_timeout(90_000)  # full-page shots of long pages on a busy machine
        pages = _pages(tenant, runs)
        links = _links(page)  # the overview, where login lands
        for name, url in pages.items():
            response = page.goto(base + url)
            if name in DENIED[role]:
                assert response.status in (403, 404), (role, name, response.status)
                assert url not in links | _links(page), (role, name)
                continue
            assert response.status == 200, (role, name, response.status)
            _shoot(page, out / f"{name}-{role}.png")
            shot.append(f"{name}-{role}")
        page.context.close()
    assert len(shot) == 4 * len(pages) - sum(len(d) for d in DENIED.values())
