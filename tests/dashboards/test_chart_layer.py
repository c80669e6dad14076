"""The chart layer (console/dashboards/charts.py + the console_charts tags): specs carry the
values, units and times the pages pass, bad arguments are refused, and the tag emits the spec
through json_script next to its container (no inline script)."""

import json
from datetime import UTC, datetime, timedelta

import pytest
from django.template import engines
from django.test import RequestFactory

from console.dashboards.charts import Axis, Mark, Series, bar_chart, donut, pick_range, time_series

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
MS = 1772366400000  # T0 in epoch milliseconds


def test_time_series_spec_in_epoch_ms_with_units_and_marks():
    spec = time_series(
        "alloc",
        [
            Series("allocated", [(T0, 1.23456), (T0 + timedelta(minutes=5), None)]),
            Series("wait", [(T0, 60)], axis=1),
            Series("util", [(T0, 10, 30)], kind="range"),
        ],
        title="Allocation",
        axes=[Axis("devices"), Axis("s", name="wait")],
        start=T0 - timedelta(hours=6),
        end=T0,
        marks=[Mark(T0, "XID 79", "critical")],
        simulated=True,
    )
    assert spec["type"] == "time" and spec["simulated"] is True and spec["empty"] is False
    assert spec["series"][0] == {
        "name": "allocated",
        "kind": "line",
        "unit": "devices",
        "colour": "",
        "axis": 0,
        "stack": "",
        "data": [[MS, 1.2346], [MS + 300000, None]],
    }
    assert spec["series"][1]["unit"] == "s" and spec["series"][2]["data"] == [[MS, 10.0, 30.0]]
    assert spec["axes"] == [
        {"unit": "devices", "name": "devices", "min": 0.0, "max": None},
        {"unit": "s", "name": "wait", "min": 0.0, "max": None},
    ]
    assert spec["x"] == {"min": MS - 6 * 3600 * 1000, "max": MS}
    assert spec["marks"] == [{"time": MS, "label": "XID 79", "severity": "critical"}]
    json.dumps(spec)  # JSON-ready


def test_empty_time_series_still_has_axes():
    spec = time_series("t", [Series("x", [(T0, None)])], title="t")
    assert spec["empty"] is True and spec["axes"][0]["min"] == 0.0


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: time_series("Bad Id", [], title="t"), "chart id"),
        (lambda: time_series("t", [Series("x", [], kind="pie")], title="t"), "kind 'pie'"),
        (lambda: time_series("t", [Series("x", [], axis=1)], title="t"), "on axis 1"),
        (lambda: time_series("t", [], title="t", axes=[Axis()] * 3), "one or two axes"),
        (lambda: time_series("t", [Series("x", [(datetime(2026, 1, 1), 1)])], title="t"), "naive"),  # noqa: DTZ001 - the naive time is the case under test
        (lambda: time_series("t", [], title="t", marks=[Mark(T0, "m", "bad")]), "severity"),
        (
            lambda: bar_chart("b", ["a", "b"], [Series("x", [1], kind="bar")], title="b", unit="u"),
            "1 values for 2 categories",
        ),
        (
            lambda: bar_chart(
                "b", ["a"], [Series("x", [1], kind="bar")], title="b", unit="u", capacity=[1, 2]
            ),
            "2 capacities",
        ),
        (lambda: bar_chart("b", ["a"], [Series("x", [1])], title="b", unit="u"), "is not bar"),
    ],
)
def test_bad_arguments_are_refused(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_independent_bars_and_donut():
    spec = bar_chart(
        "per-model",
        ["A100", "MLU370"],
        [Series("allocated", [12.5, 0.25], kind="bar")],
        title="Allocated",
        unit="devices",
        capacity=[16, 8],
        independent=True,
    )
    assert (spec["scale"], spec["capacity"], spec["series"][0]["data"]) == (
        "independent",
        [16.0, 8.0],
        [12.5, 0.25],
    )
    assert spec["height"] == 40 + 2 * 62
    d = donut("jobs", [("queued", 3, "#d97706"), ("running", 5, "")], title="Jobs", unit="jobs")
    assert (d["total"], d["empty"], d["parts"][1]) == (
        8.0,
        False,
        {"name": "running", "value": 5.0, "colour": ""},
    )


def test_pick_range():
    assert [pick_range(v) for v in ("6h", "24h", "7d", "1y", None)] == [
        "6h",
        "24h",
        "7d",
        "6h",
        "6h",
    ]


def test_chart_tag_emits_json_script_and_badge():
    spec = time_series(
        "trend-a", [Series("x</script>", [(T0, 1)])], title="Trend <A>", simulated=True
    )
    html = (
        engines["django"]
        .from_string("{% load console_charts %}{% chart spec %}")
        .render({"spec": spec})
    )
    assert '<figure class="chart-box simulated" id="trend-a">' in html
    assert '<div class="chart-canvas" data-chart="trend-a-data"' in html
    assert '<script id="trend-a-data" type="application/json">' in html
    assert "Trend &lt;A&gt;" in html and "simulated data" in html
    assert "x</script>" not in html  # json_script escapes <, > and &
    payload = html.split('type="application/json">')[1].split("</script>")[0]
    assert json.loads(payload)["series"][0]["name"] == "x</script>"
    assert html.count("<script") == 1  # the data block only: no executable inline script


def test_range_switch_keeps_other_parameters():
    request = RequestFactory().get("/groups/g1/", {"range": "6h", "tab": "x", "fragment": "1"})
    html = (
        engines["django"]
        .from_string("{% load console_charts %}{% range_switch '24h' %}")
        .render({"request": request}, request)
    )
    assert 'href="?range=24h&amp;tab=x" class="active"' in html
    assert "fragment" not in html and ">7d</a>" in html


def test_time_axis_starts_at_the_first_sample_when_history_is_shorter_than_the_range():
    end = T0
    start = end - timedelta(hours=6)
    fresh = [(end - timedelta(minutes=4), 1), (end - timedelta(minutes=2), 2)]
    spec = time_series(
        "fresh",
        [Series("a", fresh), Series("b", [(end - timedelta(minutes=9), None)])],
        title="t",
        start=start,
        end=end,
    )
    assert spec["x"] == {"min": MS - 4 * 60_000, "max": MS}  # a gap (None) is no sample
    marked = time_series(
        "marked",
        [Series("a", fresh)],
        title="t",
        start=start,
        end=end,
        marks=[Mark(end - timedelta(minutes=30), "XID 79")],
    )
    assert marked["x"]["min"] == MS - 30 * 60_000  # a marked event stays in view
    full = time_series("full", [Series("a", [(start, 0), *fresh])], title="t", start=start, end=end)
    assert full["x"] == {"min": MS - 6 * 3600_000, "max": MS}
    empty = time_series("none", [Series("a", [])], title="t", start=start, end=end)
    assert empty["x"] == {"min": MS - 6 * 3600_000, "max": MS}


def test_a_donut_of_zeros_is_empty_with_its_text():
    zeros = donut("jobs", [("queued", 0, ""), ("running", 0, "")], title="Jobs", unit="jobs")
    assert (zeros["empty"], zeros["total"], zeros["empty_text"]) == (True, 0.0, "No jobs yet")
    named = donut("d", [("a", 0, "")], title="D", unit="jobs", empty_text="Nothing queued")
    assert named["empty_text"] == "Nothing queued"
