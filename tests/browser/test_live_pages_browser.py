"""Issue 30 in a real browser: the jobs list and the job page follow a job from queued to
running without a reload (static/console/live.js polls each page's fragment), and the job
page's state timeline gains the admission and the start."""

import pytest
from playwright.sync_api import expect

from scheduling.models import Job
from scheduling.services.cluster_submission import submit_to_cluster
from scheduling.services.cycle import run_admission_cycle
from tests.browser.conftest import login
from tests.builders import gpu_job
from tests.console_world import build_world

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

REFRESH_MS = 15_000  # the list polls every 5 s, the job page every 3 s


def _watch_navigations(page) -> list[str]:
    """Mark the window (a reload would lose the mark) and record main-frame navigations."""
    assert page.evaluate("document.hidden") is False  # live.js skips hidden pages
    page.evaluate("window.liveMarker = 'kept'")
    seen: list[str] = []
    page.on("framenavigated", lambda f: seen.append(f.url) if f == page.main_frame else None)
    return seen


def test_the_jobs_list_and_job_page_follow_a_job_to_running_without_reload(chromium, live_server):
    world = build_world()
    job = gpu_job(world["queue_a"], "live-job", count=1, memory_percent=10, cores=10)
    jobs = login(chromium, live_server.url, "alice", "pw-alice")
    jobs.goto(f"{live_server.url}/jobs/?name=live-job")  # the poll keeps the filter
    row_state = jobs.locator(f"#job-row-{job.pk} .job-state")
    expect(row_state).to_have_text("queued")
    expect(jobs.locator("#jobs-table tbody tr")).to_have_count(1)
    detail = jobs.context.new_page()
    detail.goto(f"{live_server.url}/jobs/{job.pk}/")
    expect(detail.locator("#job-state")).to_have_text("queued")
    timeline = detail.locator("#events tr.transition")
    expect(timeline).to_have_count(1)
    navigations = {"list": _watch_navigations(jobs), "job": _watch_navigations(detail)}

    run_admission_cycle(world["group"].pk)
    submit_to_cluster(job.pk)

    expect(row_state).to_have_text("running", timeout=REFRESH_MS)
    expect(jobs.locator("#jobs-table tbody tr")).to_have_count(1)  # still filtered
    expect(detail.locator("#job-state")).to_have_text("running", timeout=REFRESH_MS)
    expect(timeline).to_have_count(3)
    expect(timeline.nth(1)).to_have_attribute("data-kind", "admitted")
    expect(timeline.nth(2)).to_have_attribute("data-kind", "running")
    expect(timeline.nth(2)).to_contain_text("all pods running")
    expect(detail.locator("#placements")).to_contain_text("c1-n")
    for page in (jobs, detail):
        assert page.evaluate("window.liveMarker") == "kept"
    assert navigations == {"list": [], "job": []}
    # the cancel form a refresh brought still asks first (live.js's listener is delegated)
    questions: list[str] = []
    detail.once("dialog", lambda dialog: (questions.append(dialog.message), dialog.dismiss()))
    detail.click("#cancel-job")
    assert questions == ["Cancel this job?"]
    assert Job.objects.get(pk=job.pk).state == "running"
    jobs.context.close()
