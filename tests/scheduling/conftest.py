"""Fixtures shared by the admission tests (database)."""

import pytest


@pytest.fixture
def cohort(db):
    """4 A100s (2 nodes x 2); team-a and team-b each have 2 whole devices nominal.

    Returns:
        ``(group, (team_a, queue_a), (team_b, queue_b))``.
    """
    from tests.builders import A100, make_cluster, make_group, make_tenant

    make_cluster("c1", nodes=2, gpus=2)
    group = make_group("g1")
    a, qa = make_tenant("team-a", group, devices_milli=2000, flavor=A100)
    b, qb = make_tenant("team-b", group, devices_milli=2000, flavor=A100)
    return group, (a, qa), (b, qb)
