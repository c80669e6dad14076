"""The resource group page shows whether consolidation is on and the move budget used."""

from datetime import timedelta

from django.utils import timezone

from scheduling.models import ConsolidationMove, Job


def _moved(world, when):
    ConsolidationMove.objects.create(
        job=Job.objects.filter(queue__resource_group=world["group"]).first(),
        resource_group=world["group"],
        job_tenant="team-a",
        for_tenant="team-a",
        source="n0 (g0)",
        target="n1 (g1)",
        time=when,
    )


def _line(client, world):
    page = client.get(f"/groups/{world['group'].pk}/").content.decode()
    start = page.index('id="consolidation"')
    return page[start : page.index("</p>", start)]


def test_group_page_shows_the_budget_used_in_the_last_hour(client, world):
    client.force_login(world["root"])
    assert _line(client, world).endswith(">Consolidation off.")
    group = world["group"]
    group.consolidation_enabled, group.consolidation_max_moves_per_hour = True, 5
    group.save()
    now = timezone.now()
    _moved(world, now - timedelta(minutes=10))
    _moved(world, now - timedelta(minutes=59))
    _moved(world, now - timedelta(hours=3))
    assert _line(client, world).endswith(
        ">Consolidation on: <strong>2</strong> of 5 moves used in the last hour "
        "(at most 2 per waiting job)."
    )
