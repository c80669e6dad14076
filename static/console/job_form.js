// Submit form: the vendor and device model selects offer what the chosen queue's resource
// group can run (data: the form's queue_choices, a JSON script element; no inline code, so
// the page runs under the Content-Security-Policy). The server refuses anything else.
(function () {
  var data = document.getElementById("queue-choices");
  var form = document.getElementById("job-form");
  if (!data || !form) return;
  var choices = JSON.parse(data.textContent);
  var queue = form.elements.queue, vendor = form.elements.vendor, model = form.elements.device_type;

  function fill(select, options, keep) {
    select.replaceChildren();
    options.forEach(function (o) { select.add(new Option(o[1], o[0])); });
    var values = options.map(function (o) { return o[0]; });
    select.value = values.indexOf(keep) >= 0 ? keep : (values[0] || "");
  }

  function offerModels() {
    var group = choices[queue.value] || { models: [] };
    var models = group.models.filter(function (m) { return m[1] === vendor.value; });
    fill(model, [["", "any model"]].concat(models.map(function (m) {
      return [m[0], m[0] + " (" + m[1] + ")"];
    })), model.value);
  }

  function offerVendors() {
    var group = choices[queue.value];
    if (!group || !group.vendors.length) return;
    fill(vendor, group.vendors.map(function (v) { return [v, v]; }), vendor.value);
    offerModels();
  }

  queue.addEventListener("change", offerVendors);
  vendor.addEventListener("change", offerModels);
})();
