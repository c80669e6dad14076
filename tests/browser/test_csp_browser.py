"""The pages work under the Content-Security-Policy (issue 15) in a real browser: no page
reports a violation, the API docs (Swagger UI) render their operations, and the job page's
confirm-before-cancel (static script, no inline handler) asks and cancels."""

import pytest

from scheduling.models import Job
from tests.browser.conftest import login
from tests.console_world import build_world

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PAGES = [
    "/",
    "/jobs/",
    "/jobs/new/",
    "/nodes/",
    "/quotas/",
    "/usage/",
    "/tenants/team-a/",
    "/account/token/",
    "/api/docs/",
]


def _record_violations(page) -> list[str]:
    found: list[str] = []
    page.on(
        "console",
        lambda message: (
            found.append(message.text) if "Content Security Policy" in message.text else None
        ),
    )
    return found


def test_pages_run_under_the_policy_without_violations(chromium, live_server):
    build_world()
    page = login(chromium, live_server.url, "ada", "pw-ada")
    violations = _record_violations(page)
    for path in PAGES:
        response = page.goto(f"{live_server.url}{path}")
        assert response.status == 200, path
        assert "script-src 'self'" in response.headers["content-security-policy"], path
        page.wait_for_load_state("networkidle")
    page.goto(f"{live_server.url}/api/docs/")
    page.wait_for_selector(".opblock-tag", timeout=15000)  # Swagger UI built the operations
    assert "/api/jobs/" in page.inner_text("#swagger-ui")
    assert violations == []
    page.context.close()


def test_cancel_asks_first_and_cancels_on_yes(chromium, live_server, eager_celery):
    world = build_world()
    job = world["a_wait"]
    page = login(chromium, live_server.url, "alice", "pw-alice")
    violations = _record_violations(page)
    page.goto(f"{live_server.url}/jobs/{job.pk}/")
    questions: list[str] = []

    def answer(dialog, accept):
        questions.append(dialog.message)
        dialog.accept() if accept else dialog.dismiss()

    page.once("dialog", lambda dialog: answer(dialog, False))
    page.click("#cancel-job")
    page.wait_for_timeout(300)
    job.refresh_from_db()
    assert questions == ["Cancel this job?"] and job.state == "queued"
    page.once("dialog", lambda dialog: answer(dialog, True))
    with page.expect_navigation():
        page.click("#cancel-job")
    assert Job.objects.get(pk=job.pk).state == "cancelled"
    assert violations == []
    page.context.close()
