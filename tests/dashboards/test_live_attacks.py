"""Review of issue 30's live fragments as an attacker, an unlucky operator and another tenant
would use them: anonymous and cross-tenant reads, hostile names and query strings, a
cross-tenant preemption in the victim's timeline."""

from __future__ import annotations

import re
from datetime import timedelta
from html import unescape

import pytest
from django.db import connection
from django.template.loader import render_to_string
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from scheduling.admission.eta import Confidence, EstimateState, HonestEstimate
from scheduling.models import Job, JobEvent, Placement
from scheduling.services.cluster_submission import submit_to_cluster
from scheduling.services.cycle import run_admission_cycle
from tests.builders import gpu_job, make_user, two_team_cohort

pytestmark = pytest.mark.django_db

HOSTILE = '<script>alert(1)</script>"><img src=x onerror=alert(2)>'


@pytest.mark.parametrize(
    "path", ["/", "/jobs/", "/jobs/{job}/", "/nodes/{node}/", "/simulations/999999/"]
)
def test_an_anonymous_fragment_is_401_while_its_page_redirects_to_the_login(client, world, path):
    """A session that expired under a live page: the page itself redirects to the login, but
    its fragment must not (live.js followed the redirect and swapped the login page, 200, into
    the jobs table, and kept polling); 401 stops the polling."""
    node_id = Placement.objects.get(job=world["a_train"]).node_id
    url = path.format(job=world["a_wait"].pk, node=node_id)
    page = client.get(url)
    assert page.status_code == 302 and page["Location"].startswith("/accounts/login/")
    for query in ("?fragment=1", "?state=queued&fragment=1"):
        response = client.get(url + query)
        assert response.status_code == 401, (url, query)
        assert "Location" not in response
        text = response.content.decode()
        assert "a-wait" not in text and "password" not in text


def test_a_viewer_reads_the_fragment_without_the_cancel_form(client, world):
    client.force_login(world["victor"])
    text = client.get(f"/jobs/{world['a_wait'].pk}/?fragment=1").content.decode()
    assert 'id="timeline"' in text
    assert "cancel-job" not in text


def test_a_hostile_job_name_and_message_are_escaped_in_both_fragments(client, world):
    job = gpu_job(world["queue_a"], "evil", count=1)
    Job.objects.filter(pk=job.pk).update(name=HOSTILE, pending_reason=HOSTILE)
    job.events.update(message=HOSTILE)
    client.force_login(world["alice"])
    for url in (f"/jobs/{job.pk}/?fragment=1", "/jobs/?fragment=1"):
        text = client.get(url).content.decode()
        assert "<script>alert(1)" not in text and "<img src=x" not in text
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text


def test_the_live_src_of_a_hostile_query_string_stays_one_attribute(client, world):
    client.force_login(world["alice"])
    page = client.get("/jobs/?name=\"><script>alert(1)</script>&x=' onmouseover=alert(3)").content
    text = page.decode()
    assert "<script>alert(1)</script>" not in text
    found = re.search(r'id="jobs-live"[^>]* data-src="([^"]+)"', text)
    assert found is not None
    src = unescape(found.group(1))
    assert src.startswith("/jobs/?") and src.endswith("&fragment=1")
    assert '"' not in src and "<" not in src and "'" not in src and " " not in src


@pytest.mark.parametrize(
    "query",
    [
        "fragment=1&page=999999",
        "fragment=1&page=-1",
        "fragment=1&page=abc",
        "fragment=x",
        "fragment=1&state=bogus",
        "fragment=1&vendor=bogus",
        "fragment=1&queue=notanumber&tenant=%00",
        "fragment=1&unknown_filter=1",
        "fragment=1&ordering=-nonexistent",
    ],
)
def test_bad_query_strings_on_the_list_fragment_do_not_fail(client, world, query):
    client.force_login(world["alice"])
    response = client.get(f"/jobs/?{query}")
    assert response.status_code in (200, 400), response.status_code
    assert "b-secret" not in response.content.decode()


