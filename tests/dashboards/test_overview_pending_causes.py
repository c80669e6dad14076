"""The overview's "Why jobs are pending" (issue 30): pending jobs grouped by the kind and
resource of their first cause, the first cause headlined with its unit, the rest folded."""

import pytest
from django.contrib.auth import get_user_model

from scheduling.services.cycle import run_admission_cycle
from tests.builders import A100, gpu_job, make_cluster, make_group, make_tenant

pytestmark = pytest.mark.django_db

WHOLE = {"memory_percent": 100, "cores": 100}


def _rows(html):
    """The group rows of the "Why jobs are pending" table, in order."""
    table = html.split('id="pending-causes"', 1)[1].split("</table>", 1)[0]
    return table.split('<tr class="pending-group">')[1:]


def test_pending_jobs_grouped_by_cause_with_headline_and_folded_tail(client):
    make_cluster("c1", nodes=2, gpus=2)
    make_cluster("c2", nodes=1, gpus=2)  # room on a node, none in quota
    group = make_group("g1")
    _, qa = make_tenant("team-a", group, devices_milli=2000, flavor=A100)
    _, qb = make_tenant("team-b", group, devices_milli=2000, flavor=A100)
    for i in range(2):
        gpu_job(qa, f"a{i}", count=1, **WHOLE)
        gpu_job(qb, f"b{i}", count=1, **WHOLE)
    assert len(run_admission_cycle(group.pk).admitted) == 4
    for i in range(3):  # 3 jobs short of quota, each with a preemption tail
        gpu_job(qa, f"a-two-{i}", count=2, **WHOLE)
    gpu_job(qb, "b-four", count=4)  # 4 devices in one pod: no node has them
    run_admission_cycle(group.pk)
    root = get_user_model().objects.create_superuser("root", "root@example.org", "pw")
    client.force_login(root)
    response = client.get("/?fragment=1")
    groups = response.context["pending_groups"]
    assert [(g.kind, g.resource, g.jobs) for g in groups] == [
        ("quota", f"{A100}/devices", 3),
        ("capacity", None, 1),
    ]
    quota_row, capacity_row = _rows(response.content.decode())
    # the headline in devices, not "needs 2000, free 0"
    assert (
        '<span class="headline">needs 2 devices, 0 free (bounded by cohort g1)</span>' in quota_row
    )
    assert "needs 2000" not in quota_row
    # the preemption tail folded, one item per cause after the first
    tail = groups[0].causes[1:]
    assert tail and {c["kind"] for c in tail} == {"preemption"}
    summary = f"<summary>{len(tail)} more cause{'s' if len(tail) > 1 else ''}</summary>"
    assert '<details class="cause-tail">' in quota_row and summary in quota_row
    assert quota_row.count("<li>") == len(tail)
    assert "preemption: " in quota_row.split("<details", 1)[1]
    assert "preemption: " not in quota_row.split("<details", 1)[0]
    # a single cause: headlined, nothing to fold
    assert "unschedulable: 0/3 nodes fit" in capacity_row and "<details" not in capacity_row
    assert '<td class="num">1</td>' in capacity_row
