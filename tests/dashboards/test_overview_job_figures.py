"""The overview's job figures say what they count: ``admitted`` is the jobs admitted but not
running yet (devices reserved, pods starting), beside ``running`` and ``queued`` (issue 30)."""

import re

import pytest

from scheduling.models import Job

pytestmark = pytest.mark.django_db


def _kpis(html: str) -> dict[str, tuple[str, str]]:
    """``{state: (value, label)}`` of the job KPIs of the overview."""
    found = re.findall(
        r'<span class="value" id="jobs-(\w+)">([^<]*)</span><span class="label">([^<]*)</span>',
        html,
    )
    return {state: (value, label) for state, value, label in found}


def test_job_figures_are_labelled_with_what_they_count(client, world):
    Job.objects.filter(pk=world["a_train"].pk).update(state="admitted")  # pods starting
    client.force_login(world["root"])
    kpis = _kpis(client.get("/?fragment=1").content.decode())
    states = dict(Job.objects.values_list("name", "state"))
    assert states == {"a-train": "admitted", "b-secret": "running", "a-wait": "queued"}
    assert kpis == {
        "queued": ("1", "queued jobs, waiting for admission (all tenants)"),
        "admitted": (
            "1",
            "admitted jobs not running yet: devices reserved, pods starting (all tenants)",
        ),
        "running": ("1", "running jobs (all tenants)"),
    }
    assert list(kpis) == ["queued", "admitted", "running"]
