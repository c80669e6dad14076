"""Acceptance in a real browser (issue 30): on the demo, ``dave`` (tenant admin of the parent
tenant ``research``) logs in, submits a job to research's own queue and sees it placed, then
opens research's quota split, gives team-vision 1 device of team-nlp's nominal quota, and
is refused, with nothing saved, a split whose children would hold more than research has."""

import re

import pytest

from scheduling.models import Job
from scheduling.services.demo import seed_demo
from tenants.models import Quota
from tests.browser.conftest import login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DEVICES = {"resource_group__name": "nvidia-shared", "flavor": "*", "dimension": "devices"}


def _nominal(tenant: str) -> int:
    return Quota.objects.get(tenant__name=tenant, **DEVICES).nominal


def test_dave_submits_to_research_and_splits_its_quota(chromium, live_server, eager_celery):
    seed_demo("pw-demo-dave")
    base = live_server.url
    page = login(chromium, base, "dave", "pw-demo-dave")
    page.click("text=Jobs")
    page.click("#submit-job")
    page.select_option("select[name=queue]", label="research / nvidia-shared (group nvidia-shared)")
    page.fill("input[name=name]", "dave-eval")
    page.fill("input[name=device_count]", "1")
    page.fill("input[name=device_memory_mib]", "8192")
    page.fill("input[name=cores_percent]", "20")
    page.click("#job-form button[type=submit]")
    # the job's own page: a glob "/jobs/*/" also matches /jobs/new/, where the page still is
    # when the click returns, so the wait passed before the POST had created the job
    page.wait_for_url(re.compile(rf"^{re.escape(base)}/jobs/\d+/$"))
    job = Job.objects.get(name="dave-eval")
    assert page.url == f"{base}/jobs/{job.pk}/"
    assert job.tenant.name == "research"
    page.reload()
    assert page.inner_text("#job-state") == "running"

    page.goto(f"{base}/tenants/research/")
    page.click("#quota-split-link")
    page.wait_for_url(f"{base}/tenants/research/quota-split/")
    nlp = page.get_by_label("team-nlp nominal devices (*) in nvidia-shared")
    vision = page.get_by_label("team-vision nominal devices (*) in nvidia-shared")
    assert (nlp.input_value(), vision.input_value()) == ("6000", "6000")
    assert "children hold 12000 (12 devices); research's own part 4000" in page.inner_text(
        "#split-nvidia-shared"
    )
    nlp.fill("5000")
    vision.fill("7000")
    page.click("#save-split")
    page.wait_for_url(f"{base}/tenants/research/quota-split/")
    assert "Split saved: team-nlp, team-vision." in page.inner_text(".messages")
    assert (_nominal("team-nlp"), _nominal("team-vision")) == (5000, 7000)
    assert page.get_by_label("team-vision nominal devices (*) in nvidia-shared").input_value() == (
        "7000"
    )

    page.get_by_label("team-vision nominal devices (*) in nvidia-shared").fill("12000")
    page.click("#save-split")
    errors = page.inner_text("#split-errors")
    assert "the children of research would hold 17000 of devices for * in nvidia-shared" in errors
    assert "more than research's quota of 16000: lower a child's nominal quota by 1000" in errors
    assert (_nominal("team-nlp"), _nominal("team-vision")) == (5000, 7000)
    page.context.close()
