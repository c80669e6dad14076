// Live refresh without a framework, the one home of the pages' polling: every element with
// data-live="<seconds>" is re-fetched from its data-src URL (the same page and query string
// with fragment=1: the view answers the element's content alone, by the page's own access
// rule) and replaced in place; the charts in it are drawn again by the chart layer
// (charts.js). An answer equal to the last one changes nothing, a region the user is typing
// in is left alone until they leave it, and polling stops for good when an answer holds
// [data-live-stop] (a job in a final state) or the server refuses (401: the session ended;
// 403, 404: the object went or the session lost its access) or redirects.
(function () {
  function typingIn(el) {
    var active = document.activeElement;
    return !!active && el.contains(active) && /^(INPUT|SELECT|TEXTAREA)$/.test(active.tagName);
  }
  document.querySelectorAll("[data-live]").forEach(function (el) {
    var every = Math.max(2, parseInt(el.dataset.live, 10) || 10) * 1000;
    var last = null;
    var busy = false;
    var timer = setInterval(function () {
      if (document.hidden || busy) return;
      busy = true;
      fetch(el.dataset.src, { credentials: "same-origin", headers: { "X-Requested-With": "fetch" } })
        .then(function (r) {
          // 401: the session ended (console/dashboards/live.py); a redirect is never a fragment
          var refused = r.status === 401 || r.status === 403 || r.status === 404 || r.redirected;
          if (refused) clearInterval(timer);
          return r.ok && !r.redirected ? r.text() : null;
        })
        .then(function (html) {
          if (html === null || html === last || typingIn(el)) return;
          last = html;
          if (window.ConsoleCharts) window.ConsoleCharts.disposeAll(el);
          el.innerHTML = html;
          if (window.ConsoleCharts) window.ConsoleCharts.renderAll(el);
          if (el.querySelector("[data-live-stop]")) clearInterval(timer);
        })
        .catch(function () {})
        .then(function () { busy = false; });
    }, every);
  });
})();

// Forms that ask before submitting: <form data-confirm="Question?"> (no inline handlers, so
// the pages run under a Content-Security-Policy without 'unsafe-inline' scripts). One
// listener on the document, so forms that a live refresh put in the page ask too.
document.addEventListener("submit", function (event) {
  var form = event.target;
  if (form.matches && form.matches("form[data-confirm]") && !window.confirm(form.dataset.confirm)) {
    event.preventDefault();
  }
});
