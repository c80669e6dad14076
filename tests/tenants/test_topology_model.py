"""The Topology model's validation and level names (issue 31), and its admin."""

import pytest
from django.core.exceptions import ValidationError

from tenants.models import Topology

pytestmark = pytest.mark.django_db

LEVELS = [
    "topology.kubernetes.io/zone",
    "cloud.provider.com/topology-block",
    "cloud.provider.com/topology-rack",
    "kubernetes.io/hostname",
]


@pytest.mark.parametrize(
    ("levels", "message"),
    [
        ([], "A non-empty list of node-label keys, widest level first."),
        ("zone", "A non-empty list of node-label keys, widest level first."),
        (["zone", ""], "A non-empty list of node-label keys, widest level first."),
        (["zone", "my rack"], "A non-empty list of node-label keys, widest level first."),
        (["rack", "host", "rack"], "Levels must be distinct: rack."),
    ],
)
def test_levels_are_a_non_empty_list_of_distinct_keys(levels, message):
    with pytest.raises(ValidationError) as err:
        Topology(name="t", levels=levels).full_clean()
    assert message in err.value.message_dict["levels"]


def test_admin_lists_and_validates_topologies(client, django_user_model):
    root = django_user_model.objects.create_superuser("root", "r@example.org", "pw")
    client.force_login(root)
    Topology.objects.create(name="dc", levels=LEVELS)
    assert "dc" in client.get("/admin/tenants/topology/").content.decode()
    response = client.post(
        "/admin/tenants/topology/add/",
        {"name": "bad", "levels": '["rack", "rack"]', "description": ""},
    )
    assert response.status_code == 200
    assert "Levels must be distinct: rack." in response.content.decode()
    assert not Topology.objects.filter(name="bad").exists()
