import pytest


@pytest.fixture
def world(db):
    from tests.console_world import build_world

    return build_world()
