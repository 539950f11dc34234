"""The self-contained HTML page of ``envsim view``: one file, inline style and script, no server, no network.

Untrusted data (answers, benchmark values, ids, model names) never becomes markup: it is embedded once as JSON in
``<script type="application/json">`` with ``<``, ``>``, ``&``, U+2028 and U+2029 written as ``\\u`` escapes (so no
``</script>`` or ``<!--`` can appear), and the page's own script renders it with DOM APIs and ``textContent``
only (no ``innerHTML``, no links, no attribute a value could turn into code). The page carries a
Content-Security-Policy that allows no request at all (``default-src 'none'``), images only as ``data:`` URLs,
and only its own style and script (by their sha256 hashes).
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
from typing import Any

STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:0 1.5em 3em;color:#1d1d1f;background:#fff}
h1{font-size:1.5em}h2{font-size:1.25em;margin-top:1.6em;border-bottom:1px solid #ccc}h3{font-size:1.05em}
table{border-collapse:collapse;margin:.4em 0}td,th{border:1px solid #ddd;padding:2px 8px;text-align:left;vertical-align:top}
th{background:#f4f4f6}td.num{text-align:right;font-variant-numeric:tabular-nums}
.note{color:#9a3412}.muted{color:#666}.plot{max-width:min(100%,760px);border:1px solid #eee;margin:.4em 0}
.filters{position:sticky;top:0;background:#fafafa;border:1px solid #ddd;padding:.5em;z-index:1}
.filters label{margin-right:1em;white-space:nowrap}
.sample{border:1px solid #ccc;border-radius:4px;margin:.8em 0;padding:.5em}
.sample>header{font-weight:600}.cols{display:grid;gap:.6em}.cols-1{grid-template-columns:1fr}
.cols-2{grid-template-columns:1fr 1fr}.cols-3{grid-template-columns:repeat(3,1fr)}
.cols-4{grid-template-columns:repeat(4,1fr)}.runcol{min-width:0;border-top:3px solid #ddd;padding-top:.3em}
.pass{color:#166534}.fail{color:#b91c1c}.badge{display:inline-block;border:1px solid #ccc;border-radius:3px;
padding:0 4px;margin:0 2px;font-size:.85em}
pre{margin:0;white-space:pre-wrap;word-break:break-all;font:12px/1.35 ui-monospace,monospace}
.diff{width:100%;table-layout:fixed}.diff td{padding:0 4px;border:none;border-left:1px solid #eee}
.diff tr.d-changed td{background:#fef9c3}.diff tr.d-left td.l{background:#fee2e2}
.diff tr.d-right td.r{background:#dcfce7}.diff th{font-weight:normal;font-size:.85em}
details>summary{cursor:pointer;color:#1e40af}
[hidden]{display:none !important}
"""

