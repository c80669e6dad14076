"""The job page of a queued job whose group has consolidation on says what consolidation
would move for it, before anything moves (issue 31); another tenant's jobs only counted."""

import pytest

from scheduling.models import ConsolidationMove, JobEvent
from scheduling.selectors.placement_profile import forget_workloads
from tests.api.test_api_consolidation_plan import _counts, _fragmented
from tests.builders import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_workloads():
    forget_workloads()
    yield
    forget_workloads()


def _line(client, job) -> str | None:
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    if 'id="consolidation-preview"' not in page:
        return None
    start = page.index(">", page.index('id="consolidation-preview"')) + 1
    return page[start : page.index("</p>", start)]


def test_the_page_names_the_move_and_writes_nothing(client):
    _, tenants, halves, wholes = _fragmented("team-a", "team-a")
    client.force_login(make_user("alice", tenants["team-a"]))
    before = _counts()

    line = _line(client, wholes[2])

    assert _counts() == before
    assert line in {
        f"Consolidation would move: job {h.name} (c1-n0 -&gt; c1-n0) to make room" for h in halves
    }
    assert (ConsolidationMove.objects.count(), JobEvent.objects.filter(kind="moved").count()) == (
        0,
        0,
    )


def test_another_tenants_job_is_a_count(client):
    _, tenants, halves, wholes = _fragmented("team-b", "team-a")
    client.force_login(make_user("alice", tenants["team-a"]))

    assert (
        _line(client, wholes[2]) == "Consolidation would move: 1 job of other tenants to make room"
    )


def test_no_line_when_consolidation_is_off_or_the_job_runs(client):
    group, tenants, halves, wholes = _fragmented("team-a", "team-a")
    client.force_login(make_user("alice", tenants["team-a"]))
    assert _line(client, halves[0]) is None  # admitted
    assert _line(client, wholes[0]).startswith("Consolidation would move nothing: ")
    group.consolidation_enabled = False
    group.save()
    assert _line(client, wholes[2]) is None
