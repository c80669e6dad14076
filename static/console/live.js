// Live refresh without a framework: every element with data-live="<seconds>" is re-fetched
// from its data-src URL (same page with ?fragment=1) and replaced in place; the charts in it
// are drawn again by the chart layer (charts.js).
(function () {
  document.querySelectorAll("[data-live]").forEach(function (el) {
    var every = Math.max(2, parseInt(el.dataset.live, 10) || 10) * 1000;
    setInterval(function () {
      if (document.hidden) return;
      fetch(el.dataset.src, { credentials: "same-origin", headers: { "X-Requested-With": "fetch" } })
        .then(function (r) { return r.ok ? r.text() : null; })
        .then(function (html) {
          if (html === null) return;
          if (window.ConsoleCharts) window.ConsoleCharts.disposeAll(el);
          el.innerHTML = html;
          if (window.ConsoleCharts) window.ConsoleCharts.renderAll(el);
        })
        .catch(function () {});
    }, every);
  });
})();

// Forms that ask before submitting: <form data-confirm="Question?"> (no inline handlers, so
// the pages run under a Content-Security-Policy without 'unsafe-inline' scripts).
document.querySelectorAll("form[data-confirm]").forEach(function (form) {
  form.addEventListener("submit", function (event) {
    if (!window.confirm(form.dataset.confirm)) event.preventDefault();
  });
});