def test_a_bad_query_string_on_the_job_and_node_fragments_does_not_fail(client, world):
    client.force_login(world["alice"])
    node_id = Placement.objects.get(job=world["a_train"]).node_id
    for url in (
        f"/jobs/{world['a_wait'].pk}/?fragment=1&page=abc&x=1",
        f"/nodes/{node_id}/?fragment=1&range=bogus&x=1",
    ):
        assert client.get(url).status_code == 200, url


def test_a_cross_tenant_preemption_never_names_the_preemptor_in_the_victims_fragment(client):
    group, (team_a, qa), (team_b, qb) = two_team_cohort()
    whole = {"count": 1, "memory_percent": 100, "cores": 100}
    b_jobs = [gpu_job(qb, f"b-victim-{i}", **whole) for i in range(4)]
    run_admission_cycle(group.pk)
    for job in b_jobs:
        submit_to_cluster(job.pk)
    base = timezone.now() - timedelta(minutes=10)
    for i, job in enumerate(b_jobs):
        Job.objects.filter(pk=job.pk).update(admitted_at=base + timedelta(seconds=i))
    preemptor = gpu_job(qa, "a-reclaimer-xyz", **whole)
    assert run_admission_cycle(group.pk).preempted == [b_jobs[3].pk]
    client.force_login(make_user("bobby", team_b, "member"))
    text = client.get(f"/jobs/{b_jobs[3].pk}/?fragment=1").content.decode()
    assert 'data-kind="preempted"' in text
    assert team_a.name not in text and "a-reclaimer-xyz" not in text
    assert f"#{preemptor.pk}" not in text and f"/jobs/{preemptor.pk}/" not in text
    client.force_login(make_user("alicia", team_a, "member"))
    for url in (f"/jobs/{preemptor.pk}/?fragment=1", "/jobs/?fragment=1"):
        text = client.get(url).content.decode()
        assert "b-victim" not in text and team_b.name not in text, url


def test_the_job_fragment_costs_the_same_for_a_long_history(client, world):
    job = world["a_wait"]
    client.force_login(world["alice"])
    url = f"/jobs/{job.pk}/?fragment=1"
    client.get(url)  # sessions and caches warm
    with CaptureQueriesContext(connection) as few:
        assert client.get(url).status_code == 200
    JobEvent.objects.bulk_create(
        [JobEvent(job=job, kind="scaled", message=f"note {i}") for i in range(15)]
    )
    with CaptureQueriesContext(connection) as many:
        text = client.get(url).content.decode()
    assert text.count('data-kind="scaled"') == 15
    assert len(many) == len(few), [q["sql"] for q in many.captured_queries]


def test_an_estimate_past_the_year_2286_is_not_shown_as_now():
    """_eta.html compared Unix timestamps as strings (``date:"U"``): an 11-digit timestamp
    (after 2286-11-20) sorted before today's 10 digits, so a job estimated 300 years ahead
    (300 year-long jobs of the whole group queued ahead of it) read "now"."""
    now = timezone.now()
    far = HonestEstimate(
        EstimateState.ESTIMATED,
        now + timedelta(days=300 * 365),
        now + timedelta(days=301 * 365),
        Confidence.LOW,
    )
    text = " ".join(render_to_string("dashboards/_eta.html", {"est": far}).split())
    assert text.startswith("in 299 years") or text.startswith("in 300 years"), text
    soon = HonestEstimate(
        EstimateState.ESTIMATED,
        now - timedelta(minutes=1),
        now + timedelta(minutes=5, seconds=30),
        Confidence.HIGH,
    )
    text = " ".join(render_to_string("dashboards/_eta.html", {"est": soon}).split())
    assert text.startswith("now – in 5"), text
    gone = HonestEstimate(
        EstimateState.ESTIMATED,
        now - timedelta(minutes=2),
        now - timedelta(minutes=1),
        Confidence.HIGH,
    )
    text = " ".join(render_to_string("dashboards/_eta.html", {"est": gone}).split())
    assert text.startswith("now <span"), text
