"""Start estimate of a gang under a required topology (issue 31): it starts when one domain
has room, not when the group's device count does."""

from datetime import UTC, datetime, timedelta

import pytest

from scheduling.admission.eta import StartRange, estimate_start_range
from scheduling.admission.eta_domains import DomainPool, domain_start, narrow_to_domain
from scheduling.admission.types import AdmissionInputError

NOW = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)


def at(s):
    return NOW + timedelta(seconds=s)


# rack-0: 4 GPUs, jobs of 2 (ends at 600 s) and 1 (1800 s); rack-1: 4 GPUs, a job of 2 (1200 s)
RACKS = [
    DomainPool("z/b/rack-0", 4, ((at(600), 2), (at(1800), 1))),
    DomainPool("z/b/rack-1", 4, ((at(1200), 2),)),
]


def test_a_gang_starts_when_one_rack_frees_its_devices_not_the_group():
    running = [r for pool in RACKS for r in pool.running]
    group = estimate_start_range(NOW, 8, running, [], 4)
    assert group.earliest == at(600)  # by device count: 3 free + 2 at 600 s
    assert domain_start(NOW, RACKS, 4) == (at(1200), "z/b/rack-1")
    assert narrow_to_domain(group, at(1200)) == StartRange(at(1200), max(group.latest, at(1200)))


def test_a_rack_with_room_now_starts_now_and_ties_go_to_the_first_rack():
    assert domain_start(NOW, RACKS, 1) == (NOW, "z/b/rack-0")
    assert domain_start(NOW, RACKS, 2) == (NOW, "z/b/rack-1")
    assert domain_start(NOW, RACKS, 3) == (at(600), "z/b/rack-0")


def test_overdue_jobs_release_now_and_a_gang_larger_than_every_rack_never_starts():
    late = [DomainPool("r", 4, ((at(-50), 4),))]
    assert domain_start(NOW, late, 4) == (NOW, "r")
    assert domain_start(NOW, RACKS, 5) is None
    assert narrow_to_domain(StartRange(NOW, at(10)), None) is None
    assert narrow_to_domain(None, NOW) is None
    assert narrow_to_domain(StartRange(at(2000), at(3000)), at(1200)) == StartRange(
        at(2000), at(3000)
    )


def test_bad_input_is_refused():
    with pytest.raises(AdmissionInputError):
        domain_start(NOW, RACKS, -1)
    with pytest.raises(AdmissionInputError):
        domain_start(NOW.replace(tzinfo=None), RACKS, 1)
    with pytest.raises(AdmissionInputError):
        domain_start(NOW, [DomainPool("r", -1)], 0)
