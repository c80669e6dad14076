"""Pending verdicts carry their causes as structure (issue 30): one per text line, the text
rendered from them, amounts shown in devices (not milli-devices) and MiB."""

from scheduling.admission import CauseKind, Dimension, PendingCode, run_cycle
from scheduling.admission.fake import PodShape
from tests.admission.admission_builders import MEM, World, a100s, quota


def _verdict(result, workload_id):
    (verdict,) = [v for v in result.pending if v.workload_id == workload_id]
    assert [c.text for c in verdict.causes] == [verdict.reason, *verdict.details]
    return verdict


def test_quota_beyond_the_borrowing_limit_gives_needed_devices_and_no_free_amount():
    w = World(a100s(3), quotas=(quota("team-a", 4000, borrowing_limit=1000), quota("team-b", 4000)))
    w.submit("a1", "team-a", pods=6)
    verdict = _verdict(run_cycle(w.snapshot(), w.placer), "a1")
    assert verdict.code == PendingCode.EXCEEDS_MAX_QUOTA
    (cause,) = verdict.causes
    assert (cause.kind, cause.dimension, cause.flavor, cause.needed, cause.free) == (
        CauseKind.QUOTA,
        Dimension.DEVICES,
        "a100",
        6000,
        None,
    )
    assert cause.as_dict() == {
        "kind": "quota",
        "resource": "a100/devices",
        "needed": 6,
        "free": None,
        "borrowable": None,
        "unit": "devices",
        "rule": "max 5000 (nominal 4000; bounded by borrowing limit of tenant team-a)",
    }


def test_memory_quota_cause_in_mib_with_free_and_borrowable():
    w = World(
        a100s(2), quotas=(quota("team-a", 172032, MEM, borrowing_limit=0), quota("team-b", 0, MEM))
    )
    w.run("a0", "team-a", pods=2)
    w.submit("a1", "team-a", PodShape(memory_percent=50, cores_percent=30))
    verdict = _verdict(run_cycle(w.snapshot(), w.placer), "a1")
    assert verdict.causes[0].as_dict() == {
        "kind": "quota",
        "resource": "a100/memory_mib",
        "needed": 40960,
        "free": 8192,
        "borrowable": 0,
        "unit": "MiB",
        "rule": "bounded by borrowing limit of tenant team-a",
    }
    assert verdict.reason == (
        "tenant team-a, group a100-shared, flavor a100, memory_mib: needs 40960, free 8192, "
        "borrowable 0 (bounded by borrowing limit of tenant team-a)"
    )


def test_half_a_device_is_shown_as_a_fraction():
    w = World(a100s(1), quotas=(quota("team-a", 500, borrowing_limit=0), quota("team-b", 0)))
    w.run("a0", "team-a", PodShape(memory_percent=50, cores_percent=50))
    w.submit("a1", "team-a", PodShape(memory_percent=50, cores_percent=50))
    verdict = _verdict(run_cycle(w.snapshot(), w.placer), "a1")
    first = verdict.causes[0].as_dict()
    assert (first["needed"], first["free"], first["unit"]) == (0.5, 0, "devices")
