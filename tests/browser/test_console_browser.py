"""Acceptance in a real browser: a member submits a job through the form, sees it placed and
on the node's card map; another tenant's member cannot see it anywhere."""

import re

import pytest

from scheduling.models import Job, Placement
from tests.browser.conftest import login
from tests.console_world import build_world

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_member_submits_sees_it_placed_and_other_tenant_cannot(chromium, live_server, eager_celery):
    build_world()
    base = live_server.url
    page = login(chromium, base, "alice", "pw-alice")
    page.click("text=Jobs")
    page.click("#submit-job")
    page.select_option("select[name=queue]", label="team-a / default (group g1)")
    page.fill("input[name=name]", "browser-job")
    page.fill("input[name=device_count]", "1")
    page.fill("input[name=device_memory_mib]", "8192")
    page.fill("input[name=cores_percent]", "20")
    page.click("#job-form button[type=submit]")
    # the job's own page: a glob "/jobs/*/" also matches /jobs/new/, where the page still is
    # when the click returns, so the wait passed before the POST had created the job
    page.wait_for_url(re.compile(rf"^{re.escape(base)}/jobs/\d+/$"))
    job = Job.objects.get(name="browser-job")
    assert page.url == f"{base}/jobs/{job.pk}/"
    page.reload()
    assert page.inner_text("#job-state") == "running"
    placement = Placement.objects.get(job=job)
    node = placement.node
    assert node.name in page.inner_text("#placements")
    page.click(f"#placements >> text={node.name}")
    card_map = page.inner_text("#card-map")
    assert "team-a / browser-job" in card_map
    assert "8,192 MiB, 20 %" in card_map
    page.context.close()

    other = login(chromium, base, "bob", "pw-bob")
    other.goto(f"{base}/jobs/")
    assert "browser-job" not in other.content()
    response = other.goto(f"{base}/jobs/{job.pk}/")
    assert response.status == 404
    other.goto(f"{base}/nodes/{node.pk}/")
    text = other.inner_text("#card-map")
    assert "browser-job" not in text and "team-a" not in text
    assert "other tenant" in text
    api = other.request.get(f"{base}/api/jobs/{job.pk}/")
    assert api.status == 404 and "browser-job" not in api.text()
    other.context.close()
