/*
 * The console's chart layer: draws every chart spec of a page with the vendored Apache ECharts
 * (static/vendor/echarts/, loaded before this file by base.html).
 *
 * HOW A PAGE GETS A CHART (no inline <script>: a strict Content-Security-Policy holds)
 *   view:      spec = time_series("my-chart", [Series(...)], title=..., axes=[Axis("devices")])
 *              (console/dashboards/charts.py: time_series, bar_chart, donut; Axis, Series, Mark)
 *   template:  {% load console_charts %}{% chart spec %}
 *              -> <figure id="my-chart"> caption [+ "simulated data" badge]
 *                 <div class="chart-canvas" data-chart="my-chart-data"></div>
 *                 <script type="application/json" id="my-chart-data">{spec}</script>
 *   this file: on load, every [data-chart] container is drawn from the JSON its attribute names.
 *              Content inserted later (e.g. live refresh): window.ConsoleCharts.renderAll(root).
 *
 * SPEC (version 1; built by charts.py, documented there)
 *   common:  id, type ("time" | "bars" | "donut"), title, height (px), simulated, note, empty
 *   time:    axes [{unit, name, min, max}] (1 or 2: left, right), x {min, max} (epoch ms),
 *            series [{name, kind: line|area|step|dashed|range, unit, colour, axis, stack,
 *                     data: [[ms, value|null]] or, for range, [[ms, low, high]]}],
 *            marks [{time (ms), label, severity: info|warning|critical}] (vertical lines)
 *   bars:    unit, categories [..], scale "shared" | "independent" (one small chart per
 *            category with its own axis), capacity [..] | null (light bar behind; the axis end
 *            of an independent row), series [{name, kind: "bar", unit, colour, stack, data}]
 *   donut:   unit, parts [{name, value, colour}], total, empty_text (drawn alone when empty)
 *
 * WHAT IS DRAWN: SVG renderer (axis labels are <text> nodes), UTC time axis, value axes with
 * their unit as axis name (a "%" unit is printed on the ticks), legend when more than one
 * series, tooltips (built as DOM nodes, no HTML strings), a "No data in this range" text over
 * empty axes. Charts follow their container's width (ResizeObserver).
 *
 * API: window.ConsoleCharts = { renderAll(root?), render(container), disposeAll(root?) }.
 */
