"""Expected 4xx answers log one line (method, path, status, user id, reason) on
``django.request`` with no traceback; a real 500 keeps its traceback (issue 30)."""

import logging
import logging.config

import pytest
from django.http import HttpResponse
from django.test import RequestFactory
from django.utils.log import log_response

from tests.api.test_api_directory import as_user

pytestmark = pytest.mark.django_db


def _records(caplog):
    return [r for r in caplog.records if r.name == "django.request"]


def test_a_page_404_and_403_log_one_line_without_traceback(client, world, caplog):
    client.force_login(world["alice"])
    other = world["b_secret"].pk  # team-b's job: not alice's
    with caplog.at_level(logging.WARNING, logger="django.request"):
        assert client.get(f"/jobs/{other}/").status_code == 404
    (record,) = _records(caplog)
    alice = world["alice"].pk
    assert record.getMessage() == f"GET /jobs/{other}/ 404 user={alice} reason=Not Found"
    assert record.exc_info is None and record.levelno == logging.WARNING
    assert "Traceback" not in caplog.text

    caplog.clear()
    client.force_login(world["victor"])  # a viewer of team-a
    job = world["a_train"].pk
    with caplog.at_level(logging.WARNING, logger="django.request"):
        assert client.post(f"/jobs/{job}/cancel/").status_code == 403
    (record,) = _records(caplog)
    assert record.getMessage() == (
        f"POST /jobs/{job}/cancel/ 403 user={world['victor'].pk} "
        "reason=Forbidden (Permission denied): Viewers cannot cancel jobs."
    )
    assert record.exc_info is None and "Traceback" not in caplog.text


def test_an_api_403_and_an_anonymous_401_name_the_user(api, world, caplog):
    with caplog.at_level(logging.WARNING, logger="django.request"):
        assert api.get("/api/tenants/").status_code == 401
        viewer = as_user(api, world["victor"])
        assert viewer.post(f"/api/jobs/{world['a_train'].pk}/cancel/").status_code == 403
    lines = [r.getMessage() for r in _records(caplog)]
    assert lines == [
        "GET /api/tenants/ 401 user=anonymous reason=Unauthorized",
        f"POST /api/jobs/{world['a_train'].pk}/cancel/ 403 user={world['victor'].pk} "
        "reason=Forbidden",
    ]


def test_a_500_keeps_its_traceback(caplog):
    request = RequestFactory().get("/boom/")
    try:
        raise RuntimeError("database on fire")
    except RuntimeError as exc:
        with caplog.at_level(logging.ERROR, logger="django.request"):
            # what django.core.handlers.exception does for an unhandled exception
            log_response(
                "Internal Server Error: %s",
                request.path,
                response=HttpResponse(status=500),
                request=request,
                exception=exc,
            )
    (record,) = _records(caplog)
    assert record.getMessage() == "Internal Server Error: /boom/"
    assert record.exc_info is not None and record.exc_info[1].args == ("database on fire",)
    assert "Traceback" in caplog.text and "database on fire" in caplog.text


def test_the_line_is_written_once_when_logging_is_configured_again(client, world, caplog):
    """``dictConfig`` adds a logger's filters again on each call (a second ``django.setup()``,
    as Celery's loader does), so ``django.request`` can carry two filters: the line stays
    one line (found when tests/notifications ran before this module)."""
    from django.conf import settings  # noqa: PLC0415 - the configured LOGGING, read here

    logger = logging.getLogger("django.request")
    before = list(logger.filters)
    # the settings' filter and the django.request logger configured again (the root's
    # handlers, pytest's capture among them, left as they are)
    logging.config.dictConfig(
        {
            "version": 1,
            "disable_existing_loggers": False,
            "filters": settings.LOGGING["filters"],
            "loggers": {"django.request": settings.LOGGING["loggers"]["django.request"]},
        }
    )
    try:
        assert len(logger.filters) == len(before) + 1
        client.force_login(world["alice"])
        other = world["b_secret"].pk
        with caplog.at_level(logging.WARNING, logger="django.request"):
            assert client.get(f"/jobs/{other}/").status_code == 404
        (record,) = _records(caplog)
        alice = world["alice"].pk
        assert record.getMessage() == f"GET /jobs/{other}/ 404 user={alice} reason=Not Found"
    finally:
        logger.filters[:] = before


def test_a_line_break_in_the_path_cannot_forge_a_log_line(client, world, caplog):
    """The path is written escaped, as Django's own ``log_response`` writes it
    (CVE-2025-48432); any user, anonymous included, could otherwise add a line (review)."""
    client.force_login(world["alice"])
    forged = "/jobs/999999/%0A2026-12-07 12:00:00 ERROR forged: admin deleted everything"
    with caplog.at_level(logging.WARNING, logger="django.request"):
        assert client.get(forged).status_code == 404
    (record,) = _records(caplog)
    line = record.getMessage()
    assert "\n" not in line and "\r" not in line
    assert line.startswith("GET /jobs/999999/\\n2026-12-07 12:00:00 ERROR forged")
