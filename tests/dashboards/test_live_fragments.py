"""Live pages (issue 30): the jobs list, the job page and the card map poll their own
fragment (``?fragment=1``, static/console/live.js). A fragment keeps the page's query string,
follows the page's access rule (another tenant's job: 404; another tenant's slices: "other
tenant"), costs the same for 2 or 26 rows, and a job in a final state stops the polling."""

from __future__ import annotations

import re
from html import unescape

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from scheduling.models import Placement
from scheduling.services.cluster_submission import submit_to_cluster
from scheduling.services.cycle import run_admission_cycle
from scheduling.services.jobs import cancel_job
from tests.builders import gpu_job

pytestmark = pytest.mark.django_db


def _get(client, user, url: str):
    client.force_login(user)
    return client.get(url)


def _live_src(html: str, region: str) -> str | None:
    found = re.search(rf'id="{region}"[^>]* data-live="\d+" data-src="([^"]+)"', html)
    return unescape(found.group(1)) if found else None


def test_the_jobs_list_polls_its_table_with_the_pages_filters(client, world):
    page = _get(client, world["alice"], "/jobs/?state=queued&page=1").content.decode()
    src = _live_src(page, "jobs-live")
    assert src == "/jobs/?state=queued&page=1&fragment=1"
    fragment = client.get(src)
    assert fragment.status_code == 200
    text = fragment.content.decode()
    assert 'id="jobs-table"' in text and "<form" not in text and "<html" not in text
    assert f'id="job-row-{world["a_wait"].pk}"' in text  # queued
    assert f'id="job-row-{world["a_train"].pk}"' not in text  # running: filtered out
    assert "b-secret" not in text


def test_the_pager_of_a_fragment_does_not_link_fragments(client, world):
    for i in range(55):
        gpu_job(world["queue_a"], f"many-{i}", count=1)
    text = _get(client, world["alice"], "/jobs/?state=queued&fragment=1").content.decode()
    assert 'href="?state=queued&page=2"' in text
    assert "fragment" not in text


def test_the_list_fragment_costs_the_same_for_2_or_26_rows(client, world):
    client.force_login(world["alice"])
    url = "/jobs/?fragment=1"
    client.get(url)  # sessions and caches warm
    with CaptureQueriesContext(connection) as few:
        assert client.get(url).status_code == 200
    jobs = [gpu_job(world["queue_a"], f"small-{i}", count=1, memory_percent=5) for i in range(12)]
    run_admission_cycle(world["group"].pk)
    for job in jobs:
        submit_to_cluster(job.pk)
    for i in range(12):
        gpu_job(world["queue_a"], f"waiting-{i}", count=4)
    with CaptureQueriesContext(connection) as many:
        response = client.get(url)
    # team-a's 2 + 24 (b-secret is team-b's)
    assert response.content.decode().count('id="job-row-') == 26
    assert len(many) == len(few), [q["sql"] for q in many.captured_queries]
    with CaptureQueriesContext(connection) as full:
        client.get("/jobs/")
    assert len(many) < len(full)  # the filter selects and the navigation are not polled


def test_another_tenants_job_fragment_is_404(client, world):
    job = world["a_wait"]
    assert _get(client, world["bob"], f"/jobs/{job.pk}/?fragment=1").status_code == 404
    own = _get(client, world["alice"], f"/jobs/{job.pk}/?fragment=1")
    assert own.status_code == 200
    text = own.content.decode()
    assert 'id="timeline"' in text and 'id="placements"' in text and "<html" not in text
    assert "data-live-stop" not in text


def test_a_live_job_polls_and_a_finished_one_stops(client, world):
    job = world["a_wait"]
    page = _get(client, world["alice"], f"/jobs/{job.pk}/").content.decode()
    assert _live_src(page, "job-live") == f"/jobs/{job.pk}/?fragment=1"
    assert "data-live-stop" not in page
    cancel_job(job)
    fragment = client.get(f"/jobs/{job.pk}/?fragment=1").content.decode()
    assert "<span data-live-stop hidden></span>" in fragment  # live.js's last refresh
    assert 'data-kind="cancelled"' in fragment
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert _live_src(page, "job-live") is None  # a finished job's page does not poll


def test_the_card_map_fragment_masks_other_tenants_like_the_page(client, world):
    node_id = Placement.objects.get(job=world["a_train"]).node_id
    page = _get(client, world["bob"], f"/nodes/{node_id}/").content.decode()
    assert _live_src(page, "card-map-live") == f"/nodes/{node_id}/?fragment=1"
    text = client.get(f"/nodes/{node_id}/?fragment=1").content.decode()
    assert 'id="card-map"' in text and "<html" not in text
    assert "other tenant" in text and "team-a" not in text and "a-train" not in text
    own = _get(client, world["alice"], f"/nodes/{node_id}/?fragment=1").content.decode()
    assert "team-a / a-train" in own
    assert client.get("/nodes/999999/?fragment=1").status_code == 404
