"""The self-contained HTML page of ``envsim view``: one file, inline style and script, no server, no network.

The page's script is ``view_script.SCRIPT`` (a JSON diff and the sample browser). Untrusted data (answers, benchmark
values, ids, model names) never becomes markup: it is embedded once as JSON in ``<script type="application/json">``
with ``<``, ``>``, ``&``, U+2028 and U+2029 written as ``\\u`` escapes (so no ``</script>`` or ``<!--`` can appear)
or in compressed chunks of base64 text (``view_values.pack_chunks``), and the page's own script renders it with DOM
APIs and ``textContent`` only (no ``innerHTML``, no links, no attribute a value could turn into code). The page
carries a Content-Security-Policy that allows no request at all (``default-src 'none'``), images only as ``data:``
URLs, and only its own style and script (by their sha256 hashes).
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from envsim.evaluation.reporting.view_script import SCRIPT
from envsim.evaluation.reporting.view_values import json_finite as _finite

__all__ = ["CSP", "SCRIPT", "STYLE", "embed_json", "render_page"]

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
.diff tr.fold td{background:#f8fafc;text-align:center}.diff button,.pager button{font-size:.85em}
.patchview{display:grid;gap:.6em;grid-template-columns:repeat(auto-fit,minmax(min(100%,360px),1fr));margin-top:.4em}
.subhead{font-size:.85em;color:#444;margin:.2em 0}.changes-table{width:100%;font-size:12px}
.changes-table code{font:12px/1.35 ui-monospace,monospace;word-break:break-all}.arrow{color:#666}
tr.c-same td.status{color:#166534}tr.c-differs td{background:#fef9c3}tr.c-missed td{background:#fee2e2}
tr.c-spurious td{background:#dcfce7}.pager{margin:0 .6em;white-space:nowrap}
[hidden]{display:none !important}
"""

def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


CSP = ("default-src 'none'; script-src {script}; style-src {style}; img-src data:; base-uri 'none'; "
       "form-action 'none'")


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