(function () {
  "use strict";

  var PALETTE = ["#2563eb", "#16a34a", "#d97706", "#9333ea", "#0891b2", "#db2777", "#65a30d",
                 "#dc2626", "#4f46e5", "#0d9488"];
  var SEVERITY = { info: "#0891b2", warning: "#d97706", critical: "#dc2626" };
  var MUTED = "#667085", LINE = "#e4e7ec", FG = "#1d2330";
  var drawn = [];  // [{el, chart, observer, spec}]

  function fmt(value) {
    if (value === null || value === undefined || isNaN(value)) return "—";
    var a = Math.abs(value);
    var digits = a >= 100 ? 0 : a >= 10 ? 1 : 2;
    return Number(value).toLocaleString("en-US", { maximumFractionDigits: digits });
  }

  function withUnit(value, unit) {
    if (!unit) return fmt(value);
    return fmt(value) + (unit.charAt(0) === " " || unit === "%" ? unit : " " + unit);
  }

  function tickLabel(unit) {
    var percent = unit && unit.trim() === "%";
    return function (value) { return fmt(value) + (percent ? " %" : ""); };
  }

  function colourOf(series, index) {
    return series.colour || PALETTE[index % PALETTE.length];
  }

  // Tooltip content as DOM nodes (textContent only: names are never parsed as HTML).
  function tooltipBox(heading, rows) {
    var box = document.createElement("div");
    box.className = "chart-tip";
    var head = document.createElement("div");
    head.className = "chart-tip-head";
    head.textContent = heading;
    box.appendChild(head);
    rows.forEach(function (row) {
      var line = document.createElement("div");
      var dot = document.createElement("span");
      dot.className = "chart-tip-dot";
      dot.style.backgroundColor = row.colour;
      var name = document.createElement("span");
      name.textContent = row.name + ": ";
      var value = document.createElement("strong");
      value.textContent = row.value;
      line.appendChild(dot);
      line.appendChild(name);
      line.appendChild(value);
      box.appendChild(line);
    });
    return box;
  }

  function utc(ms) {
    return echarts.time.format(ms, "{yyyy}-{MM}-{dd} {HH}:{mm} UTC", true);
  }

  function emptyText(spec) {
    if (!spec.empty) return [];
    return [{ type: "text", left: "center", top: "middle", silent: true,
              style: { text: spec.empty_text || "No data in this range", fill: MUTED, fontSize: 13 } }];
  }

  // --- time charts ------------------------------------------------------------------------
  function timeOption(spec) {
    var meta = [];  // per ECharts series: the spec series it shows (null for helpers)
    var out = [];
    spec.series.forEach(function (s, i) {
      var colour = colourOf(s, i);
      // A series of one or two values has no line to see: show its points.
      var values = s.data.filter(function (p) { return p[1] !== null; }).length;
      var base = { name: s.name, type: "line", yAxisIndex: s.axis, showSymbol: values < 3,
                   connectNulls: false, emphasis: { disabled: true },
                   itemStyle: { color: colour }, lineStyle: { color: colour, width: 2 } };
      if (s.stack) base.stack = s.stack;
      if (s.kind === "range") {
        // A band: an invisible lower line plus the (high - low) area stacked on it.
        var key = "__range" + i;
        out.push(Object.assign({}, base, { name: s.name, stack: key, lineStyle: { opacity: 0 },
          data: s.data.map(function (p) { return [p[0], p[1]]; }) }));
        meta.push(null);
        out.push(Object.assign({}, base, { stack: key, lineStyle: { opacity: 0 },
          areaStyle: { color: colour, opacity: 0.18 },
          data: s.data.map(function (p) {
            return [p[0], p[1] === null || p[2] === null ? null : p[2] - p[1]];
          }) }));
        meta.push(s);
        return;
      }
      if (s.kind === "area") base.areaStyle = { color: colour, opacity: 0.15 };
      if (s.kind === "step") base.step = "end";
      if (s.kind === "dashed") {
        base.step = "end";
        base.lineStyle = { color: colour, width: 1.5, type: "dashed" };
      }
      base.data = s.data;
      out.push(base);
      meta.push(s);
    });
    if (spec.marks.length) {
      out.push({ name: "events", type: "line", data: [], yAxisIndex: 0, silent: false,
        itemStyle: { color: SEVERITY.warning },
        markLine: { symbol: ["none", "none"], animation: false,
          label: { show: true, position: "insideEndTop", fontSize: 10, color: FG,
                   formatter: function (p) { return p.name; } },
          tooltip: { trigger: "item", formatter: function (p) {
            return tooltipBox(utc(p.value), [{ name: "event", value: p.name,
                                               colour: p.color || SEVERITY.warning }]);
          } },
          data: spec.marks.map(function (m) {
            return { name: m.label, xAxis: m.time,
                     lineStyle: { color: SEVERITY[m.severity], type: "dashed", width: 1.5 } };
          }) } });
      meta.push(null);
    }
    var named = spec.series.length > 1 || spec.marks.length > 0;
    return {
      useUTC: true, animation: false, textStyle: { color: FG },
      legend: named ? { top: 0, left: 0, type: "scroll", itemHeight: 8,
                        data: spec.series.map(function (s) { return s.name; })
                          .concat(spec.marks.length ? ["events"] : []) } : undefined,
      grid: { left: 12, right: spec.axes.length > 1 ? 12 : 20, top: named ? 56 : 28, bottom: 22 },
      tooltip: { trigger: "axis", confine: true, formatter: function (params) {
        var list = Array.isArray(params) ? params : [params];
        if (!list.length) return "";
        var rows = [];
        list.forEach(function (p) {
          var s = meta[p.seriesIndex];
          if (!s) return;
          var point = s.data[p.dataIndex] || [];
          var value = s.kind === "range" ? withUnit(point[1], s.unit) + " – " +
            withUnit(point[2], s.unit) : withUnit(point[1], s.unit);
          rows.push({ name: s.name, value: value, colour: p.color });
        });
        return tooltipBox(utc(list[0].axisValue), rows);
      } },
      xAxis: { type: "time", min: spec.x.min === null ? undefined : spec.x.min,
               max: spec.x.max === null ? undefined : spec.x.max,
               axisLabel: { hideOverlap: true, color: MUTED }, axisLine: { lineStyle: { color: LINE } },
               splitLine: { show: false } },
      yAxis: spec.axes.map(function (a, i) {
        return { type: "value", name: a.name, nameTextStyle: { color: MUTED, align: i ? "right" : "left" },
                 min: a.min === null ? undefined : a.min, max: a.max === null ? undefined : a.max,
                 position: i ? "right" : "left", axisLabel: { formatter: tickLabel(a.unit), color: MUTED },
                 splitLine: { show: i === 0, lineStyle: { color: LINE } } };
      }),
      series: out,
      graphic: emptyText(spec),
    };
  }

  // --- bar charts --------------------------------------------------------------------------
  function barTotals(spec, index) {
    return spec.series.map(function (s) { return withUnit(s.data[index], ""); }).join(" / ");
  }

  function sharedBarOption(spec) {
    var cap = spec.capacity;
    var series = [];
    if (cap) {
      series.push({ name: "capacity", type: "bar", data: cap, silent: true, barGap: "-100%",
                    barWidth: 14, itemStyle: { color: "#eef2f6", borderColor: "#cbd5e1" }, z: 1 });
    }
    // Several series without a stack are grouped side by side, each labelled with its value;
    // otherwise the bars overlay the capacity bar (and stack), labelled with the row total.
    var grouped = !cap && spec.series.length > 1 &&
      spec.series.every(function (s) { return !s.stack; });
    spec.series.forEach(function (s, i) {
      var last = i === spec.series.length - 1;
      if (grouped) {
        series.push({ name: s.name, type: "bar", data: s.data, barGap: "15%", barMaxWidth: 12,
          itemStyle: { color: colourOf(s, i) },
          label: { show: true, position: "right", color: MUTED, fontSize: 11,
                   formatter: function (p) { return withUnit(p.value, s.unit); } } });
        return;
      }
      series.push({ name: s.name, type: "bar", data: s.data, stack: s.stack || undefined,
        barGap: "-100%", barWidth: 14, itemStyle: { color: colourOf(s, i) }, z: 2 + i,
        label: last ? { show: true, position: "right", color: MUTED, fontSize: 11,
          formatter: function (p) {
            var total = 0;
            spec.series.forEach(function (t) { total += t.data[p.dataIndex] || 0; });
            return withUnit(total, "") + (cap ? " / " + withUnit(cap[p.dataIndex], "") : "") +
              " " + spec.unit;
          } } : undefined });
    });
    var named = spec.series.length > 1 || cap;
    return {
      animation: false, textStyle: { color: FG },
      legend: named ? { top: 0, left: 0, type: "scroll", itemHeight: 8 } : undefined,
      grid: { left: 12, right: 120, top: named ? 40 : 12, bottom: 8 },
      tooltip: { trigger: "axis", axisPointer: { type: "shadow" }, confine: true,
        formatter: function (params) {
          var i = params[0].dataIndex;
          var rows = spec.series.map(function (s, k) {
            return { name: s.name, value: withUnit(s.data[i], s.unit), colour: colourOf(s, k) };
          });
          if (cap) rows.push({ name: "capacity", value: withUnit(cap[i], spec.unit), colour: "#cbd5e1" });
          return tooltipBox(spec.categories[i], rows);
        } },
      xAxis: { type: "value", name: spec.unit, nameTextStyle: { color: MUTED },
               axisLabel: { color: MUTED, hideOverlap: true }, splitLine: { lineStyle: { color: LINE } } },
      yAxis: { type: "category", data: spec.categories, inverse: true,
               axisLabel: { color: FG, width: 160, overflow: "truncate", interval: 0 } },
      series: series,
      graphic: emptyText(spec),
    };
  }

  function independentBarOption(spec, width) {
    var named = spec.series.length > 1;
    var top0 = named ? 28 : 4;
    var rowPx = 62;
    var opt = { animation: false, textStyle: { color: FG }, title: [], grid: [], xAxis: [],
                yAxis: [], series: [], graphic: emptyText(spec),
                legend: named ? { top: 0, left: 0, type: "scroll", itemHeight: 8,
                                  data: spec.series.map(function (s) { return s.name; }) } : undefined,
                tooltip: { trigger: "item", confine: true, formatter: function (p) {
                  var i = p.seriesIndex === undefined ? 0 : opt.series[p.seriesIndex].__row;
                  var rows = spec.series.map(function (s, k) {
                    return { name: s.name, value: withUnit(s.data[i], s.unit), colour: colourOf(s, k) };
                  });
                  if (spec.capacity) rows.push({ name: "capacity", colour: "#cbd5e1",
                                                 value: withUnit(spec.capacity[i], spec.unit) });
                  return tooltipBox(spec.categories[i], rows);
                } } };
    spec.categories.forEach(function (cat, i) {
      var y = top0 + i * rowPx;
      var cap = spec.capacity ? spec.capacity[i] : null;
      var biggest = 0;
      spec.series.forEach(function (s) { biggest = Math.max(biggest, s.data[i] || 0); });
      var end = cap || biggest || 1;
      var text = cat + ": " + barTotals(spec, i) + (cap ? " / " + withUnit(cap, "") : "") +
        " " + spec.unit + (cap ? " (" + fmt(100 * biggest / cap) + " %)" : "");
      opt.title.push({ text: text, top: y, left: 4, textStyle: { fontSize: 12, fontWeight: "normal",
                       color: FG, width: Math.max(120, width - 16), overflow: "truncate" } });
      opt.grid.push({ left: 12, right: 24, top: y + 20, height: 14, outerBoundsMode: "none" });
      opt.xAxis.push({ type: "value", gridIndex: i, min: 0, max: end, interval: end / 4,
                       axisLabel: { fontSize: 10, color: MUTED, hideOverlap: true },
                       splitLine: { show: false }, axisLine: { show: true, lineStyle: { color: LINE } } });
      opt.yAxis.push({ type: "category", gridIndex: i, data: [cat], axisLabel: { show: false },
                       axisTick: { show: false }, axisLine: { show: false } });
      if (cap) {
        opt.series.push({ type: "bar", name: "capacity", xAxisIndex: i, yAxisIndex: i, data: [cap],
                          barWidth: 14, barGap: "-100%", silent: true, z: 1, __row: i,
                          itemStyle: { color: "#eef2f6", borderColor: "#cbd5e1" } });
      }
      spec.series.forEach(function (s, k) {
        opt.series.push({ type: "bar", name: s.name, xAxisIndex: i, yAxisIndex: i,
                          data: [s.data[i]], stack: s.stack || undefined, barWidth: 14,
                          barGap: "-100%", z: 2 + k, __row: i,
                          itemStyle: { color: colourOf(s, k) } });
      });
    });
    return opt;
  }

  // --- donut -------------------------------------------------------------------------------
  function donutOption(spec, width) {
    // All zeros: no ring (ECharts would draw equal slices of a zero sum), no legend, the text.
    if (spec.empty) return { animation: false, graphic: emptyText(spec) };
    var cx = Math.round(width * 0.28);
    return {
      animation: false, textStyle: { color: FG },
      tooltip: { trigger: "item", confine: true, formatter: function (p) {
        return tooltipBox(spec.title, [{ name: p.name, colour: p.color,
          value: withUnit(p.value, spec.unit) + " (" + fmt(p.percent) + " %)" }]);
      } },
      legend: { orient: "vertical", left: Math.round(width * 0.56), top: "middle", type: "scroll",
                itemHeight: 8,
                formatter: function (name) {
                  var part = spec.parts.filter(function (q) { return q.name === name; })[0];
                  return name + ": " + (part ? fmt(part.value) : "");
                } },
      series: [{ type: "pie", radius: ["48%", "72%"], center: [cx, "50%"], label: { show: false },
                 data: spec.parts.map(function (p, i) {
                   return { name: p.name, value: p.value, itemStyle: { color: p.colour || PALETTE[i % 10] } };
                 }) }],
      graphic: spec.empty ? emptyText(spec) : [{ type: "text", left: cx - 40, top: "middle",
        style: { text: fmt(spec.total), width: 80, align: "center", fontSize: 20, fontWeight: 600, fill: FG } }],
    };
  }

  function optionFor(spec, width) {
    if (spec.type === "time") return timeOption(spec);
    if (spec.type === "bars") {
      return spec.scale === "independent" ? independentBarOption(spec, width) : sharedBarOption(spec);
    }
    if (spec.type === "donut") return donutOption(spec, width);
    throw new Error("unknown chart type " + spec.type);
  }

  // --- lifecycle ---------------------------------------------------------------------------
  function sweep() {
    drawn = drawn.filter(function (d) {
      if (d.el.isConnected) return true;
      d.observer && d.observer.disconnect();
      d.chart.dispose();
      return false;
    });
  }

  function render(el) {
    if (el.dataset.chartDrawn) return;
    var source = document.getElementById(el.dataset.chart);
    if (!source) { console.error("chart data " + el.dataset.chart + " is missing"); return; }
    if (typeof echarts === "undefined") { console.error("ECharts is not loaded"); return; }
    var spec = JSON.parse(source.textContent);
    el.style.height = spec.height + "px";
    var chart = echarts.init(el, null, { renderer: "svg" });
    chart.setOption(optionFor(spec, el.clientWidth));
    el.dataset.chartDrawn = "1";
    var entry = { el: el, chart: chart, spec: spec, width: el.clientWidth, observer: null };
    if (typeof ResizeObserver !== "undefined") {
      entry.observer = new ResizeObserver(function () {
        if (el.clientWidth === entry.width) return;
        entry.width = el.clientWidth;
        chart.resize();
        if (spec.type !== "time") chart.setOption(optionFor(spec, entry.width), true);
      });
      entry.observer.observe(el);
    }
    drawn.push(entry);
  }

  function renderAll(root) {
    sweep();
    (root || document).querySelectorAll("[data-chart]").forEach(function (el) {
      try { render(el); } catch (err) { console.error("chart " + el.dataset.chart + ": " + err); }
    });
  }

  function disposeAll(root) {
    drawn.forEach(function (d) {
      if (!root || root.contains(d.el)) { d.el.removeAttribute("data-chart-drawn"); }
    });
    drawn = drawn.filter(function (d) {
      if (root && !root.contains(d.el)) return true;
      d.observer && d.observer.disconnect();
      d.chart.dispose();
      return false;
    });
  }

  window.ConsoleCharts = { renderAll: renderAll, render: render, disposeAll: disposeAll };
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { renderAll(); });
  } else {
    renderAll();
  }
})();
