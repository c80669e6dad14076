"""Services enqueue tasks by name (``scheduling.dispatch``), after commit: every name they use,
and every beat entry, names a registered Celery task."""

import pytest
from django.conf import settings

from core.dispatch import registered_task
from scheduling import dispatch


@pytest.mark.parametrize("name", dispatch.TASK_NAMES)
def test_every_task_name_constant_is_a_registered_task(name):
    assert registered_task(name).name == name


def test_every_beat_entry_names_a_registered_task():
    names = [entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()]
    assert "scheduling.tasks.admission_tick_task" in names
    assert "telemetry.tasks.scrape_all_task" in names
    for name in names:
        assert registered_task(name).name == name


def test_an_unknown_task_name_fails_loudly():
    with pytest.raises(KeyError):
        registered_task("scheduling.tasks.no_such_task")


@pytest.mark.django_db
def test_enqueue_waits_for_the_commit(django_capture_on_commit_callbacks, monkeypatch):
    cycles, submits = [], []
    monkeypatch.setattr(
        registered_task(dispatch.ADMISSION_CYCLE_TASK), "delay", lambda *args: cycles.append(args)
    )
    monkeypatch.setattr(
        registered_task(dispatch.SUBMIT_JOBS_TASK),
        "apply_async",
        lambda args, countdown: submits.append((args, countdown)),
    )
    dispatch.admission_cycle_started(7)  # no request left over from another test
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        dispatch.enqueue_admission_cycle(7)
        dispatch.enqueue_submit_jobs([3, 4], countdown=30.0)
        assert cycles == [] and submits == []  # nothing is sent before the commit
    assert len(callbacks) == 2
    assert cycles == [(7,)]
    assert submits == [(([3, 4],), 30.0)]
    dispatch.admission_cycle_started(7)
