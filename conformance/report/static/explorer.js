/* The explorer: a ranked list the reader edits, and every entry's value of P@k, R@k, RR, RR@k,
 * AP, AP@k, nDCG@k, nDCG and DCG@k under its declared profile.
 *
 * The reader's lists are arbitrary, so no table the reference computes ahead could cover them:
 * evaluate() computes the values here, as conformance/reference does for a list that is the
 * whole universe (every judged document in the list, in score order, with no ties and no
 * unjudged document), and tests/report/test_explorer_browser.py holds it to the Python
 * reference, to 1e-12, over every named value (and samples of the parameterised values) of
 * every axis the explorer offers, and over every library entry's profile under the gain switch.
 * On such a list the ideal is the same under ideal=judged, retrieved and judged_to_list, and
 * only the axes the page's data lists (the axis records' explorer flag) matter; a one-document
 * list is refused under single_document=raise, whatever the measure (scikit-learn's rule).
 *
 * Which values of those axes this script computes is stated once, in conformance/report/html.py
 * (EXPLORER_COMPUTES): a profile holding any other value comes with not_here, and evaluate()
 * shows it as not computed. A value this script does not know makes it throw (pick(), the
 * parsers), never fall through to another value's arithmetic.
 */
(function () {
  "use strict";

  var MEASURES = ["P@k", "R@k", "RR", "RR@k", "AP", "AP@k", "nDCG@k", "nDCG", "DCG@k"];

  // the axes each measure reads (for grouping entries that always give equal numbers here) and
  // each measure's formula: both come with the page's data, made from the measure family and
  // axis records (conformance/report/html.py explorer_data), and are filled in by init()
  var USES = {};
  var FORMULAS = {};

  // a value of an axis the script does not compute: a page whose data claims it does is wrong
  function unknown(axis, value) {
    return new Error("explorer.js does not compute " + axis + "=" + value);
  }

  // the entry of table named by the profile's value on axis, or an error for another value
  function pick(profile, axis, table) {
    var v = String(profile[axis]);
    if (!Object.prototype.hasOwnProperty.call(table, v)) throw unknown(axis, v);
    return table[v];
  }

  function parseDiscount(text) {
    if (text === "log2") return { kind: "log", base: 2 };
    if (text === "jarvelin") return { kind: "jarvelin", base: 2 };
    if (text === "reciprocal") return { kind: "reciprocal", base: 1 };
    var i = text.indexOf(":");
    var d = { kind: text.slice(0, i), base: Number(text.slice(i + 1)) };
    if (i < 0 || (d.kind !== "log" && d.kind !== "jarvelin") || !(d.base > 1 && isFinite(d.base))) {
      throw unknown("discount", text);
    }
    return d;
  }

  // discount at 1-based rank pos (reference.ranking.discounts)
  function discountAt(pos, d) {
    if (d.kind === "reciprocal") return 1 / pos;
    if (d.kind === "log") {
      return d.base === 2 ? 1 / Math.log2(pos + 1) : Math.log(d.base) / Math.log(pos + 1);
    }
    return pos >= d.base ? Math.log(d.base) / Math.log(pos) : 1;
  }

  // gain of a label (reference.ranking.gains): linear, 2^rel - 1, 1 for a relevant label
  // (binary), or a label:gain map whose unlisted labels keep gain = label; threshold_scope=graded
  // zeroes labels below the threshold
  function gainFunction(profile) {
    var map = null;
    if (profile.gain !== "linear" && profile.gain !== "exponential" && profile.gain !== "binary") {
      map = {};
      String(profile.gain).split(",").forEach(function (pair) {
        var p = pair.split(":");
        var label = Number(p[0]), g = Number(p[1]);
        if (p.length !== 2 || p[0] === "" || p[1] === "" || !isFinite(label) || !isFinite(g)) {
          throw unknown("gain", profile.gain);
        }
        map[String(label)] = g;
      });
    }
    var scope = pick(profile, "threshold_scope", { binary: false, graded: true });
    return function (label) {
      var g;
      if (profile.gain === "binary") g = label >= profile.relevance_threshold ? 1 : 0;
      else if (profile.gain === "linear") g = label;
      else if (profile.gain === "exponential") g = Math.pow(2, label) - 1;
      else {
        var key = String(label);
        g = Object.prototype.hasOwnProperty.call(map, key) ? map[key] : label;
      }
      if (scope && label < profile.relevance_threshold) g = 0;
      return g;
    };
  }

  // The sum of a[0..m-1] in the order the reference sums a query's rows (numpy's add.reduceat,
  // reference.ranking.range_sums): the first term, plus numpy's pairwise sum of the rest (eight
  // running sums over blocks of eight, halves above 128 terms). Summed in another order the
  // same terms can differ in the last bit, which rounding=N turns into another number at a
  // decimal half (AP = 27/40 at 2 places: 0.68 from the reference, 0.67 from a plain loop).
  function pairwiseSum(a, lo, n) {
    var i, res;
    if (n < 8) {
      res = 0;
      for (i = lo; i < lo + n; i++) res += a[i];
      return res;
    }
    if (n <= 128) {
      var r = a.slice(lo, lo + 8), blocks = n - n % 8;
      for (i = 8; i < blocks; i += 8) {
        for (var j = 0; j < 8; j++) r[j] += a[lo + i + j];
      }
      res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
      for (i = blocks; i < n; i++) res += a[lo + i];
      return res;
    }
    var half = Math.floor(n / 2);
    half -= half % 8;
    return pairwiseSum(a, lo, half) + pairwiseSum(a, lo + half, n - half);
  }

  function sumTop(a, m) {
    return m > 0 ? a[0] + pairwiseSum(a, 1, m - 1) : 0;
  }

  function safeDiv(num, den) {
    return den !== 0 ? num / den : 0;
  }

  // Python's round(x, places) (reference.evaluate.round_half_even): toFixed rounds the exact
  // binary value to nearest, a half away from zero; a value exactly on a half (its exact
  // expansion ends in 5 at places + 1) goes to the even neighbour instead. 40 more digits hold
  // the exact expansion of any double near such a half that a measure gives.
  function roundPlaces(x, places) {
    if (places === null || !isFinite(x)) return x;
    var a = Math.abs(x);
    var text = a.toFixed(places);
    var more = Math.min(100, places + 41);
    var exact = a.toFixed(more);
    var tail = exact.slice(exact.length - (more - places));
    if (/^50*$/.test(tail)) {
      var down = exact.slice(0, exact.length - (more - places));
      var last = parseInt(down.replace(".", "").slice(-1), 10);
      if (last % 2 === 0) text = down;
    }
    var r = parseFloat(text);
    return x < 0 ? -r : r;
  }

  // what empty_query does to a query whose value is 0/0 (reference.evaluate._apply_empty; with
  // one query, skip leaves nothing to average, so the mean has no value)
  var EMPTY = {
    zero: { value: 0, outcome: "value" },
    one: { value: 1, outcome: "value" },
    nan: { value: NaN, outcome: "value" },
    skip: { value: NaN, outcome: "skip" },
    raise: { value: NaN, outcome: "raise" }
  };
  function finish(raw, empty, rule) {
    var e = pick({ empty_query: rule }, "empty_query", EMPTY);
    if (!empty) return { value: raw, empty: false, outcome: "value", rule: rule };
    return { value: e.value, empty: true, outcome: e.outcome, rule: rule };
  }

  /* Every measure of the explorer for one list.
   * grades: labels in rank order (rank 1 first); k: the cutoff (>= 1); profile: values of the
   * explorer's axes (relevance_threshold a number, the others their public text), and
   * not_here when the page's data says the explorer cannot compute it.
   * Returns {measure id: {value, empty, outcome: "value" | "skip" | "raise" | "not_here", rule}}.
   */
  function evaluate(grades, k, profile) {
    var out = {};
    // a value the explorer does not compute: said so, never computed as another one
    if (profile.not_here && profile.not_here.length) {
      MEASURES.forEach(function (mid) {
        out[mid] = { value: NaN, empty: false, outcome: "not_here", not_here: profile.not_here };
      });
      return out;
    }
    var n = grades.length;
    var L = profile.relevance_threshold;
    if (typeof L !== "number" || Math.floor(L) !== L) throw unknown("relevance_threshold", L);
    var gf = gainFunction(profile);
    var d = parseDiscount(profile.discount);
    var rel = [], gain = [], disc = [], ap = [];
    var R = 0, first = 0;
    for (var i = 0; i < n; i++) {
      var r = grades[i] >= L ? 1 : 0;
      rel.push(r);
      gain.push(gf(grades[i]));
      disc.push(discountAt(i + 1, d));
      ap.push(r * (R + 1) / (i + 1));
      if (r && !first) first = i + 1;
      R += r;
    }
    var ideal = gain.slice().sort(function (a, b) { return b - a; });
    var kk = Math.min(k, n);
    var discounted = gain.map(function (g, j) { return g * disc[j]; });
    var idealDiscounted = ideal.map(function (g, j) { return g * disc[j]; });
    function top(arr, m) { return sumTop(arr, m); }
    function dcg(m) { return sumTop(discounted, m); }
    function idcg(m) { return sumTop(idealDiscounted, m); }
    var relTop = top(rel, kk);
    var noRel = R === 0;
    var rule = profile.empty_query;
    var refuseSingle = pick(profile, "single_document", { score: false, raise: true });
    if (n === 1 && refuseSingle) {
      MEASURES.forEach(function (mid) {
        out[mid] = { value: NaN, empty: false, outcome: "raise", rule: profile.empty_query, single: true };
      });
      return out;
    }
    // the list is an order (no two documents tie): the rows in the top k are min(k, n)
    var pden = pick(profile, "k_beyond_list", { k: k, min_k_n: kk, rows_in_top: kk });
    out["P@k"] = finish(safeDiv(relTop, pden), noRel, rule);
    out["R@k"] = finish(safeDiv(relTop, R), noRel, rule);
    out["RR"] = finish(first ? 1 / first : 0, noRel, rule);
    var rrCut = pick(profile, "rr_cutoff", { honour: k, ignore: n });
    out["RR@k"] = finish(first && first <= rrCut ? 1 / first : 0, noRel, rule);
    // AP without a cutoff: every denominator but k is R when the list holds every judged
    // document; k is the list's length n there
    out["AP"] = finish(safeDiv(top(ap, n), pick(profile, "ap_denominator",
      { relevant: R, retrieved_relevant: R, min_k_relevant: R, k: n, min_k_n_relevant: R })),
      noRel, rule);
    var apden = pick(profile, "ap_denominator",
      { relevant: R, retrieved_relevant: relTop, min_k_relevant: Math.min(R, k), k: k,
        min_k_n_relevant: Math.min(R, kk) });
    out["AP@k"] = finish(safeDiv(top(ap, kk), apden), noRel, rule);
    // ideal=k_slots: every one of k slots (n without a cutoff) holds the largest gain;
    // judged_to_list cuts at min(k, n), which the judged ideal of a whole-universe list is
    var best = n ? ideal[0] : 0;
    function slots(m) {
      var terms = [];
      for (var j = 0; j < m; j++) terms.push(best * discountAt(j + 1, d));
      return sumTop(terms, m);
    }
    var judged = [idcg(Math.min(k, n)), idcg(n)];
    var ideals = pick(profile, "ideal",
      { judged: judged, retrieved: judged, judged_to_list: judged, k_slots: [slots(k), slots(n)] });
    var idealK = ideals[0], idealAll = ideals[1];
    out["nDCG@k"] = finish(safeDiv(dcg(kk), idealK), idealK <= 0, rule);
    out["nDCG"] = finish(safeDiv(dcg(n), idealAll), idealAll <= 0, rule);
    out["DCG@k"] = finish(dcg(kk), idealK <= 0, rule);
    // rounding=N: one query's value and its mean are the same number, rounded
    var places = null;
    if (profile.rounding !== "none") {
      if (!/^\d+$/.test(String(profile.rounding))) throw unknown("rounding", profile.rounding);
      places = parseInt(profile.rounding, 10);
    }
    if (places !== null) MEASURES.forEach(function (mid) { out[mid].value = roundPlaces(out[mid].value, places); });
    return out;
  }

  /* The list of length n (grades 0..3) whose nDCG@k parts most between linear and exponential
   * gain (log2 discount, relevance from grade 1), by exhaustive search; the first found wins. */
  function divergeMost(n, k) {
    var kk = Math.min(k, n);
    var D = [0];
    for (var i = 1; i <= n; i++) D.push(D[i - 1] + 1 / Math.log2(i + 1));
    var disc = [];
    for (var j = 0; j < n; j++) disc.push(1 / Math.log2(j + 2));
    var lin = [0, 1, 2, 3], exp = [0, 1, 3, 7];
    function idcg(c3, c2, c1, g) {
      var a = Math.min(c3, kk), b = Math.min(c3 + c2, kk), c = Math.min(c3 + c2 + c1, kk);
      return g[3] * D[a] + g[2] * (D[b] - D[a]) + g[1] * (D[c] - D[b]);
    }
    var grades = [], best = -1, bestList = null, total = Math.pow(4, n);
    for (var x = 0; x < total; x++) {
      var v = x, c = [0, 0, 0, 0];
      for (var p = 0; p < n; p++) { grades[p] = v & 3; c[v & 3]++; v >>= 2; }
      var il = idcg(c[3], c[2], c[1], lin);
      if (il <= 0) continue;
      var ie = idcg(c[3], c[2], c[1], exp);
      var dl = 0, de = 0;
      for (var q = 0; q < kk; q++) { dl += lin[grades[q]] * disc[q]; de += exp[grades[q]] * disc[q]; }
      var diff = Math.abs(dl / il - de / ie);
      if (diff > best + 1e-15) { best = diff; bestList = grades.slice(); }
    }
    return { grades: bestList, difference: best };
  }

  var api = {
    MEASURES: MEASURES,
    USES: USES,
    evaluate: evaluate,
    sumTop: sumTop,
    divergeMost: divergeMost,
    gainFunction: gainFunction,
    discountAt: discountAt,
    roundPlaces: roundPlaces
  };
  api.el = el; // report.js builds its tables with the same helper
  window.conformanceExplorer = api;

  // ------------------------------------------------------------------------------------------
  // the interactive part
  // ------------------------------------------------------------------------------------------

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (a) {
        if (a === "className") e.className = attrs[a];
        else e.setAttribute(a, attrs[a]);
      });
    }
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  }

  function fmt(v) {
    if (typeof v !== "number") return String(v);
    if (isNaN(v)) return "NaN";
    return v.toFixed(4);
  }

  function init() {
    var root = document.getElementById("ex");
    var dataEl = document.getElementById("report-data");
    if (!root || !dataEl) return;
    var data = JSON.parse(dataEl.textContent).explorer;
    api.data = data;
    Object.keys(data.uses).forEach(function (mid) { USES[mid] = data.uses[mid]; });
    Object.keys(data.formulas).forEach(function (mid) { FORMULAS[mid] = data.formulas[mid]; });
    var listEl = document.getElementById("ex-list");
    var tableEl = document.getElementById("ex-table");
    var notesEl = document.getElementById("ex-notes");
    var kEl = document.getElementById("ex-k");
    var kOut = document.getElementById("ex-k-out");
    var presetNote = document.getElementById("ex-preset-note");
    var nextDoc = 1;
    var state = { items: [], k: 5, gain: "declared" };

    function fresh(grades) {
      nextDoc = 1;
      return grades.map(function (g) { return { doc: "d" + nextDoc++, grade: g }; });
    }

    function setItems(items, k) {
      state.items = items;
      if (k !== undefined) state.k = k;
      update();
    }

    // effective profile of an entry for a measure under the gain switch (null: not computed)
    function profileOf(entry, mid) {
      var p = entry.measures[mid];
      if (!p) return null;
      if (state.gain === "declared") return p;
      var q = {};
      Object.keys(p).forEach(function (a) { q[a] = p[a]; });
      q.gain = state.gain;
      return q;
    }

    // columns: entries whose profiles agree on every axis every measure reads
    function columns() {
      var cols = [], bySig = {};
      data.entries.forEach(function (entry) {
        if (!computesAny(entry)) return;
        var sig = MEASURES.map(function (mid) {
          var p = profileOf(entry, mid);
          if (!p) return mid + ":-";
          if (p.not_here) return mid + ":not_here:" + p.not_here.join(",");
          return mid + ":" + USES[mid].map(function (a) { return p[a]; }).join("|");
        }).join(";");
        if (!(sig in bySig)) {
          bySig[sig] = cols.length;
          cols.push({ entries: [], entry: entry });
        }
        cols[bySig[sig]].entries.push(entry.entry);
      });
      return cols;
    }

    function computesAny(entry) {
      return MEASURES.some(function (mid) { return entry.measures[mid] !== null; });
    }

    function axisValues(col, axis) {
      var seen = [];
      MEASURES.forEach(function (mid) {
        var p = profileOf(col.entry, mid);
        if (p && USES[mid].indexOf(axis) >= 0) {
          var v = String(p[axis]);
          if (seen.indexOf(v) < 0) seen.push(v);
        }
      });
      return seen;
    }

    function renderList() {
      listEl.textContent = "";
      var n = state.items.length;
      state.items.forEach(function (it, i) {
        var li = el("li", {
          className: "ex-row" + (i < state.k ? " inside" : " outside"),
          draggable: "true", tabindex: "0", "data-doc": it.doc, "data-grade": String(it.grade),
          "data-index": String(i), "aria-label": "rank " + (i + 1) + ", " + it.doc + ", grade " + it.grade
        });
        li.appendChild(el("span", { className: "ex-rank" }, String(i + 1)));
        li.appendChild(el("span", { className: "ex-grip", "aria-hidden": "true" }, "\u2807"));
        li.appendChild(el("span", { className: "ex-doc", title: it.doc }, it.doc));
        if (it.extra) {
          li.classList.add("extra");
          li.appendChild(el("span", { className: "ex-tag", title: "appended: the run's list left it out" },
            it.rank ? "run rank " + it.rank : "not retrieved"));
        }
        var badge = el("button", {
          type: "button", className: "ex-grade g" + it.grade,
          title: "grade " + it.grade + ": click to cycle 0-3", "aria-label": "grade " + it.grade
        }, String(it.grade));
        badge.addEventListener("click", function () { it.grade = (it.grade + 1) % 4; update(it.doc, ".ex-grade"); });
        li.appendChild(badge);
        var bar = el("span", { className: "ex-gainbar" });
        bar.style.setProperty("--w", String(it.grade / 3));
        li.appendChild(bar);
        var up = el("button", { type: "button", className: "ex-up", title: "move up", "aria-label": "move up" }, "\u2191");
        var down = el("button", { type: "button", className: "ex-down", title: "move down", "aria-label": "move down" }, "\u2193");
        var rm = el("button", { type: "button", className: "ex-remove", title: "remove", "aria-label": "remove" }, "\u00d7");
        if (i === 0) up.disabled = true;
        if (i === n - 1) down.disabled = true;
        if (n === 1) rm.disabled = true;
        up.addEventListener("click", function () { move(i, i - 1, ".ex-up"); });
        down.addEventListener("click", function () { move(i, i + 1, ".ex-down"); });
        rm.addEventListener("click", function () { state.items.splice(i, 1); update(); });
        li.appendChild(up);
        li.appendChild(down);
        li.appendChild(rm);
        li.addEventListener("keydown", function (ev) { onKey(ev, i); });
        li.addEventListener("dragstart", function (ev) {
          ev.dataTransfer.setData("text/plain", String(i));
          ev.dataTransfer.effectAllowed = "move";
          li.classList.add("dragging");
        });
        li.addEventListener("dragend", function () { li.classList.remove("dragging"); clearDrop(); });
        li.addEventListener("dragover", function (ev) {
          ev.preventDefault();
          ev.dataTransfer.dropEffect = "move";
          clearDrop();
          li.classList.add(after(ev, li) ? "drop-after" : "drop-before");
        });
        li.addEventListener("drop", function (ev) {
          ev.preventDefault();
          var from = parseInt(ev.dataTransfer.getData("text/plain"), 10);
          if (isNaN(from)) return;
          var to = after(ev, li) ? i + 1 : i;
          if (from < to) to -= 1;
          clearDrop();
          move(from, to);
        });
        listEl.appendChild(li);
        if (i === state.k - 1) listEl.appendChild(el("li", { className: "ex-cut", "aria-hidden": "true" }, "k = " + state.k));
      });
      if (state.k > n) {
        listEl.appendChild(el("li", { className: "ex-cut beyond", "aria-hidden": "true" },
          "k = " + state.k + ": " + (state.k - n) + " past the end of the list"));
      }
    }

    function after(ev, li) {
      var r = li.getBoundingClientRect();
      return ev.clientY > r.top + r.height / 2;
    }

    function clearDrop() {
      Array.prototype.forEach.call(listEl.querySelectorAll(".drop-before, .drop-after"), function (x) {
        x.classList.remove("drop-before", "drop-after");
      });
    }

    function move(from, to, focusSel) {
      if (to < 0 || to >= state.items.length || from === to) return;
      var it = state.items.splice(from, 1)[0];
      state.items.splice(to, 0, it);
      update(it.doc, focusSel);
    }

    function onKey(ev, i) {
      if (ev.target.tagName === "BUTTON" && (ev.key === "Enter" || ev.key === " ")) return;
      var it = state.items[i];
      if (ev.altKey && (ev.key === "ArrowUp" || ev.key === "ArrowDown")) {
        ev.preventDefault();
        move(i, ev.key === "ArrowUp" ? i - 1 : i + 1);
        return;
      }
      if (!ev.altKey && (ev.key === "ArrowUp" || ev.key === "ArrowDown")) {
        ev.preventDefault();
        var rows = listEl.querySelectorAll(".ex-row");
        var j = ev.key === "ArrowUp" ? i - 1 : i + 1;
        if (j >= 0 && j < rows.length) rows[j].focus();
        return;
      }
      if (/^[0-3]$/.test(ev.key)) {
        ev.preventDefault();
        it.grade = parseInt(ev.key, 10);
        update(it.doc);
      }
    }

    function valueCell(res) {
      if (!res) return { text: "\u2014", cls: "na", key: null };
      if (res.outcome === "raise") return { text: "error", cls: "raise", key: "raise" };
      if (res.outcome === "skip") return { text: "skipped", cls: "skip", key: "skip" };
      if (res.outcome === "not_here") return { text: "not here", cls: "na", key: "not_here" };
      return { text: fmt(res.value), cls: "", key: isNaN(res.value) ? "NaN" : res.value };
    }

    var TINTS = ["#dbeafe", "#fde68a", "#bbf7d0", "#fecaca", "#e9d5ff", "#fed7aa", "#a5f3fc", "#f5d0fe", "#d9f99d"];

    // per axis: the value most groups hold (ties: the first seen), to name what sets a row apart
    function majority(cols, axis) {
      var count = {}, best = null;
      cols.forEach(function (col) {
        var v = axisValues(col, axis).join(" / ");
        if (!v) return;
        count[v] = (count[v] || 0) + 1;
        if (best === null || count[v] > count[best]) best = v;
      });
      return best;
    }

    // one row per group of entries that compute every measure alike; one column per measure
    function renderTable() {
      var grades = state.items.map(function (it) { return it.grade; });
      var k = state.k;
      var cols = columns();
      var results = cols.map(function (col) {
        var out = {};
        MEASURES.forEach(function (mid) {
          var p = profileOf(col.entry, mid);
          // a profile with not_here is shown as not computed (evaluate says so)
          out[mid] = p ? evaluate(grades, k, p)[mid] : null;
        });
        return out;
      });
      var marks = notes(grades, cols, results);
      tableEl.textContent = "";
      var thead = el("thead");
      var hr = el("tr");
      hr.appendChild(el("th", { className: "corner" }, "entries (alike share a row)"));
      MEASURES.forEach(function (mid) {
        var th = el("th", { className: "m", title: FORMULAS[mid], "data-measure": mid }, mid.replace("@k", "@" + k));
        if (marks.rows[mid]) th.appendChild(el("sup", null, marks.rows[mid]));
        hr.appendChild(th);
      });
      thead.appendChild(hr);
      tableEl.appendChild(thead);
      // per measure, distinct values in a fixed order, so equal values get equal tints
      var order = {};
      MEASURES.forEach(function (mid) {
        var distinct = [];
        results.forEach(function (r) {
          var c = valueCell(r[mid]);
          if (c.key !== null && distinct.indexOf(c.key) < 0) distinct.push(c.key);
        });
        var numeric = distinct.filter(function (x) { return typeof x === "number"; }).sort(function (a, b) { return b - a; });
        order[mid] = numeric.concat(distinct.filter(function (x) { return typeof x !== "number"; }));
      });
      var common = {};
      data.axes.forEach(function (axis) { common[axis] = majority(cols, axis); });
      var tbody = el("tbody");
      cols.forEach(function (col, ci) {
        var tr = el("tr", { "data-col": String(ci) });
        var th = el("th", { className: "grp", "data-col": String(ci), "data-entries": col.entries.join(" ") });
        var names = el("div", { className: "ents" });
        col.entries.forEach(function (name) { names.appendChild(el("code", { className: "ent" }, name)); });
        th.appendChild(names);
        var chips = el("div", { className: "apart" });
        var full = [];
        data.axes.forEach(function (axis) {
          var v = axisValues(col, axis).join(" / ");
          if (!v) return;
          full.push(axis + "=" + v);
          if (v !== common[axis]) {
            var chip = el("span", { className: "pchip", "data-axis": axis, title: data.meanings[axis] }, axis + "=" + v);
            var colour = (data.colours[axis] || {})[v];
            if (colour) chip.style.background = colour;
            chips.appendChild(chip);
          }
        });
        th.title = full.join("\n");
        if (chips.childNodes.length) th.appendChild(chips);
        tr.appendChild(th);
        MEASURES.forEach(function (mid) {
          var res = results[ci][mid];
          var c = valueCell(res);
          var td = el("td", { className: "v " + c.cls, "data-col": String(ci), "data-measure": mid });
          if (res) {
            td.setAttribute("data-value", res.outcome === "value" ? String(res.value) : res.outcome);
            td.title = col.entries.join(", ") + ": " + (res.not_here
              ? "not computed here: the explorer does not compute " + res.not_here.join(", ")
              : res.empty ? "0/0, empty_query=" + res.rule + " gives " + c.text : c.text);
            if (order[mid].length > 1) td.style.background = TINTS[order[mid].indexOf(c.key) % TINTS.length];
          }
          td.appendChild(document.createTextNode(c.text));
          if (res && res.empty) td.appendChild(el("sup", null, "\u2021"));
          tr.appendChild(td);
        });
        tbody.appendChild(tr);
      });
      tableEl.appendChild(tbody);
      notesEl.textContent = "";
      marks.notes.forEach(function (t) { notesEl.appendChild(el("li", null, t)); });
    }

    function names(cols, pred) {
      var out = [];
      cols.forEach(function (col, ci) { if (pred(col, ci)) out = out.concat(col.entries); });
      return out.join(", ");
    }

    function notes(grades, cols, results) {
      var n = grades.length, k = state.k;
      var rows = {}, out = [];
      var none = data.entries.filter(function (e) { return !computesAny(e); }).map(function (e) { return e.entry; });
      if (none.length) {
        out.push("Not shown: " + none.join(", ") + " (computes none of these measures at a cutoff the reader sets).");
      }
      if (state.gain !== "declared") {
        out.push("Gain switched to " + state.gain + " for every entry: a what-if, not what each library does by default.");
      }
      if (k > n) {
        rows["P@k"] = "\u2020";
        var byK = names(cols, function (col) { var p = profileOf(col.entry, "P@k"); return p && p.k_beyond_list === "k"; });
        var byN = names(cols, function (col) { var p = profileOf(col.entry, "P@k"); return p && p.k_beyond_list === "min_k_n"; });
        var t = "\u2020 k = " + k + " passes the end of the list (" + n + " documents): P@" + k +
          " divides by " + k + " under k_beyond_list=k" + (byK ? " (" + byK + ")" : "");
        if (byN) t += " and by " + n + " under k_beyond_list=min_k_n (" + byN + ")";
        out.push(t + ".");
      }
      if (n === 1) {
        var refuse = names(cols, function (col) {
          return MEASURES.some(function (mid) { var p = profileOf(col.entry, mid); return p && p.single_document === "raise"; });
        });
        if (refuse) out.push("A one-document list: single_document=raise refuses it (" + refuse + "), as scikit-learn refuses a one-document row.");
      }
      var emptyCols = {};
      cols.forEach(function (col, ci) {
        MEASURES.forEach(function (mid) {
          var r = results[ci][mid];
          if (r && r.empty) emptyCols[ci] = r.rule;
        });
      });
      var emptyIdx = Object.keys(emptyCols);
      if (emptyIdx.length) {
        var byRule = {};
        emptyIdx.forEach(function (ci) {
          var rule = emptyCols[ci];
          byRule[rule] = (byRule[rule] || []).concat(cols[ci].entries);
        });
        var says = { zero: "0", one: "1", nan: "NaN", skip: "skipped (a mean over no query has no value)", raise: "an error" };
        var parts = Object.keys(byRule).sort().map(function (rule) {
          return "empty_query=" + rule + " gives " + says[rule] + " (" + byRule[rule].join(", ") + ")";
        });
        out.push("\u2021 Nothing here is relevant, so these measures are 0/0: " + parts.join("; ") + ".");
      }
      // AP@k: one sum of precisions, divided three ways (when the rows use more than one)
      var dens = {}, level = null;
      cols.forEach(function (col) {
        var p = profileOf(col.entry, "AP@k");
        if (p) {
          dens[p.ap_denominator] = (dens[p.ap_denominator] || []).concat(col.entries);
          if (level === null) level = p.relevance_threshold;
        }
      });
      var apRel = 0, apTop = 0;
      for (var a = 0; a < n; a++) { if (grades[a] >= level) { apRel++; if (a < k) apTop++; } }
      if (Object.keys(dens).length > 1 && apRel > 0) {
        var how = { relevant: "by R = " + apRel, retrieved_relevant: "by the " + apTop + " relevant in the top " + k,
                    min_k_relevant: "by min(k, R) = " + Math.min(k, apRel), k: "by k = " + k };
        out.push("AP@" + k + " divides one sum of precisions at relevant ranks " + Object.keys(dens).sort().map(function (d) {
          return how[d] + " under ap_denominator=" + d + " (" + dens[d].join(", ") + ")";
        }).join(", ") + ".");
      }
      var first = 0, rrProfile = null;
      cols.forEach(function (col) { rrProfile = rrProfile || profileOf(col.entry, "RR@k"); });
      var rrLevel = rrProfile ? rrProfile.relevance_threshold : 1;
      for (var i = 0; i < n; i++) { if (grades[i] >= rrLevel) { first = i + 1; break; } }
      if (first > k) {
        var hon = names(cols, function (col) { var p = profileOf(col.entry, "RR@k"); return p && p.rr_cutoff === "honour"; });
        var ign = names(cols, function (col) { var p = profileOf(col.entry, "RR@k"); return p && p.rr_cutoff === "ignore"; });
        if (hon && ign) {
          out.push("The first relevant document is at rank " + first + ", below k = " + k + ": RR@" + k +
            " is 0 under rr_cutoff=honour (" + hon + ") and 1/" + first + " under rr_cutoff=ignore (" + ign + ").");
        }
      }
      var off = {};
      cols.forEach(function (col) {
        MEASURES.forEach(function (mid) {
          var p = profileOf(col.entry, mid);
          if (p && p.not_here) p.not_here.forEach(function (x) { off[x] = (off[x] || []).concat(col.entries); });
        });
      });
      Object.keys(off).sort().forEach(function (x) {
        var who = off[x].filter(function (v, i) { return off[x].indexOf(v) === i; });
        out.push("Not computed here: " + x + " (" + who.join(", ") + "), a convention the explorer does not compute.");
      });
      out.push("Not read here, as they cannot change a value on this list: " + Object.keys(data.idle).map(function (a) {
        return a + " (" + data.idle[a] + ")";
      }).join("; ") + ".");
      return { rows: rows, notes: out };
    }

    function update(focusDoc, focusSel) {
      var n = state.items.length;
      presetNote.textContent = "";  // a preset's note describes the preset, not later edits
      kEl.max = String(n + 2);
      if (state.k > n + 2) state.k = n + 2;
      if (state.k < 1) state.k = 1;
      kEl.value = String(state.k);
      kOut.textContent = String(state.k);
      renderList();
      renderTable();
      if (focusDoc) {
        var row = listEl.querySelector('.ex-row[data-doc="' + CSS.escape(focusDoc) + '"]');
        if (row) {
          var target = focusSel ? row.querySelector(focusSel) : row;
          (target && !target.disabled ? target : row).focus();
        }
      }
    }

    var PRESETS = {
      "default": function () {
        setItems(fresh(data.default_list), 5);
        return "The default list: grades " + data.default_list.join(", ") + ".";
      },
      "ideal": function () {
        var items = state.items.slice().sort(function (a, b) { return b.grade - a.grade; });
        setItems(items);
        return "The same documents in the ideal order: every nDCG is 1 where something is relevant.";
      },
      "buried": function () {
        setItems(fresh([3, 0, 0, 0, 0, 3, 2, 2, 1, 1]), 5);
        return "One relevant document on top and the rest buried below k = 5: RR is 1 while P@5, R@5 and AP@5 are low.";
      },
      "swap": function () {
        var items = fresh(data.default_list);
        var t = items[4]; items[4] = items[5]; items[5] = t;
        setItems(items, 5);
        return "The default list with ranks 5 and 6 swapped: the grade-3 document crosses into the top 5. P@5, R@5, nDCG@5 and DCG@5 rise; RR and RR@5 stay (rank 1 is still relevant); nDCG over the whole list moves much less.";
      },
      "diverge": function () {
        var n = Math.min(state.items.length, 10);
        var found = divergeMost(n, state.k);
        if (!found.grades) return "";
        setItems(fresh(found.grades));
        return "Of all " + Math.pow(4, n) + " lists of " + n + " documents with grades 0-3, this one's nDCG@" +
          state.k + " differs most between linear and exponential gain (by " + found.difference.toFixed(4) +
          "; switch the gain to see it).";
      },
      "none": function () {
        setItems(state.items.map(function (it) { return { doc: it.doc, grade: 0 }; }));
        return "Nothing relevant: every measure is 0/0, and each entry's empty_query decides what it reports.";
      },
      "equal": function () {
        setItems(state.items.map(function (it) { return { doc: it.doc, grade: 2 }; }));
        return "Every document equally relevant: any order is ideal.";
      }
    };

    Array.prototype.forEach.call(root.querySelectorAll("[data-preset]"), function (b) {
      b.addEventListener("click", function () {
        presetNote.textContent = PRESETS[b.getAttribute("data-preset")]();
      });
    });
    kEl.addEventListener("input", function () { state.k = parseInt(kEl.value, 10); update(); });
    Array.prototype.forEach.call(root.querySelectorAll('input[name="ex-gain"]'), function (r) {
      r.addEventListener("change", function () { if (r.checked) { state.gain = r.value; update(); } });
    });
    document.getElementById("ex-add").addEventListener("click", function () {
      var used = state.items.map(function (it) { return it.doc; });
      var d = 1;
      while (used.indexOf("d" + d) >= 0) d++;
      state.items.push({ doc: "d" + d, grade: 0 });
      update();
    });

    // the picker: a query of the input, its ranked list as picker.py made it
    var pickEl = document.getElementById("ex-query");
    if (pickEl && data.queries.length) {
      document.getElementById("ex-pick").hidden = false;
      data.queries.forEach(function (q, i) {
        pickEl.appendChild(el("option", { value: String(i) }, q.case + " / " + q.qid));
      });
      pickEl.addEventListener("change", function () {
        if (pickEl.value === "") { presetNote.textContent = PRESETS["default"](); return; }
        presetNote.textContent = pickQuery(data.queries[+pickEl.value]);
      });
    }

    function pickQuery(q) {
      var shown = q.docs.length - q.appended;
      var items = q.docs.map(function (d, i) { return { doc: d[0], grade: d[1], rank: d[2], extra: i >= shown }; });
      setItems(items, Math.min(state.k, items.length + 2));
      var t = "Query " + q.qid + " of " + q.case + ": " + (q.cut ? "the top " + shown + " of its " + q.retrieved : "its " + shown) +
        " ranked documents in the run's order, ties by document id descending (trec_eval's rule), each with its judged grade (unjudged: 0).";
      if (q.appended) t += " " + q.appended + " relevant judged document" + (q.appended === 1 ? "" : "s") + " the list left out " + (q.appended === 1 ? "is" : "are") + " appended below it, marked: here " + (q.appended === 1 ? "it counts" : "they count") + " as ranked, so whole-list measures (RR, AP, nDCG) can differ from the run's.";
      if (q.changed) t += " " + q.changed + " label" + (q.changed === 1 ? " is" : "s are") + " not an integer from 0: negative read as 0, fractional truncated.";
      if (q.named_like_query) t += " A document named like the query is left out.";
      return t;
    }

    api.state = state;
    api.columns = columns;
    api.profileOf = profileOf;
    api.setList = function (grades, k) { setItems(fresh(grades), k); };
    presetNote.textContent = PRESETS["default"]();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
