/* The report's other interactive parts: the agreement grid, the card filters, and the
 * position-by-position tables, drawn from the embedded data when a card is opened. */
(function () {
  "use strict";

  var el = window.conformanceExplorer.el; // explorer.js comes first in the page

  function num(v) {
    if (v === null || v === undefined) return "\u2014";
    if (typeof v !== "number") return String(v);
    if (Number.isInteger(v) && Math.abs(v) < 1e6) return String(v);
    return v.toFixed(4);
  }

  function dec(v) {
    if (v === null || v === undefined) return "\u2014";
    return v.toFixed(4);
  }

  function label(lab, raw) {
    if (lab === null) return raw === null ? "unjudged" : "\u2014 (" + num(raw) + ")";
    if (raw !== null && raw !== lab) return num(lab) + " (" + num(raw) + ")";
    return num(lab);
  }

  var data = null;

  // ---- agreement grid ----------------------------------------------------------------------

  function drawGrid(metric) {
    var grid = document.getElementById("agreement-grid");
    if (!grid) return;
    var ag = data.agreement;
    var both = ag.both[metric], agree = ag.agree[metric];
    var idx = [];
    ag.entries.forEach(function (name, i) { if (both[i][i] > 0) idx.push(i); });
    grid.textContent = "";
    var head = el("tr");
    head.appendChild(el("th", { className: "corner" }));
    idx.forEach(function (j) { head.appendChild(el("th", { className: "colname" }, ag.entries[j])); });
    var thead = el("thead");
    thead.appendChild(head);
    grid.appendChild(thead);
    var body = el("tbody");
    idx.forEach(function (i) {
      var tr = el("tr");
      tr.appendChild(el("th", { className: "rowname" }, ag.entries[i]));
      idx.forEach(function (j) {
        var b = both[i][j], a = agree[i][j];
        var td = el("td", { "data-a": ag.entries[i], "data-b": ag.entries[j], "data-agree": String(a), "data-both": String(b) });
        if (i === j) {
          td.className = "diag";
          td.textContent = String(b);
          td.title = ag.entries[i] + " computed " + b + " case(s)";
        } else if (b === 0) {
          td.className = "none";
          td.title = "never compared";
        } else {
          var f = a / b;
          td.textContent = String(a);
          td.style.background = "hsl(" + Math.round(f * 130) + ", 70%, " + (88 - 10 * f).toFixed(0) + "%)";
          td.title = ag.entries[i] + " and " + ag.entries[j] + " agree on " + a + " of " + b + " case(s)";
        }
        tr.appendChild(td);
      });
      body.appendChild(tr);
    });
    grid.appendChild(body);
  }

  // ---- card filters ------------------------------------------------------------------------

  function filterCards() {
    var metric = document.getElementById("filter-metric").value;
    var axis = document.getElementById("filter-axis").value;
    var text = document.getElementById("filter-case").value.trim().toLowerCase();
    var onlyBad = document.getElementById("filter-unexplained").checked;
    var cards = document.querySelectorAll("#cards .card");
    var shown = 0;
    Array.prototype.forEach.call(cards, function (c) {
      var ok = (!metric || c.getAttribute("data-metric") === metric) &&
        (!axis || (" " + c.getAttribute("data-axes") + " ").indexOf(" " + axis + " ") >= 0) &&
        (!text || c.getAttribute("data-case").toLowerCase().indexOf(text) >= 0) &&
        (!onlyBad || c.getAttribute("data-unexplained") === "1");
      c.hidden = !ok;
      if (ok) shown++;
    });
    // a group shows how many of its cards pass, and hides when none does
    Array.prototype.forEach.call(document.querySelectorAll("#cards details.cgroup"), function (g) {
      var n = g.querySelectorAll(".card:not([hidden])").length;
      g.querySelector(".gshown").textContent = n === +g.getAttribute("data-total") ? String(n) : n + " of " + g.getAttribute("data-total");
      g.hidden = n === 0;
      var part = document.querySelector('.mpart[data-group="' + g.id + '"]');
      if (part) part.hidden = n === 0;
    });
    Array.prototype.forEach.call(document.querySelectorAll("#cards details.mgroup"), function (m) {
      m.hidden = !m.querySelector(".card:not([hidden])");
    });
    document.getElementById("filter-count").textContent = shown + " of " + cards.length + " shown";
  }

  // ---- position tables ---------------------------------------------------------------------

  function drawTables(card) {
    var holder = card.querySelector(".tables");
    if (!holder || holder.getAttribute("data-drawn")) return;
    holder.setAttribute("data-drawn", "1");
    var sets = JSON.parse(card.getAttribute("data-tables"));
    sets.forEach(function (pair) {
      var tabs = pair.map(function (i) { return i === null ? null : data.tables[i]; });
      var docsAt = tabs.map(function (t) {
        var m = {};
        if (t && t.rows) t.rows.forEach(function (r) { if (r) m[r[0]] = r[1]; });
        return m;
      });
      var row = el("div", { className: "pt-pair" });
      tabs.forEach(function (t, side) {
        if (!t) return;
        row.appendChild(drawTable(t, side, tabs.length === 2 ? docsAt[1 - side] : null));
      });
      holder.appendChild(row);
    });
  }

  function drawTable(t, side, otherDocs) {
    var box = el("div", { className: "pt side" + side, "data-query": t.query, "data-entry": t.entry });
    var head = el("div", { className: "pt-head" });
    head.appendChild(el("code", { className: side === 0 ? "ea" : "eb" }, t.entry));
    head.appendChild(el("span", null, " query " + t.query + " \u00b7 " + t.measure));
    box.appendChild(head);
    if (t.error) {
      box.appendChild(el("p", { className: "pt-error" }, "The reference refuses this input under this profile: " + t.error));
      return box;
    }
    if (t.note) box.appendChild(el("p", { className: "pt-note" }, t.note));
    var table = el("table", { className: "pt-table" });
    var thead = el("thead");
    var hr = el("tr");
    var cols = t.graded
      ? ["rank", "doc", "grade", "gain", "disc.", "gain\u00d7disc.", "DCG", "ideal doc", "grade", "gain", "IDCG"]
      : ["rank", "doc", "grade", "relevant", "rel. so far", "precision", "AP term"];
    cols.forEach(function (c, i) {
      hr.appendChild(el("th", { className: t.graded && i >= 7 ? "ideal" : "" }, c));
    });
    thead.appendChild(hr);
    table.appendChild(thead);
    var body = el("tbody");
    var ranks = [], byRank = {}, idealByRank = {};
    t.rows.forEach(function (r) { if (r) { byRank[r[0]] = r; ranks.push(r[0]); } });
    if (t.graded) {
      t.ideal.forEach(function (r) { if (r) { idealByRank[r[0]] = r; if (!(r[0] in byRank)) ranks.push(r[0]); } });
    }
    ranks = ranks.filter(function (r, i) { return ranks.indexOf(r) === i; }).sort(function (a, b) { return a - b; });
    var k = t.k === null ? null : t.k;
    var prev = 0;
    ranks.forEach(function (rank) {
      if (rank > prev + 1) {
        var gap = el("tr", { className: "gap" });
        gap.appendChild(el("td", { colspan: String(cols.length) }, "\u22ee " + (rank - prev - 1) + " rows"));
        body.appendChild(gap);
      }
      prev = rank;
      var r = byRank[rank], ir = idealByRank[rank];
      var inside = k === null || rank <= k;
      var tr = el("tr", { className: (inside ? "in" : "out") + (k !== null && rank === k ? " cutrow" : ""), "data-rank": String(rank) });
      if (r && r[8] !== null && r[8] !== undefined) tr.classList.add("tie", "tg" + (r[8] % 2));
      tr.appendChild(el("td", { className: "rank", title: tr.classList.contains("tie") ? "tied: equal score with the rows beside it" : "" }, String(rank)));
      if (r) {
        var moved = otherDocs && otherDocs[rank] !== undefined && otherDocs[rank] !== r[1];
        tr.appendChild(el("td", { className: "doc" + (moved ? " moved" : ""), title: moved ? "the other convention ranks " + otherDocs[rank] + " here" : "" }, r[1]));
        tr.appendChild(el("td", null, label(r[2], r[3])));
        if (t.graded) {
          tr.appendChild(el("td", { className: "n" }, num(r[4])));
          [r[5], r[6], r[7]].forEach(function (v, j) {
            tr.appendChild(el("td", { className: "n" + (j === 2 ? " run" : "") }, dec(v)));
          });
        } else {
          tr.appendChild(el("td", { className: "n" + (r[4] > 0 ? " yes" : "") }, r[4] === 1 ? "yes" : r[4] === 0 ? "no" : num(r[4])));
          tr.appendChild(el("td", { className: "n" }, num(r[5])));
          [r[6], r[7]].forEach(function (v, j) {
            tr.appendChild(el("td", { className: "n" + (j === 0 ? " run" : "") }, dec(v)));
          });
        }
      } else {
        for (var j = 0; j < (t.graded ? 6 : 6); j++) tr.appendChild(el("td", { className: "blank" }));
      }
      if (t.graded) {
        if (ir) {
          tr.appendChild(el("td", { className: "ideal doc" }, ir[1]));
          tr.appendChild(el("td", { className: "ideal" }, num(ir[2])));
          tr.appendChild(el("td", { className: "ideal n" }, num(ir[3])));
          tr.appendChild(el("td", { className: "ideal n run" }, dec(ir[5])));
        } else {
          for (var q = 0; q < 4; q++) tr.appendChild(el("td", { className: "ideal blank" }));
        }
      }
      body.appendChild(tr);
    });
    table.appendChild(body);
    box.appendChild(table);
    var foot = el("p", { className: "pt-foot" });
    var ref = t.ref === null ? null : (t.ref[0] === t.ref[1] ? dec(t.ref[0]) : dec(t.ref[0]) + " .. " + dec(t.ref[1]));
    if (t.graded) {
      var kk = t.k === null ? "" : "@" + t.k;
      var text = "DCG" + kk + " = " + dec(t.dcg) + ", IDCG" + kk + " = " + dec(t.idcg);
      if (t.family === "nDCG") text += " \u2192 nDCG" + kk + " = " + (t.idcg > 0 ? dec(t.value) : "0/0 (empty_query decides)");
      foot.appendChild(el("span", null, text + ". "));
    } else {
      foot.appendChild(el("span", null, (t.how ? t.how + ". " : "") + "R = " + t.R + " relevant in the universe; " + t.n + " ranked. "));
    }
    var refText;
    if (t.refused) refText = "The reference refuses this input under this profile: " + t.refused;
    else if (!t.counted) refText = "This profile leaves the query out (empty_query=skip).";
    else refText = "Reference under this profile: " + (ref === null ? "NaN" : ref);
    foot.appendChild(el("span", { className: "refv" + (t.refused ? " refused" : ""), "data-ref": t.ref === null ? "" : String(t.ref[0]) }, refText));
    box.appendChild(foot);
    return box;
  }

  function init() {
    var dataEl = document.getElementById("report-data");
    if (!dataEl) return;
    data = JSON.parse(dataEl.textContent);
    var pick = document.getElementById("values-case");
    if (pick) {
      pick.addEventListener("change", function () {
        Array.prototype.forEach.call(document.querySelectorAll("#values .vtable"), function (t) {
          t.hidden = t.getAttribute("data-index") !== pick.value;
        });
      });
    }
    var sel = document.getElementById("agreement-metric");
    if (sel) {
      sel.addEventListener("change", function () { drawGrid(sel.value); });
      drawGrid(sel.value);
    }
    ["filter-metric", "filter-axis", "filter-case", "filter-unexplained"].forEach(function (id) {
      var e = document.getElementById(id);
      if (e) e.addEventListener(e.tagName === "SELECT" || e.type === "checkbox" ? "change" : "input", filterCards);
    });
    Array.prototype.forEach.call(document.querySelectorAll("#cards .card"), function (card) {
      var det = card.querySelector("details.positions");
      if (!det) return;
      if (det.open) drawTables(card);
      // drawn on the click itself: "toggle" is queued as a task after the click, so whoever
      // looks right after clicking would find the box open and empty
      det.querySelector("summary").addEventListener("click", function () { drawTables(card); });
      det.addEventListener("toggle", function () { if (det.open) drawTables(card); });
    });
    // a wide table's shaded right edge shows while columns lie beyond it, not at its end
    Array.prototype.forEach.call(document.querySelectorAll(".wide-wrap"), function (wrap) {
      var box = wrap.querySelector(".scroll");
      var mark = function () {
        var rest = box.scrollWidth - box.clientWidth - box.scrollLeft;
        wrap.classList.toggle("fits", box.scrollWidth <= box.clientWidth + 1);
        wrap.classList.toggle("at-end", rest <= 1);
      };
      box.addEventListener("scroll", mark);
      window.addEventListener("resize", mark);
      mark();
    });
    window.conformanceReport = { drawTables: drawTables, drawGrid: drawGrid };
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
