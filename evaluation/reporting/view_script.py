"""The script of the ``envsim view`` page: a JSON diff (``DIFF_SCRIPT``) and the page that renders the embedded runs
with it (``PAGE_SCRIPT``); ``SCRIPT`` is both, as the page carries it (its sha256 is in the page's
Content-Security-Policy).

``DIFF_SCRIPT`` compares two JSON values as JSON: objects key by key (key order never counts), lists item by item
(equal items aligned by a longest common subsequence, the rest paired in order and compared inside), numbers by
value. It returns aligned rows ``[tag, expected line, predicted line]`` (tag ``=`` same, ``~`` changed, ``-`` only
expected, ``+`` only predicted; a side is ``null`` where it has no line) of both values indented as JSON.

``PAGE_SCRIPT`` builds the page with DOM calls and ``textContent`` only (never ``innerHTML``, links or attributes a
value could turn into code) and renders one page of samples at a time: it decompresses (``DecompressionStream``) the
chunks holding the details of the samples a page shows, builds their nodes when first shown, and decompresses a chunk
of prompts and answers only when one is opened. ``data-render-ms`` on ``<body>`` says when the first page was built
and laid out (milliseconds since navigation), ``data-rendered`` how many samples the page shows.
"""

from __future__ import annotations

DIFF_SCRIPT = r"""
var envsimDiff = (function () {
  "use strict";
  var MAX_DEPTH = 200, MAX_ROWS = 4000, MAX_LINE = 2000, ALIGN_CELLS = 250000;
  var canonical = new WeakMap();
  function kind(v) { return v === null ? "null" : Array.isArray(v) ? "array" : typeof v; }
  function own(o, k) { return Object.prototype.hasOwnProperty.call(o, k); }
  // Canonical JSON text (keys sorted, numbers as JSON writes them): equal texts are equal JSON values.
  function canon(v, depth) {
    var k = kind(v), c;
    if (k !== "array" && k !== "object") { return JSON.stringify(v); }
    c = canonical.get(v);
    if (c !== undefined) { return c; }
    depth = depth || 0;
    if (depth >= MAX_DEPTH) {
      c = JSON.stringify(v);
    } else if (k === "array") {
      c = "[" + v.map(function (x) { return canon(x, depth + 1); }).join(",") + "]";
    } else {
      c = "{" + Object.keys(v).sort().map(function (key) {
        return JSON.stringify(key) + ":" + canon(v[key], depth + 1);
      }).join(",") + "}";
    }
    canonical.set(v, c);
    return c;
  }
  function equal(a, b) { return canon(a) === canon(b); }
  // Pairs [i, j] aligning lists a and b (-1: no partner). Equal items are matched by a longest common subsequence
  // (equal-length lists position by position when that changes no more items); unmatched runs are paired in order.
  function align(a, b) {
    var ca = a.map(function (v) { return canon(v); }), cb = b.map(function (v) { return canon(v); });
    var n = a.length, m = b.length, pairs = [], s = 0, e = 0, i, j, k;
    while (s < n && s < m && ca[s] === cb[s]) { pairs.push([s, s]); s++; }
    while (e < n - s && e < m - s && ca[n - 1 - e] === cb[m - 1 - e]) { e++; }
    var na = n - s - e, nb = m - s - e, matches = [];
    if (na > 0 && nb > 0 && na * nb <= ALIGN_CELLS) {
      var w = nb + 1, t = new Uint32Array((na + 1) * w);
      for (i = na - 1; i >= 0; i--) {
        for (j = nb - 1; j >= 0; j--) {
          t[i * w + j] = ca[s + i] === cb[s + j] ? t[(i + 1) * w + j + 1] + 1
            : Math.max(t[(i + 1) * w + j], t[i * w + j + 1]);
        }
      }
      i = 0; j = 0;
      while (i < na && j < nb) {
        if (ca[s + i] === cb[s + j]) { matches.push([i, j]); i++; j++; }
        else if (t[(i + 1) * w + j] >= t[i * w + j + 1]) { i++; } else { j++; }
      }
    }
    var cost = 0, pi = 0, pj = 0;
    matches.concat([[na, nb]]).forEach(function (mt) {
      cost += Math.max(mt[0] - pi, mt[1] - pj);
      pi = mt[0] + 1; pj = mt[1] + 1;
    });
    if (na === nb) {
      var positional = 0;
      for (k = 0; k < na; k++) { if (ca[s + k] !== cb[s + k]) { positional++; } }
      if (positional <= cost) { matches = []; }
    }
    pi = 0; pj = 0;
    matches.concat([[na, nb]]).forEach(function (mt) {
      var gi = mt[0] - pi, gj = mt[1] - pj;
      for (k = 0; k < Math.max(gi, gj); k++) { pairs.push([k < gi ? s + pi + k : -1, k < gj ? s + pj + k : -1]); }
      if (mt[0] < na) { pairs.push([s + mt[0], s + mt[1]]); }
      pi = mt[0] + 1; pj = mt[1] + 1;
    });
    for (k = 0; k < e; k++) { pairs.push([n - e + k, m - e + k]); }
    return pairs;
  }
  function lines(v, ind, prefix, comma) {
    var text = JSON.stringify(v, null, 2);
    var out = (text === undefined ? "null" : text).split("\n");
    return out.map(function (line, i) {
      return ind + (i === 0 ? prefix : "") + line + (i === out.length - 1 ? comma : "");
    });
  }
  // Rows of the JSON diff of a (expected) and b (predicted); at most MAX_ROWS (then a last row says so).
  function diffRows(a, b) {
    var rows = [], dropped = 0;
    function clip(s) { return s === null || s.length <= MAX_LINE ? s : s.slice(0, MAX_LINE) + " \u2026"; }
    function push(tag, l, r) {
      if (rows.length >= MAX_ROWS) { dropped++; return; }
      rows.push([tag, clip(l), clip(r)]);
    }
    function only(tag, ls) { ls.forEach(function (l) { push(tag, tag === "-" ? l : null, tag === "+" ? l : null); }); }
    function walk(x, y, ind, px, py, cx, cy, depth) {
      var kx = kind(x), ky = kind(y), k;
      if (equal(x, y)) {
        var lx = lines(x, ind, px, cx), ly = lines(x, ind, py, cy);
        for (k = 0; k < lx.length; k++) { push("=", lx[k], ly[k]); }
      } else if (depth < MAX_DEPTH && kx === "object" && ky === "object") {
        push("=", ind + px + "{", ind + py + "{");
        var keysX = Object.keys(x), keysY = Object.keys(y), inX = new Set(keysX), inY = new Set(keysY);
        var seenX = 0, seenY = 0, inner = ind + "  ";
        keysX.concat(keysY.filter(function (key) { return !inX.has(key); })).forEach(function (key) {
          var hx = inX.has(key), hy = inY.has(key), name = JSON.stringify(key) + ": ";
          if (hx) { seenX++; }
          if (hy) { seenY++; }
          var comX = seenX < keysX.length ? "," : "", comY = seenY < keysY.length ? "," : "";
          if (hx && hy) { walk(x[key], y[key], inner, name, name, comX, comY, depth + 1); }
          else if (hx) { only("-", lines(x[key], inner, name, comX)); }
          else { only("+", lines(y[key], inner, name, comY)); }
        });
        push("=", ind + "}" + cx, ind + "}" + cy);
      } else if (depth < MAX_DEPTH && kx === "array" && ky === "array") {
        push("=", ind + px + "[", ind + py + "[");
        var nx = 0, ny = 0, inside = ind + "  ";
        align(x, y).forEach(function (p) {
          if (p[0] >= 0) { nx++; }
          if (p[1] >= 0) { ny++; }
          var comX = nx < x.length ? "," : "", comY = ny < y.length ? "," : "";
          if (p[0] >= 0 && p[1] >= 0) { walk(x[p[0]], y[p[1]], inside, "", "", comX, comY, depth + 1); }
          else if (p[0] >= 0) { only("-", lines(x[p[0]], inside, "", comX)); }
          else { only("+", lines(y[p[1]], inside, "", comY)); }
        });
        push("=", ind + "]" + cx, ind + "]" + cy);
      } else {
        var ax = lines(x, ind, px, cx), ay = lines(y, ind, py, cy);
        for (k = 0; k < Math.max(ax.length, ay.length); k++) {
          push("~", k < ax.length ? ax[k] : null, k < ay.length ? ay[k] : null);
        }
      }
    }
    walk(a, b, "", "", "", "", "", 0);
    if (dropped) { rows.push(["=", "\u2026 (" + dropped + " more lines not shown)", null]); }
    return rows;
  }
  // Rows of two texts line by line (values embedded as text: too large or too deep to diff as JSON).
  function textRows(a, b) {
    var la = a.split("\n"), lb = b.split("\n"), rows = [], tag = a === b ? "=" : "~";
    for (var k = 0; k < Math.max(la.length, lb.length) && k < MAX_ROWS; k++) {
      rows.push([tag, k < la.length ? la[k] : null, k < lb.length ? lb[k] : null]);
    }
    return rows;
  }
  // Rows of two cells ({v: value} | {text: string} | null: not available; a missing side marks nothing).
  function cellText(c) { return own(c, "text") ? String(c.text) : lines(c.v, "", "", "").join("\n"); }
  function cellRows(a, b) {
    var text = cellText;
    if (a && b) { return own(a, "v") && own(b, "v") ? diffRows(a.v, b.v) : textRows(text(a), text(b)); }
    var present = a || b;
    if (!present) { return []; }
    return text(present).split("\n").slice(0, MAX_ROWS).map(function (l) { return ["n", a ? l : null, b ? l : null]; });
  }
  return {canon: canon, equal: equal, align: align, diffRows: diffRows, cellRows: cellRows, cellText: cellText};
})();
"""

