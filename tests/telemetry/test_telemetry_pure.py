"""Pure telemetry logic (no Django): parsing, exporter tables, attribution, health, cost,
efficiency, simulation, charts. Values worked out by hand in the comments."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from telemetry import exporters as ex
from telemetry.attribution import BookingRef, DeviceRef, Inventory, attribute
from telemetry.charts import line_chart
from telemetry.cost import Price, UsageInterval, cost_report
from telemetry.efficiency import UsedSeries, idle_since, job_efficiency
from telemetry.exposition import parse_exposition
from telemetry.health import HealthState, clear_sticky, evaluate
from telemetry.synthetic import pod_values, profile_of
from tests.telemetry import payloads as P


def _obs(kind, text):
    parsed = parse_exposition(text)
    assert parsed.ok, parsed.first_error
    return ex.normalise(kind, parsed.samples)


def _by_metric(result):
    return {(o.metric, o.device_keys, o.pod_claim, o.mig): o for o in result.observations}


def test_hami_scheduler_new_and_legacy_names_give_the_same_observations():
    new = _obs("hami-scheduler", P.HAMI_SCHEDULER)
    legacy = _obs("hami-scheduler", P.HAMI_SCHEDULER_LEGACY)
    # memory limit and shared count are not used; QuotaUsed neither
    assert (new.ignored, legacy.ignored) == (2, 1)
    got = {(o.metric, o.value, o.node, o.pod_claim) for o in new.observations}
    # 2.147483648e10 bytes / 1048576 = 20480 MiB
    assert got == {
        ("alloc_memory_mib", 20480.0, "gpu-node-1", ""),
        ("alloc_cores_percent", 30.0, "gpu-node-1", ""),
        ("pod_alloc_memory_mib", 20480.0, "gpu-node-1", "team-a/POD_A"),
        ("pod_alloc_cores_percent", 30.0, "gpu-node-1", "team-a/POD_A"),
    }
    legacy_got = {(o.metric, o.value, o.node, o.pod_claim) for o in legacy.observations}
    assert legacy_got == got - {("pod_alloc_cores_percent", 30.0, "gpu-node-1", "team-a/POD_A")}
    assert all(o.device_keys == ("GPU-aaaa",) for o in new.observations + legacy.observations)


def test_hami_monitor_new_and_legacy_names():
    new = _obs("hami-monitor", P.HAMI_MONITOR)
    legacy = _obs("hami-monitor", P.HAMI_MONITOR_LEGACY)
    assert (new.ignored, legacy.ignored) == (2, 0)
    expect = {
        ("memory_used_mib", 15360.0, ""),  # 1.610612736e10 / 1048576
        ("util_percent", 27.0, ""),
        ("pod_memory_used_mib", 14336.0, "team-a/POD_A"),  # 1.5032385536e10 / 1048576
        ("pod_util_percent", 25.0, "team-a/POD_A"),
    }
    assert {(o.metric, o.value, o.pod_claim) for o in new.observations} == expect
    assert {(o.metric, o.value, o.pod_claim) for o in legacy.observations} == expect
    scopes = {o.metric: o.scope for o in new.observations}
    assert scopes["pod_util_percent"] == "pod" and scopes["util_percent"] == "device"


def test_dcgm_series_with_mig_instance_and_profiling_ratio():
    result = _obs("dcgm", P.DCGM)
    assert result.ignored == 1  # GR_ENGINE_ACTIVE of the non-MIG GPU 0
    obs = result.observations
    assert len(obs) == 11
    mig = [o for o in obs if o.mig]
    assert {(o.metric, o.value, o.pod_claim) for o in mig} == {
        ("memory_used_mib", 10240.0, ""),
        ("util_percent", 42.0, ""),
    }
    util0 = next(o for o in obs if o.metric == "util_percent" and o.device_keys == ("GPU-dddd-0",))
    assert (util0.value, util0.node, util0.index, util0.pod_claim) == (
        88.0,
        "dgx-1",
        "0",
        "team-a/POD_D0",
    )
    assert {o.value for o in obs if o.metric == "xid_last"} == {0.0, 79.0}


def test_ascend_series_have_no_node_label_and_key_on_vdie_id():
    result = _obs("ascend", P.ASCEND)
    assert result.ignored == 1  # machine_npu_nums
    assert len(result.observations) == 8
    assert all(o.node == "" for o in result.observations)
    health = {o.device_keys[0]: o.value for o in result.observations if o.metric == "health"}
    assert health == {"VDIE-910B4-0001": 1.0, "VDIE-910B4-0002": 0.0}
    code = [o for o in result.observations if o.metric == "error_code"]
    assert [(c.device_keys, c.value) for c in code] == [(("VDIE-910B4-0002",), 2350.0)]


def test_cambricon_drops_vf_series_and_offers_uuid_then_serial():
    result = _obs("cambricon", P.CAMBRICON)
    assert result.ignored == 2  # the vf="1" series and the mlu_container info series
    got = {o.metric: o.value for o in result.observations}
    assert got == {
        "util_percent": 71.0,
        "memory_used_mib": 20480.0,
        "memory_total_mib": 49152.0,
        "temperature_c": 58.0,
        "health": 1.0,
    }
    assert {o.device_keys for o in result.observations} == {("MLU-8a3c1f00", "SN-MLU-0001")}


def test_hygon_serials_distinguish_devices_with_the_same_minor_number():
    result = _obs("hygon", P.HYGON)
    assert result.ignored == 0 and len(result.observations) == 7
    util = {
        (o.device_keys[0], o.node, o.index): o.value
        for o in result.observations
        if o.metric == "util_percent"
    }
    assert util == {
        ("T8R1380013061601", "dcunode3", "0"): 44.0,
        ("T8R1380019021101", "dcunode4", "0"): 3.0,
    }
    cap = next(o for o in result.observations if o.metric == "memory_total_mib")
    assert cap.value == 32752.0  # 3.4342961152e10 / 1048576


def test_malformed_payload_keeps_the_good_lines_and_counts_the_bad():
    parsed = parse_exposition(P.MALFORMED)
    assert [(s.name, s.value) for s in parsed.samples] == [("DCGM_FI_DEV_GPU_UTIL", 55.0)]
    assert (parsed.rejected_lines, parsed.non_finite) == (3, 1)
    assert parsed.first_error.startswith("line 3:")
    assert not parsed.ok


def test_html_and_empty_payloads():
    html = parse_exposition(P.HTML_ERROR_PAGE)
    assert html.empty and html.rejected_lines == 1
    empty = parse_exposition("")
    assert empty.empty and empty.ok


def test_unknown_exporter_kind_is_an_error():
    with pytest.raises(ValueError, match="unknown exporter kind"):
        ex.normalise("gaudi", [])


def _inventory():
    devices = [
        DeviceRef(1, "GPU-A", "n1", 0),
        DeviceRef(2, "GPU-B", "n1", 1),
        DeviceRef(3, "GPU-C", "n2", 0),
    ]
    bookings = [
        BookingRef(11, 101, 1001, "pod-a", 1),
        BookingRef(12, 102, 1002, "pod-x", 2),
        BookingRef(13, 103, 1003, "pod-y", 2),
    ]
    return Inventory.build(devices, bookings)


def _o(metric, scope, keys=(), node="", index="", claim="", mig=""):
    return ex.Observation(metric, scope, 1.0, tuple(keys), node, index, claim, mig)


def test_attribution_follows_placements_not_exporter_pod_labels():
    obs = [
        _o("util_percent", "device", ["GPU-A"], "n1", claim="ns/WRONG"),  # sole holder wins
        _o("pod_util_percent", "pod", ["GPU-B"], claim="team/pod-y"),  # named holder
        _o("pod_memory_used_mib", "pod", ["GPU-B"], mig="1"),  # MIG instance nobody holds
        _o("util_percent", "device", ["GPU-B"]),  # shared device
        _o("pod_util_percent", "pod", ["GPU-C"], claim="ns/ghost"),  # idle device
        _o("util_percent", "device", ["GPU-ZZZ"]),  # not in inventory
        _o("util_percent", "device"),  # no labels at all
        _o("temperature_c", "device", (), "n1", "0"),  # node + index only
        _o("power_w", "device", ["GPU-A"], "n9"),  # moved / mislabelled
    ]
    result = attribute(obs, _inventory())
    got = [
        (s.status, s.reason, s.device_id, s.placement_id, s.job_id, s.tenant_id)
        for s in result.samples
    ]
    assert got == [
        ("attributed", "", 1, 11, 101, 1001),
        ("attributed", "", 2, 13, 103, 1003),
        ("unattributed", "mig_unmatched", 2, None, None, None),
        ("device", "", 2, None, None, None),
        ("unattributed", "no_placement", 3, None, None, None),
        ("unattributed", "unknown_device", None, None, None, None),
        ("unattributed", "no_device_label", None, None, None, None),
        ("attributed", "", 1, 11, 101, 1001),
        ("attributed", "", 1, 11, 101, 1001),
    ]
    assert result.conflicts == 2  # WRONG on GPU-A, ghost on GPU-C
    assert result.node_mismatches == 1
    assert dict(result.unattributed) == {
        "mig_unmatched": 1,
        "no_placement": 1,
        "unknown_device": 1,
        "no_device_label": 1,
    }
    assert result.attributed == 4 and result.unattributed_total == 4


def test_health_conditions_events_and_recovery():
    s0 = HealthState()
    s1, ev = evaluate(s0, {"temperature_c": 65, "xid_last": 13, "ecc_dbe_total": 2}, 90)
    assert s1.healthy and ev == []  # XID 13 is an application error; first ECC reading
    s2, ev = evaluate(s1, {"temperature_c": 91, "xid_last": 79, "ecc_dbe_total": 2}, 90)
    assert not s2.healthy
    assert [(e.kind, e.value) for e in ev] == [("temperature", 91), ("xid", 79)]
    s3, ev = evaluate(s2, {"temperature_c": 92, "xid_last": 79, "ecc_dbe_total": 2}, 90)
    assert ev == [] and not s3.healthy  # unchanged conditions write nothing
    s4, ev = evaluate(s3, {"temperature_c": 60, "xid_last": 0, "ecc_dbe_total": 2}, 90)
    assert s4.healthy and [e.kind for e in ev] == ["recovered"]
    s5, ev = evaluate(s4, {"ecc_dbe_total": 3}, 90)
    assert not s5.healthy and [(e.kind, e.value) for e in ev] == [("ecc", 3)]
    s6, ev = evaluate(s5, {"ecc_dbe_total": 3}, 90)
    assert not s6.healthy and ev == []  # sticky until cleared
    cleared = clear_sticky(s6)
    assert cleared.healthy and cleared.counters == {"ecc_dbe_total": 3}


def test_health_flag_and_error_code():
    s1, ev = evaluate(HealthState(), {"health": 0, "error_code": 2350}, 90)
    assert not s1.healthy
    assert [(e.kind, e.severity) for e in ev] == [
        ("unhealthy_flag", "critical"),
        ("error_code", "warning"),
    ]
    s2, ev = evaluate(s1, {"health": 1, "error_code": 2350}, 90)
    assert s2.healthy and [e.kind for e in ev] == ["recovered"]  # a code alone is a warning


T = datetime(2025, 3, 1, tzinfo=UTC)


def test_cost_report_matches_hand_computation():
    prices = [
        Price("A100", datetime(2025, 1, 1, tzinfo=UTC), Decimal("2.00")),
        Price("A100", datetime(2025, 3, 16, tzinfo=UTC), Decimal("2.50")),
    ]
    intervals = [
        # tenant 1: two whole devices, Mar 10 → Mar 20 = 240 h each
        UsageInterval(1, 10, 1, "A100", 1000, T + timedelta(days=9), T + timedelta(days=19)),
        UsageInterval(1, 10, 2, "A100", 1000, T + timedelta(days=9), T + timedelta(days=19)),
        # tenant 2: a quarter device from Feb 28 12:00 to Mar 1 12:00 (12 h in each month)
        UsageInterval(2, 20, 3, "A100", 250, T - timedelta(hours=12), T + timedelta(hours=12)),
        # tenant 2: half a T4 (no price) Mar 31 18:00 → Apr 1 06:00 (6 h in March)
        UsageInterval(
            2, 21, 4, "T4", 500, T + timedelta(days=30, hours=18), T + timedelta(days=31, hours=6)
        ),
    ]
    rows = cost_report(intervals, prices, T, datetime(2025, 4, 1, tzinfo=UTC))
    got = [(r.tenant_id, r.model, r.gpu_hours, r.cost, r.unpriced_hours, r.jobs) for r in rows]
    # per whole device: 144 h × 2.00 (to Mar 16) + 96 h × 2.50 = 288 + 240 = 528
    assert got == [
        (1, "A100", Decimal("480.0000"), Decimal("1056.00"), Decimal("0.0000"), 1),
        (2, "A100", Decimal("3.0000"), Decimal("6.00"), Decimal("0.0000"), 1),
        (2, "T4", Decimal("3.0000"), Decimal("0.00"), Decimal("3.0000"), 1),
    ]
    both = cost_report(intervals, prices, T - timedelta(days=28), datetime(2025, 4, 1, tzinfo=UTC))
    feb = [r for r in both if r.month.month == 2]
    assert [(r.tenant_id, r.gpu_hours, r.cost) for r in feb] == [
        (2, Decimal("3.0000"), Decimal("6.00"))
    ]


def test_efficiency_prefers_pod_series_and_ignores_unbooked_devices():
    eff = job_efficiency(
        [(1, 20480, 30), (2, 81920, 100)],
        [
            UsedSeries(1, "pod_util_percent", 24.0, 10),
            UsedSeries(1, "util_percent", 60.0, 10),
            UsedSeries(1, "pod_memory_used_mib", 10240.0, 10),
            UsedSeries(2, "util_percent", 50.0, 10),
            UsedSeries(9, "util_percent", 99.0, 10),
        ],
    )
    assert (eff.allocated_memory_mib, eff.allocated_cores_percent) == (102400, 130)
    assert eff.used_cores_percent == 74.0  # 24 (pod series on 1) + 50 (device 2)
    assert eff.used_memory_mib == 10240.0
    assert eff.cores_ratio == pytest.approx(74 / 130)
    assert eff.devices_with_data == 2


def test_idle_since_needs_the_whole_window_with_coverage():
    now = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
    minutes = [(now - timedelta(minutes=m), 1.0) for m in range(1, 41)]
    minutes.append((now - timedelta(minutes=41), 50.0))
    assert idle_since(minutes, now, threshold_percent=5, window=timedelta(minutes=30)) == (
        now - timedelta(minutes=40)
    )
    assert idle_since(minutes, now, threshold_percent=5, window=timedelta(minutes=45)) is None
    sparse = minutes[::4]  # a quarter of the minutes: not enough coverage
    assert idle_since(sparse, now, threshold_percent=5, window=timedelta(minutes=30)) is None


def test_simulated_load_is_deterministic_and_within_the_booking():
    for pid in range(1, 60):
        a = pod_values(pid, 20480, 30, 1234.0)
        assert a == pod_values(pid, 20480, 30, 1234.0)
        assert 0 <= a.util_percent <= 30 and 0 <= a.memory_used_mib <= 20480
    idle = [p for p in range(1, 200) if profile_of(p) == "idle"]
    assert idle and all(pod_values(p, 1000, 100, 900).util_percent < 5 for p in idle)


def test_line_chart_scales_points():
    class Pt:
        def __init__(self, minute, mean, lo, hi):
            self.time = T + timedelta(minutes=minute)
            self.mean, self.minimum, self.maximum = mean, lo, hi

    chart = line_chart(
        [Pt(0, 0, 0, 0), Pt(10, 50, 40, 100)], unit="%", y_max=100, width=102, height=52
    )
    assert chart.points == "1.0,51.0 101.0,26.0"
    assert chart.last == 50 and chart.y_max_label == "100%"
    assert line_chart([]).points == ""


def test_mig_series_join_on_uuid_and_gpu_instance_never_on_the_whole_device_holder():
    devices = [DeviceRef(1, "GPU-WHOLE", "n1", 0), DeviceRef(2, "GPU-MIG", "n1", 1)]
    bookings = [
        BookingRef(11, 101, 1001, "whole-0", 1),  # GPU-WHOLE held whole by one job
        BookingRef(12, 102, 1002, "mig-a-0", 2, ("7",)),
        BookingRef(13, 103, 1003, "mig-b-0", 2, ("9",)),
    ]
    inv = Inventory.build(devices, bookings)
    obs = [
        _o("util_percent", "device", ["GPU-WHOLE"], mig="3"),  # an instance nobody booked
        _o("util_percent", "device", ["GPU-WHOLE"]),  # the GPU itself: its holder
        _o("util_percent", "device", ["GPU-MIG"], mig="9"),  # (uuid, GI 9) -> mig-b
        _o("util_percent", "device", ["GPU-MIG"], mig="5"),  # no booking holds GI 5
        _o("pod_util_percent", "pod", ["GPU-MIG"], claim="ns/mig-a-0", mig="9"),  # label lies
        _o("util_percent", "device", ["GPU-MIG"]),  # the MIG GPU itself: shared
    ]
    result = attribute(obs, inv)
    got = [(s.status, s.reason, s.device_id, s.tenant_id) for s in result.samples]
    assert got == [
        ("unattributed", "mig_unmatched", 1, None),
        ("attributed", "", 1, 1001),
        ("attributed", "", 2, 1003),
        ("unattributed", "mig_unmatched", 2, None),
        ("attributed", "", 2, 1003),
        ("device", "", 2, None),
    ]
    assert dict(result.unattributed) == {"mig_unmatched": 2}
    assert result.conflicts == 1  # mig-a-0 claims GI 9, which mig-b-0 holds


def test_mig_label_prefers_the_gpu_instance_id_over_the_mig_uuid():
    sample = ex.RawSample(
        "DCGM_FI_DEV_FB_USED",
        {"UUID": "GPU-X", "mig_uuid": "MIG-1234", "gpu_instance_id": "4"},
        1024.0,
    )
    (obs,) = ex.normalise("dcgm", [sample]).observations
    assert obs.mig == "4"
