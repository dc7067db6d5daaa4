/* conformance rag report: the slice selector and the filters of the diagnoses and spreads. */
(function () {
  "use strict";

  // The per-query rows live in #rag-data; the filters run over all of them and one page of
  // the matching rows is drawn (a 2,000-query report would otherwise draw 6,000 rows).
  var DATA = null, matching = [], page = 0;

  function data() {
    if (DATA === null) {
      var e = document.getElementById("rag-data");
      DATA = e ? JSON.parse(e.textContent) : {rows: [], queries: [], variants: [], diagnoses: [], page: 100};
    }
    return DATA;
  }

  function cell(tr, text, cls) {
    var td = document.createElement("td");
    if (cls) td.className = cls;
    td.textContent = text;
    tr.appendChild(td);
    return td;
  }

  function code(td, text) {
    var c = document.createElement("code");
    c.textContent = text;
    td.appendChild(c);
    return c;
  }

  function drawRow(r) {
    var D = data(), q = D.queries[r[1]], d = D.diagnoses[r[2]];
    var tr = document.createElement("tr");
    tr.setAttribute("data-variant", D.variants[r[0]]);
    tr.setAttribute("data-qid", q[0]);
    tr.setAttribute("data-diagnosis", d[0]);
    tr.setAttribute("data-slice", q[2]);
    code(cell(tr, ""), D.variants[r[0]]);
    var qtd = cell(tr, "");
    code(qtd, q[0]);
    var span = document.createElement("span");
    span.className = "q";
    span.textContent = " " + q[1];
    qtd.appendChild(span);
    if (D.has_slices) cell(tr, q[2]);
    var dtd = cell(tr, "");
    var chip = document.createElement("span");
    chip.className = "dchip";
    chip.style.background = d[1];
    chip.textContent = d[0];
    dtd.appendChild(chip);
    if (r[3]) {
      var more = document.createElement("span");
      more.className = "flag-more";
      more.textContent = " " + r[3];
      dtd.appendChild(more);
    }
    cell(tr, r[4], "why");
    r[5].forEach(function (t) { cell(tr, t, "num"); });
    r[6].forEach(function (t) { cell(tr, t, "num"); });
    cell(tr, r[7], "answer");
    return tr;
  }

  function filterDiagnoses() {
    var D = data();
    var variant = value("filter-variant"), diagnosis = value("filter-diagnosis");
    var slice = value("filter-slice"), text = value("filter-text").trim().toLowerCase();
    matching = D.rows.filter(function (r) {
      var q = D.queries[r[1]], d = D.diagnoses[r[2]][0];
      if (variant && D.variants[r[0]] !== variant) return false;
      if (diagnosis && (diagnosis === "!ok" ? d === "ok" : d !== diagnosis)) return false;
      if (slice && q[2] !== slice) return false;
      if (text) {
        var hay = (D.variants[r[0]] + " " + q[0] + " " + q[1] + " " + q[2] + " " + d + " " + r[3] + " " + r[4]
                   + " " + r[7]).toLowerCase();
        if (hay.indexOf(text) < 0) return false;
      }
      return true;
    });
    page = 0;
    drawPage();
  }

  function drawPage() {
    var D = data(), size = D.page || 100;
    var pages = Math.max(1, Math.ceil(matching.length / size));
    page = Math.min(Math.max(page, 0), pages - 1);
    var body = document.querySelector("#diagnosis-table tbody");
    if (!body) return;
    var frag = document.createDocumentFragment();
    matching.slice(page * size, (page + 1) * size).forEach(function (r) { frag.appendChild(drawRow(r)); });
    while (body.firstChild) body.removeChild(body.firstChild);
    body.appendChild(frag);
    var count = document.getElementById("diagnosis-count");
    if (count) count.textContent = matching.length + " of " + D.rows.length + " shown";
    var at = document.getElementById("diagnosis-page");
    if (at) {
      at.textContent = matching.length ? "rows " + (page * size + 1) + "-" + Math.min((page + 1) * size, matching.length)
        + " (page " + (page + 1) + " of " + pages + ")" : "no row";
    }
    var prev = document.getElementById("page-prev"), next = document.getElementById("page-next");
    if (prev) prev.disabled = page === 0;
    if (next) next.disabled = page >= pages - 1;
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
    var prev = document.getElementById("page-prev"), next = document.getElementById("page-next");
    if (prev) prev.addEventListener("click", function () { page--; drawPage(); });
    if (next) next.addEventListener("click", function () { page++; drawPage(); });
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
