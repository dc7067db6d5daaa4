/* conformance rag report: the slice selector and the filters of the diagnoses and spreads. */
(function () {
  "use strict";

  function filterDiagnoses() {
    var variant = value("filter-variant"), diagnosis = value("filter-diagnosis");
    var slice = value("filter-slice"), text = value("filter-text").trim().toLowerCase();
    var rows = document.querySelectorAll("#diagnosis-table tbody tr");
    var shown = 0;
    Array.prototype.forEach.call(rows, function (tr) {
      var d = tr.getAttribute("data-diagnosis");
      var ok = (!variant || tr.getAttribute("data-variant") === variant)
        && (!diagnosis || (diagnosis === "!ok" ? d !== "ok" : d === diagnosis))
        && (!slice || tr.getAttribute("data-slice") === slice)
        && (!text || tr.textContent.toLowerCase().indexOf(text) >= 0);
      tr.hidden = !ok;
      if (ok) shown++;
    });
    var count = document.getElementById("diagnosis-count");
    if (count) count.textContent = shown + " of " + rows.length + " shown";
  }

  function value(id) {
    var e = document.getElementById(id);
    return e ? e.value : "";
  }

  function showSlice() {
    var want = value("slice-select");
    Array.prototype.forEach.call(document.querySelectorAll("#slices .slice"), function (div) {
      div.hidden = div.getAttribute("data-slice") !== want;
    });
  }

  function filterSpreads() {
    var only = document.getElementById("spread-differs");
    Array.prototype.forEach.call(document.querySelectorAll("#spread-table tbody tr"), function (tr) {
      tr.hidden = only && only.checked && tr.getAttribute("data-differs") !== "1";
    });
  }

  function init() {
    ["filter-variant", "filter-diagnosis", "filter-slice"].forEach(function (id) {
      var e = document.getElementById(id);
      if (e) e.addEventListener("change", filterDiagnoses);
    });
    var t = document.getElementById("filter-text");
    if (t) t.addEventListener("input", filterDiagnoses);
    var s = document.getElementById("slice-select");
    if (s) s.addEventListener("change", showSlice);
    var d = document.getElementById("spread-differs");
    if (d) d.addEventListener("change", filterSpreads);
    filterDiagnoses();
    filterSpreads();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
