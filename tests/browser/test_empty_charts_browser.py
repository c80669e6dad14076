"""An all-zero donut draws an empty state, not seven equal slices (issue 30): a fresh install
has no job, and the overview's "Jobs by state" donut says so."""

import pytest
from django.contrib.auth import get_user_model

from tests.browser.conftest import login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

#: In the page: the donut's drawn shapes (slices and legend marks are SVG paths) and texts.
PROBE = """() => {
  const svg = document.querySelector('#jobs-donut .chart-canvas svg');
  return {paths: svg.querySelectorAll('path').length,
          texts: Array.from(svg.querySelectorAll('text')).map((t) => t.textContent.trim())};
}"""


def test_a_donut_of_zeros_draws_an_empty_state(chromium, live_server):
    get_user_model().objects.create_superuser("root", "root@example.org", "pw-root")
    page = login(chromium, live_server.url, "root", "pw-root")
    page.wait_for_selector("#jobs-donut .chart-canvas svg text")
    probe = page.evaluate(PROBE)
    assert probe == {"paths": 0, "texts": ["No jobs yet"]}
    page.context.close()
