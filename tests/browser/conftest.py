"""Headless Chromium (Debian ``chromium`` at /usr/bin/chromium, installed by .ci/run) driven by
Playwright against pytest-django's live server. Admission runs inside the server: Celery
tasks execute eagerly, so a submitted job is admitted and started by the request that
commits it (no worker needed)."""

import os
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="session")
def chromium():
    if not Path(CHROMIUM).exists():
        message = f"{CHROMIUM} is missing: apt-get install -y chromium (done by .ci/run)"
        if os.environ.get("CI"):
            pytest.fail(message)  # CI installs it: a missing browser is a broken CI, not a skip
        pytest.skip(message)
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"  # Playwright's sync API runs a loop
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def eager_celery():
    from console.celery import app

    old = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = old


def login(browser, base_url: str, username: str, password: str):
    """A fresh browser context logged in through the login form; returns its page."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.goto(f"{base_url}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base_url}/")
    return page