PAGE_SCRIPT = r"""
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("envsim-data").textContent);
  var SIDES = ["observation", "state"], FOLD = 12, KEEP = 3, VALUE_CHARS = 400;
  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) { node.className = cls; }
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    return node;
  }
  function add(parent) {
    for (var i = 1; i < arguments.length; i++) { if (arguments[i]) { parent.appendChild(arguments[i]); } }
    return parent;
  }
  function table(head, rows, numeric) {
    var t = el("table"), tr = el("tr");
    head.forEach(function (h) { add(tr, el("th", null, h)); });
    add(t, tr);
    rows.forEach(function (row) {
      var r = el("tr");
      row.forEach(function (cell, i) { add(r, el("td", numeric && i > 0 ? "num" : null, cell)); });
      add(t, r);
    });
    return t;
  }
  function classText(counts) {
    var parts = [];
    Object.keys(counts || {}).forEach(function (k) { parts.push(counts[k] + "\u00d7 " + k); });
    return parts.length ? parts.join(", ") : "\u2013";
  }
  function failureSection(failure) {
    var box = el("div");
    var overall = failure.failure_classes || {};
    add(box, el("h3", null, "Failure classes"));
    add(box, table(["side", "failures", "classes"], SIDES.map(function (side) {
      var counts = overall[side] || {}, total = 0;
      Object.keys(counts).forEach(function (k) { total += counts[k]; });
      return [side, String(total), classText(counts)];
    })));
    ["stratum", "env", "tool"].forEach(function (grouping) {
      var groups = failure["failure_classes_by_" + grouping];
      if (!groups || !Object.keys(groups).length) { return; }
      var d = add(el("details"), el("summary", null, "by " + grouping));
      add(d, table([grouping, "observation", "state"], Object.keys(groups).map(function (g) {
        return [g, classText(groups[g].observation), classText(groups[g].state)];
      })));
      add(box, d);
    });
    return box;
  }
  var RATE_NAMES = {fm: "FM %", fm_json: "FM-json %", cm: "CM %", cm_numeric: "CM-numeric %",
                    cm_lenient: "CM-lenient %", cm_original: "CM-original %"};
  function runSection(run) {
    var s = el("section", "run");
    add(s, el("h2", null, run.label + " (" + run.kind + ")"), el("div", "muted", run.path));
    run.notes.forEach(function (n) { add(s, el("p", "note", n)); });
    run.lines.forEach(function (n) { add(s, el("p", null, n)); });
    if (run.figures.length) {
      var rates = Object.keys(RATE_NAMES).filter(function (r) { return r in run.figures[0]; });
      add(s, table(["group", "n"].concat(rates.map(function (r) { return RATE_NAMES[r]; })),
        run.figures.map(function (f) { return [f.group, String(f.n)].concat(rates.map(function (r) { return f[r]; })); }),
        true));
      add(s, el("p", "muted", "FM and CM are exact (the headline figures); FM-json compares string observations " +
        "holding JSON as JSON values, CM-numeric accepts numbers within 1e-9 relative."));
    }
    run.plots.forEach(function (p) {
      if (!/^[A-Za-z0-9+\/=]*$/.test(p.png)) { return; }
      var img = el("img", "plot");
      img.alt = p.title;
      img.src = "data:image/png;base64," + p.png;
      add(s, el("h3", null, p.title), img);
    });
    add(s, failureSection(run.failure));
    return s;
  }
  var TAGS = {"=": "", "~": "d-changed", "-": "d-left", "+": "d-right", "n": ""};
  function diffRow(row) {
    var tr = el("tr", TAGS[row[0]] || ""), l = el("td", "l"), r = el("td", "r");
    if (row[1] !== null) { add(l, el("pre", null, row[1])); }
    if (row[2] !== null) { add(r, el("pre", null, row[2])); }
    return add(tr, l, r);
  }
  // A diff table; runs of more than FOLD equal lines are folded behind a button that unfolds them in place.
  function diffTable(rows, titles) {
    var t = el("table", "diff"), head = el("tr"), k = 0;
    add(head, el("th", null, titles[0]), el("th", null, titles[1]));
    add(t, head);
    while (k < rows.length) {
      var end = k;
      while (end < rows.length && rows[end][0] === "=") { end++; }
      if (end - k > FOLD) {
        rows.slice(k, k + KEEP).forEach(function (row) { add(t, diffRow(row)); });
        var hidden = rows.slice(k + KEEP, end - KEEP), fold = el("tr", "fold"), td = el("td");
        td.colSpan = 2;
        var button = el("button", null, "\u22ef " + hidden.length + " equal lines");
        button.type = "button";
        button.addEventListener("click", (function (fold, hidden) {
          return function () {
            hidden.forEach(function (row) { t.insertBefore(diffRow(row), fold); });
            t.removeChild(fold);
          };
        })(fold, hidden));
        add(t, add(fold, add(td, button)));
        rows.slice(end - KEEP, end).forEach(function (row) { add(t, diffRow(row)); });
        k = end;
      } else if (end > k) {
        rows.slice(k, end).forEach(function (row) { add(t, diffRow(row)); });
        k = end;
      } else {
        add(t, diffRow(rows[k]));
        k++;
      }
    }
    return t;
  }
  function sideTitles(title, pair) {
    return [title + ": expected" + (pair[0] ? "" : " (not available)"),
            "predicted" + (pair[1] ? "" : " (not available)")];
  }
  function valueText(c) {
    if (c === null || c === undefined) { return null; }
    var text = Object.prototype.hasOwnProperty.call(c, "text") ? String(c.text) : JSON.stringify(c.v);
    return text.length > VALUE_CHARS ? text.slice(0, VALUE_CHARS) + " \u2026" : text;
  }
  function change(oldCell, newCell, oldKnown, unchanged) {
    var box = el("div", "change");
    if (unchanged) { return add(box, el("span", "muted", "(unchanged)")); }
    if (oldKnown) {
      var o = valueText(oldCell);
      add(box, o === null ? el("span", "muted", "(absent)") : el("code", null, o), el("span", "arrow", " \u2192 "));
    }
    var n = valueText(newCell);
    return add(box, n === null ? el("span", "muted", "(absent)") : el("code", null, n));
  }
  function container(c) {
    return c && Object.prototype.hasOwnProperty.call(c, "v") && c.v !== null && typeof c.v === "object";
  }
  // The changed paths of the true call beside the prediction's, old -> new, marked by status.
  function changesTable(changes) {
    var box = el("div", "changes");
    add(box, el("div", "subhead", "state changes (changed paths)"));
    if (!changes) { return add(box, el("div", "muted", "not available: the benchmark record cannot be read here")); }
    if (changes.note) { add(box, el("div", "muted", changes.note)); }
    if (!changes.rows.length) { return add(box, el("div", "muted", "no path changes on either side")); }
    var t = el("table", "changes-table"), head = el("tr");
    add(head, el("th", null, "path"), el("th", null, "expected" + (changes.expected ? "" : " (not available)")),
        el("th", null, "predicted" + (changes.predicted ? "" : " (not available)")), el("th", null, ""));
    add(t, head);
    changes.rows.forEach(function (row) {
      var status = row[1], tr = el("tr", status ? "c-" + status : "");
      var left = el("td"), right = el("td");
      if (changes.expected) { add(left, change(row[2], row[3], changes.old_known, status === "spurious")); }
      if (changes.predicted) { add(right, change(row[4], row[5], changes.old_known, status === "missed")); }
      if (status === "differs" && container(row[3]) && container(row[5])) {
        var d = add(el("details"), el("summary", null, "JSON diff"));
        d.addEventListener("toggle", function () {
          if (d.open && d.childNodes.length === 1) {
            add(d, diffTable(envsimDiff.diffRows(row[3].v, row[5].v), ["expected", "predicted"]));
          }
        });
        add(right, d);
      }
      add(t, add(tr, add(el("td"), el("code", null, row[0])), left, right, el("td", "status", status || "")));
    });
    return add(box, t);
  }
  var chunks = new Map();  // "details|texts:run:chunk" -> Promise of the chunk's items
  function inflate(text) {
    if (typeof DecompressionStream === "undefined") {
      return Promise.reject(new Error("this browser cannot decompress the page's texts (no DecompressionStream)"));
    }
    var binary = atob(text), bytes = new Uint8Array(binary.length);
    for (var i = 0; i < binary.length; i++) { bytes[i] = binary.charCodeAt(i); }
    return new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate"))).text();
  }
  function packed(kind, r, at) {
    var key = kind + ":" + r + ":" + at[0];
    if (!chunks.has(key)) { chunks.set(key, inflate(data.runs[r][kind][at[0]]).then(JSON.parse)); }
    return chunks.get(key).then(function (list) { return list[at[1]]; });
  }
  function lazyText(label, r, sample, which) {
    var d = add(el("details"), el("summary", null, label));
    d.addEventListener("toggle", function () {
      if (!d.open || d.childNodes.length !== 1) { return; }
      var pre = add(d, el("pre", null, "(loading\u2026)"));
      packed("texts", r, sample.at).then(function (pair) { pre.textContent = String(pair[which]); },
                                         function (err) { pre.textContent = "(cannot be shown: " + err.message + ")"; });
    });
    return d;
  }
  function mark(ok) { return el("span", ok ? "pass" : "fail", ok ? "\u2713" : "\u2717"); }
  function runColumn(r, sample) {
    var run = data.runs[r], col = el("div", "runcol"), detail = sample.detail;
    add(col, el("div", "muted", run.label));
    var head = el("div");
    if (sample.status !== "scored") {
      add(head, el("span", "fail", sample.status));
    } else {
      add(head, el("span", null, "FM "), mark(sample.fm), el("span", null, " CM "), mark(sample.cm));
      if (sample.fm_json !== null && sample.fm_json !== undefined) {
        add(head, el("span", "muted", " \u00b7 FM-json "), mark(sample.fm_json),
            el("span", "muted", " CM-numeric "), mark(sample.cm_numeric));
      }
    }
    SIDES.forEach(function (side) {
      if (sample.classes[side]) { add(head, el("span", "badge", side + ": " + sample.classes[side])); }
    });
    add(col, head);
    if (sample.reason) { add(col, el("div", "muted", "reason: " + sample.reason)); }
    if (sample.predicted_missing) { add(col, el("div", "note", "no predicted answer to show (unparsed or not kept)")); }
    if (sample.expected_missing) {
      add(col, el("div", "note",
                  "no expected answer to show (the run's benchmark cannot be read here): nothing is marked"));
    }
    add(col, diffTable(envsimDiff.cellRows(detail.observation[0], detail.observation[1]),
                       sideTitles("observation", detail.observation)));
    var patch = el("div", "patchview");
    add(patch, changesTable(detail.changes),
        add(el("div"), el("div", "subhead", "patch ops"),
            diffTable(envsimDiff.cellRows(detail.patch[0], detail.patch[1]), sideTitles("patch", detail.patch))));
    add(col, patch, lazyText("prompt", r, sample, 0));
    if (sample.has_answer) { add(col, lazyText("answer", r, sample, 1)); }
    return col;
  }
  function passes(s) { return s.status === "scored" && s.fm && s.cm; }

  document.title = data.title;
  var root = document.getElementById("envsim-root");
  add(root, el("h1", null, data.title));
  data.runs.forEach(function (run) { add(root, runSection(run)); });

  var byId = new Map();
  data.runs.forEach(function (run, r) {
    run.samples.forEach(function (s) {
      if (!byId.has(s.id)) { byId.set(s.id, []); }
      byId.get(s.id)[r] = s;
    });
  });
  var values = {stratum: new Set(), cls: new Set(), env: new Set(), tool: new Set()};
  var items = [];
  byId.forEach(function (perRun, id) {
    var per = data.runs.map(function (run, r) { return perRun[r] || null; });
    var any = per.filter(function (s) { return s; });
    var first = any[0];
    var meta = {id: id, stratum: first.stratum, env: first.env, tool: first.env + "." + first.tool, cls: new Set(),
                fail: any.some(function (s) { return !passes(s); }),
                fmfail: any.some(function (s) { return !s.fm; }), cmfail: any.some(function (s) { return !s.cm; })};
    any.forEach(function (s) {
      SIDES.forEach(function (side) { if (s.classes[side]) { meta.cls.add(side + ": " + s.classes[side]); } });
    });
    values.stratum.add(meta.stratum); values.env.add(meta.env); values.tool.add(meta.tool);
    meta.cls.forEach(function (c) { values.cls.add(c); });
    items.push({id: id, per: per, first: first, count: any.length, meta: meta, node: null});
  });
  function build(item) {
    var node = el("article", "sample"), meta = item.meta, first = item.first;
    node.setAttribute("data-sample-id", item.id);
    add(node, add(el("header"), el("span", null, item.id),
                  el("span", "muted", " \u00b7 " + meta.tool + " \u00b7 " + meta.stratum)));
    add(node, add(el("div"), el("span", "muted", "call: "),
                  el("pre", null, first.detail.call === null ? "(not available: the benchmark record cannot be read here)"
                                                             : envsimDiff.cellText(first.detail.call))));
    if (item.count < data.runs.length && data.runs.length > 1) {
      add(node, el("div", "muted", "in " + item.count + " of " + data.runs.length + " runs"));
    }
    var cols = el("div", "cols cols-" + Math.min(4, item.count));
    item.per.forEach(function (s, r) { if (s) { add(cols, runColumn(r, s)); } });
    return add(node, cols);
  }

  var bar = el("div", "filters"), selects = {};
  function select(name, label, options) {
    var s = el("select");
    s.name = name;
    options.forEach(function (o) { var opt = el("option", null, o[1]); opt.value = o[0]; add(s, opt); });
    s.addEventListener("change", apply);
    selects[name] = s;
    add(bar, add(el("label", null, label + " "), s));
  }
  function choices(set) {
    return [["", "all"]].concat(Array.from(set).sort().map(function (v) { return [v, v]; }));
  }
  select("outcome", "pass/fail", [["", "all"], ["fail", "failed (any run)"], ["pass", "passed (every run)"],
                                  ["fmfail", "FM failed"], ["cmfail", "CM failed"]]);
  select("stratum", "stratum", choices(values.stratum));
  select("cls", "class", choices(values.cls));
  select("env", "environment", choices(values.env));
  select("tool", "tool", choices(values.tool));
  var search = el("input");
  search.type = "search";
  search.name = "id";
  search.placeholder = "sample id contains";
  search.addEventListener("input", apply);
  add(bar, add(el("label", null, "id "), search));
  select("size", "per page", [["50", "50"], ["20", "20"], ["100", "100"], ["200", "200"]]);
  var count = el("span", "muted");
  function pager() {
    var box = el("span", "pager"), prev = el("button", null, "\u25c0 previous");
    var next = el("button", null, "next \u25b6");
    prev.type = "button"; next.type = "button";
    prev.addEventListener("click", function () { turn(-1); });
    next.addEventListener("click", function () { turn(1); });
    add(box, prev, next);
    return {box: box, prev: prev, next: next};
  }
  var top = pager(), bottom = pager();
  add(bar, top.box, count);
  var list = el("div", "samples");
  add(root, el("h2", null, "Samples"), bar, list, bottom.box);
  var matching = [], page = 0, token = 0, rendered = false;
  // The details of an item's samples (decompressed once, kept on each sample).
  function ensure(item) {
    return Promise.all(item.per.map(function (s, r) {
      if (!s || s.detail) { return null; }
      return packed("details", r, s.at).then(function (detail) { s.detail = detail; });
    }));
  }
  function apply() {
    var v = function (n) { return selects[n].value; }, needle = search.value;
    matching = items.filter(function (item) {
      var m = item.meta, o = v("outcome");
      var ok = (!v("stratum") || m.stratum === v("stratum")) && (!v("env") || m.env === v("env")) &&
               (!v("tool") || m.tool === v("tool")) && (!v("cls") || m.cls.has(v("cls"))) &&
               (!needle || item.id.indexOf(needle) >= 0);
      if (o === "fail") { ok = ok && m.fail; } else if (o === "pass") { ok = ok && !m.fail; }
      else if (o === "fmfail") { ok = ok && m.fmfail; } else if (o === "cmfail") { ok = ok && m.cmfail; }
      return ok;
    });
    page = 0;
    render();
  }
  function turn(step) {
    page += step;
    render();
    bar.scrollIntoView();
  }
  function render() {
    var size = Number(selects.size.value) || 50, pages = Math.max(1, Math.ceil(matching.length / size));
    page = Math.min(Math.max(page, 0), pages - 1);
    var start = page * size, shown = matching.slice(start, start + size), mine = ++token;
    Promise.all(shown.map(ensure)).then(function () {
      if (mine !== token) { return; }
      while (list.firstChild) { list.removeChild(list.firstChild); }
      shown.forEach(function (item) {
        if (!item.node) { item.node = build(item); }
        add(list, item.node);
      });
      document.body.setAttribute("data-rendered", String(shown.length));
      if (!rendered) {
        rendered = true;
        void list.offsetHeight;  // style and layout of the first page done before the time is taken
        document.body.setAttribute("data-render-ms", String(Math.round(performance.now())));
      }
    }, function (err) {
      if (mine !== token) { return; }
      while (list.firstChild) { list.removeChild(list.firstChild); }
      add(list, el("p", "note", "the samples cannot be shown: " + err.message));
      document.body.setAttribute("data-rendered", "0");
    });
    count.textContent = "showing " + matching.length + " of " + items.length + " samples" +
      (pages > 1 ? " \u00b7 page " + (page + 1) + " of " + pages + " (" + (start + 1) + "\u2013" +
                   (start + shown.length) + ")" : "");
    [top, bottom].forEach(function (p) { p.prev.disabled = page === 0; p.next.disabled = page >= pages - 1; });
    bottom.box.hidden = pages < 2;
  }
  document.body.setAttribute("data-samples", String(items.length));
  apply();
})();
"""

SCRIPT = '"use strict";\n' + DIFF_SCRIPT + PAGE_SCRIPT
