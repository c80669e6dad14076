"""Issue 30 in a real browser: the submit form's vendor and model selects follow the chosen
queue's resource group (static/console/job_form.js, under the page's CSP)."""

import pytest

from scheduling.models import Queue
from tests.browser.conftest import login
from tests.builders import make_cluster, make_group
from tests.console_world import build_world

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ASCEND = "Ascend910B4"
A100 = "NVIDIA-A100-SXM4-80GB"


def _values(page, name: str) -> list[str]:
    return page.eval_on_selector_all(
        f"select[name={name}] option", "options => options.map(o => o.value)"
    )


def test_submit_form_offers_only_the_chosen_queues_models(chromium, live_server):
    world = build_world()
    make_cluster("npu", nodes=1, gpus=2, model=ASCEND, vendor="Ascend", memory_mib=32768)
    Queue.objects.create(
        tenant=world["team_a"], resource_group=make_group("g-npu", models=(ASCEND,)), name="a-npu"
    )
    page = login(chromium, live_server.url, "alice", "pw-alice")
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(f"{live_server.url}/jobs/new/")
    assert page.input_value("select[name=queue]") == str(Queue.objects.get(name="a-npu").pk)
    assert _values(page, "vendor") == ["Ascend"]
    assert _values(page, "device_type") == ["", ASCEND]

    page.select_option("select[name=queue]", label="team-a / default (group g1)")
    assert _values(page, "vendor") == ["NVIDIA"]
    assert page.input_value("select[name=vendor]") == "NVIDIA"
    assert _values(page, "device_type") == ["", A100]

    page.select_option("select[name=queue]", label="team-a / a-npu (group g-npu)")
    assert _values(page, "device_type") == ["", ASCEND]
    page.select_option("select[name=device_type]", ASCEND)
    assert page.input_value("select[name=vendor]") == "Ascend"
    assert errors == []
    page.context.close()
