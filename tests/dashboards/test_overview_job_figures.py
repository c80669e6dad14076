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


def _single_chart_cards(html: str) -> list[tuple[str, str]]:
    """``(card heading, card html)`` of every card that holds exactly one chart."""
    cards = re.findall(r'<section class="card"[^>]*>(.*?)</section>', html, flags=re.S)
    return [
        (re.search(r"<h2>(.*?)</h2>", card, flags=re.S).group(1), card)
        for card in cards
        if card.count("<figure") == 1 and "<h2>" in card
    ]


def test_a_chart_alone_in_a_card_does_not_repeat_the_card_heading(client, world):
    client.force_login(world["root"])
    cards = _single_chart_cards(client.get("/?fragment=1").content.decode())
    headings = [re.sub(r"<[^>]+>.*", "", h).strip() for h, _ in cards]
    assert headings == [
        "Allocated vs capacity per device model",
        "Jobs by state",
        "Allocated vs capacity per resource group",
        "Top tenants by devices held now",
    ]
    for heading, card in cards:
        assert 'class="chart-title"' not in card, heading  # said once, by the heading
        assert re.search(r'role="img" aria-label="[^"]+"', card), heading  # still labelled