SCRIPT = r"""
"use strict";
(function () {
  var data = JSON.parse(document.getElementById("envsim-data").textContent);
  var SIDES = ["observation", "state"];
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
  function diffTable(rows, title) {
    var t = el("table", "diff"), head = el("tr");
    add(head, el("th", null, title + ": expected"), el("th", null, "predicted"));
    add(t, head);
    var tags = {"=": "", "~": "d-changed", "-": "d-left", "+": "d-right"};
    rows.forEach(function (row) {
      var tr = el("tr", tags[row[0]] || ""), l = el("td", "l"), r = el("td", "r");
      add(l, el("pre", null, row[1]));
      add(r, el("pre", null, row[2]));
      add(t, add(tr, l, r));
    });
    return t;
  }
  function lazyText(label, text) {
    var d = add(el("details"), el("summary", null, label));
    d.addEventListener("toggle", function () {
      if (d.open && d.childNodes.length === 1) { add(d, el("pre", null, text)); }
    });
    return d;
  }
  function mark(ok) { return el("span", ok ? "pass" : "fail", ok ? "\u2713" : "\u2717"); }
  function runColumn(run, sample) {
    var col = el("div", "runcol");
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
    add(col, diffTable(sample.observation_diff, "observation"), diffTable(sample.patch_diff, "patch"));
    add(col, lazyText("prompt", sample.prompt));
    if (sample.answer !== null && sample.answer !== undefined) { add(col, lazyText("answer", sample.answer)); }
    return col;
  }
  function passes(s) { return s.status === "scored" && s.fm && s.cm; }

  document.title = data.title;
  var root = document.getElementById("envsim-root");
  add(root, el("h1", null, data.title));
  data.runs.forEach(function (run) { add(root, runSection(run)); });

  var order = [], byId = {};
  data.runs.forEach(function (run, r) {
    run.samples.forEach(function (s) {
      if (!Object.prototype.hasOwnProperty.call(byId, s.id)) { byId[s.id] = []; order.push(s.id); }
      byId[s.id][r] = s;
    });
  });
  var values = {stratum: {}, cls: {}, env: {}, tool: {}};
  var items = order.map(function (id) {
    var per = data.runs.map(function (run, r) { return byId[id][r] || null; });
    var any = per.filter(function (s) { return s; });
    var first = any[0];
    var meta = {stratum: first.stratum, env: first.env, tool: first.env + "." + first.tool, cls: {},
                fail: any.some(function (s) { return !passes(s); }),
                fmfail: any.some(function (s) { return !s.fm; }), cmfail: any.some(function (s) { return !s.cm; })};
    any.forEach(function (s) {
      SIDES.forEach(function (side) { if (s.classes[side]) { meta.cls[side + ": " + s.classes[side]] = true; } });
    });
    values.stratum[meta.stratum] = true; values.env[meta.env] = true; values.tool[meta.tool] = true;
    Object.keys(meta.cls).forEach(function (c) { values.cls[c] = true; });
    var node = el("article", "sample");
    node.setAttribute("data-sample-id", id);
    var header = add(el("header"), el("span", null, id), el("span", "muted", " \u00b7 " + meta.tool + " \u00b7 " + meta.stratum));
    add(node, header, add(el("div"), el("span", "muted", "call: "), el("pre", null, first.call)));
    var cols = el("div", "cols cols-" + Math.min(4, any.length));
    per.forEach(function (s, r) { if (s) { add(cols, runColumn(data.runs[r], s)); } });
    if (any.length < data.runs.length && any.length > 0 && data.runs.length > 1) {
      add(node, el("div", "muted", "in " + any.length + " of " + data.runs.length + " runs"));
    }
    add(node, cols);
    return {node: node, meta: meta};
  });

  var bar = el("div", "filters"), selects = {};
  function select(name, label, options) {
    var s = el("select");
    s.name = name;
    options.forEach(function (o) { var opt = el("option", null, o[1]); opt.value = o[0]; add(s, opt); });
    s.addEventListener("change", apply);
    selects[name] = s;
    add(bar, add(el("label", null, label + " "), s));
  }
  function choices(set) { return [["", "all"]].concat(Object.keys(set).sort().map(function (v) { return [v, v]; })); }
  select("outcome", "pass/fail", [["", "all"], ["fail", "failed (any run)"], ["pass", "passed (every run)"],
                                  ["fmfail", "FM failed"], ["cmfail", "CM failed"]]);
  select("stratum", "stratum", choices(values.stratum));
  select("cls", "class", choices(values.cls));
  select("env", "environment", choices(values.env));
  select("tool", "tool", choices(values.tool));
  var count = el("span", "muted");
  add(bar, count);
  var list = el("div", "samples");
  add(root, el("h2", null, "Samples"), bar, list);
  items.forEach(function (item) { add(list, item.node); });
  function apply() {
    var shown = 0;
    items.forEach(function (item) {
      var m = item.meta, v = function (n) { return selects[n].value; };
      var ok = (!v("stratum") || m.stratum === v("stratum")) && (!v("env") || m.env === v("env")) &&
               (!v("tool") || m.tool === v("tool")) && (!v("cls") || m.cls[v("cls")] === true);
      var o = v("outcome");
      if (o === "fail") { ok = ok && m.fail; } else if (o === "pass") { ok = ok && !m.fail; }
      else if (o === "fmfail") { ok = ok && m.fmfail; } else if (o === "cmfail") { ok = ok && m.cmfail; }
      item.node.hidden = !ok;
      shown += ok ? 1 : 0;
    });
    count.textContent = "showing " + shown + " of " + items.length + " samples";
  }
  apply();
  document.body.setAttribute("data-rendered", String(items.length));
})();
"""


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


CSP = ("default-src 'none'; script-src {script}; style-src {style}; img-src data:; base-uri 'none'; "
       "form-action 'none'")


def _finite(value: Any) -> Any:
    """``value`` with NaN / infinities (which JSON cannot hold) written as strings."""
    stack: list[Any] = [value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    while stack:
        node = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, child in list(items):
            if isinstance(child, float) and not math.isfinite(child):
                node[key] = str(child)
            elif isinstance(child, (dict, list)):
                stack.append(child)
    return value


def embed_json(data: Any) -> str:
    """``data`` as JSON text safe inside ``<script type="application/json">``: ``<``, ``>``, ``&``, U+2028 and
    U+2029 escaped (so neither ``</script>`` nor ``<!--`` can occur), lone surrogates escaped, no NaN."""
    try:
        text = json.dumps(data, ensure_ascii=False, allow_nan=False)
    except ValueError:
        text = json.dumps(_finite(data), ensure_ascii=False, allow_nan=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: escape every non-ASCII character instead
        text = json.dumps(data, ensure_ascii=True, allow_nan=False)
    for char, escape in (("&", "\\u0026"), ("<", "\\u003c"), (">", "\\u003e"), ("\u2028", "\\u2028"),
                         ("\u2029", "\\u2029")):
        text = text.replace(char, escape)
    return text


def render_page(data: Any) -> str:
    """The whole page for ``data`` (``view_data.view_data``)."""
    csp = CSP.format(script=_hash(SCRIPT), style=_hash(STYLE))
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"{csp}\">\n"
            "<meta name=\"referrer\" content=\"no-referrer\">\n"
            "<title>EnvSim view</title>\n"
            f"<style>{STYLE}</style>\n</head>\n<body>\n"
            "<noscript>This page renders its runs with its own inline script; enable JavaScript to see them.</noscript>\n"
            "<main id=\"envsim-root\"></main>\n"
            f"<script type=\"application/json\" id=\"envsim-data\">{embed_json(data)}</script>\n"
            f"<script>{SCRIPT}</script>\n</body>\n</html>\n")
