"""``envsim view`` diffs JSON as JSON (issue 46 item 2): the page's script compares objects key by key and lists item by
item (a key-order-only difference is no difference), a patch is shown as the changed paths with old -> new values
beside its raw ops, and the page renders one page of samples at a time with prompts and answers compressed, so a
4,000-sample run opens in <= 5 s in headless Chromium and weighs <= 15 MB (slow tier).

The script's diff runs under Node where it is installed (everyday tier) and in Chromium (slow tier) on the same cases.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from envsim.benchmark import load
from envsim.cli import main
from envsim.evaluation.reporting.view_data import RunView
from envsim.evaluation.reporting.view_script import DIFF_SCRIPT
from envsim.evaluation.reporting.view_values import (CHUNK_SAMPLES, MAX_VALUE_CHARS, MAX_VALUE_DEPTH, cell, compare_changes,
                                           op_changes, pack_chunks, page_samples, state_changes, unpack_chunk)
from tests.evaluation.chromium import render

# --- the state changes of a call, old -> new ------------------------------------------------------------------


def test_state_changes_are_the_changed_leaves_old_to_new():
    before = {"n": 1, "items": [{"id": 1}, {"id": 2}, {"id": 3}], "cfg": {"a": 1, "gone": True}, "same": [1, 2]}
    after = {"n": 2, "items": [{"id": 1}, {"id": 3}], "cfg": {"a": 1, "new": {"x": [1]}}, "same": [1, 2]}
    assert state_changes(before, after) == [
        ("/n", True, 1, True, 2),
        ("/items/1", True, {"id": 2}, False, None),          # a removed item keeps its old index
        ("/cfg/gone", True, True, False, None),
        ("/cfg/new", False, None, True, {"x": [1]}),
    ]
    assert state_changes({"b": 1, "a": {"y": 1, "x": 2}}, {"a": {"x": 2, "y": 1}, "b": 1}) == []   # key order only
    assert state_changes({"l": [1, 2]}, {"l": [1, 2, 3]}) == [("/l/2", False, None, True, 3)]       # appended
    assert state_changes({"k/~": 1}, {"k/~": 2}) == [("/k~1~0", True, 1, True, 2)]                  # RFC 6901


def test_compare_changes_marks_each_path():
    state = {"a": 1, "b": 1, "c": 1, "d": {"x": 1}}
    expected = state_changes(state, {"a": 2, "b": 2, "c": 1, "d": {"x": 1}})
    predicted = state_changes(state, {"a": 2, "b": 3, "c": 9, "d": {"x": 1}})
    table = compare_changes(expected, predicted, old_known=True)
    assert [(r[0], r[1]) for r in table["rows"]] == [("/a", "same"), ("/b", "differs"), ("/c", "spurious")]
    assert table["rows"][1][2:] == [{"v": 1}, {"v": 2}, {"v": 1}, {"v": 3}]
    missed = compare_changes(expected, [], old_known=True)
    assert [r[1] for r in missed["rows"]] == ["missed", "missed"] and missed["rows"][0][4:] == [None, None]
    unknown = compare_changes(expected, None, old_known=True, note="why")
    assert [r[1] for r in unknown["rows"]] == [None, None] and unknown["note"] == "why" and not unknown["predicted"]
    ops = op_changes([{"op": "add", "path": "/l/-", "value": 1}, {"op": "remove", "path": "/k"},
                      {"op": "replace", "path": "/k", "value": 2}, {"op": "move", "from": "/a", "path": "/b"}])
    assert ops == [("/l/-", False, None, True, 1), ("/k", False, None, True, 2),
                   ("/b", False, None, True, "(move of /a)"), ("/a", False, None, False, None)]


def test_cells_are_bounded():
    assert cell({"a": [1, "x"]}) == {"v": {"a": [1, "x"]}} and cell(None) == {"v": None}
    deep: object = 0
    for _ in range(MAX_VALUE_DEPTH + 1):
        deep = [deep]
    assert "nested deeper" in cell(deep)["text"]
    big = cell({"k": "x" * MAX_VALUE_CHARS})
    assert len(big["text"]) < MAX_VALUE_CHARS + 100 and "more characters not shown" in big["text"]
    assert cell(2 ** 80) == {"v": 2 ** 80}                                    # past orjson's integers: json measures it


def test_details_prompts_and_answers_are_packed_in_chunks():
    texts = [(f"prompt {i} \u202e\ud800 </script>", None if i % 3 else f"answer {i}") for i in range(120)]
    chunks = pack_chunks(texts, CHUNK_SAMPLES)
    assert len(chunks) == 3 and all(re.fullmatch(r"[A-Za-z0-9+/=]+", c) for c in chunks)
    assert [tuple(t) for c in chunks for t in unpack_chunk(c)] == texts
    view = RunView("r", "single", "p")
    for i, (prompt, answer) in enumerate(texts):
        view.add({"id": f"s{i}", "call": None, "observation": [None, {"v": i}], "patch": [None, None],
                  "changes": None}, prompt, answer)
    run = view.to_json()
    assert [(s["prompt"], s["answer"]) for s in page_samples(run)] == texts
    assert [s["observation"] for s in page_samples(run)] == [[None, {"v": i}] for i in range(120)]
    assert [s["has_answer"] for s in run["samples"]] == [t[1] is not None for t in texts]
    assert [s["at"] for s in run["samples"]][49:51] == [[0, 49], [1, 0]]
    assert unpack_chunk(pack_chunks([{"x": float("nan")}])[0]) == [{"x": "nan"}]       # JSON.parse reads it


# --- the page script's JSON diff: the same cases under Node (everyday) and Chromium (slow) --------------------

DEEP_A = "[" * 150 + "1" + "]" * 150
DEEP_B = "[" * 150 + "2" + "]" * 150
CASES = [  # (expected JSON text, predicted JSON text, rows or None when checked by hand below)
    ('{"a": 1, "b": [1, 2, {"x": 1, "y": 2}]}', '{"b": [1, 2, {"y": 2, "x": 1}], "a": 1}', None),
    ('{"a": {"b": 1, "c": 2}}', '{"a": {"b": 1, "c": 3}}',
     [["=", "{", "{"], ["=", '  "a": {', '  "a": {'], ["=", '    "b": 1,', '    "b": 1,'],
      ["~", '    "c": 2', '    "c": 3'], ["=", "  }", "  }"], ["=", "}", "}"]]),
    ("[1, 2, 3]", "[1, 9, 2, 3]",
     [["=", "[", "["], ["=", "  1,", "  1,"], ["+", None, "  9,"], ["=", "  2,", "  2,"], ["=", "  3", "  3"],
      ["=", "]", "]"]]),
    ('{"keep": 1, "gone": 2}', '{"keep": 1, "added": 3}',
     [["=", "{", "{"], ["=", '  "keep": 1,', '  "keep": 1,'], ["-", '  "gone": 2', None], ["+", None, '  "added": 3'],
      ["=", "}", "}"]]),
    ('[{"id": 1, "s": "a"}, {"id": 2, "s": "b"}]', '[{"id": 1, "s": "a"}, {"s": "c", "id": 2}]',
     [["=", "[", "["], ["=", "  {", "  {"], ["=", '    "id": 1,', '    "id": 1,'], ["=", '    "s": "a"', '    "s": "a"'],
      ["=", "  },", "  },"], ["=", "  {", "  {"], ["=", '    "id": 2,', '    "id": 2,'],
      ["~", '    "s": "b"', '    "s": "c"'], ["=", "  }", "  }"], ["=", "]", "]"]]),
    ('{"a": [1]}', '{"a": "1"}',
     [["=", "{", "{"], ["~", '  "a": [', '  "a": "1"'], ["~", "    1", None], ["~", "  ]", None], ["=", "}", "}"]]),
    ('{"__proto__": {"polluted": 1}, "constructor": 1}', '{"constructor": 1, "__proto__": {"polluted": 2}}',
     [["=", "{", "{"], ["=", '  "__proto__": {', '  "__proto__": {'], ["~", '    "polluted": 1', '    "polluted": 2'],
      ["=", "  },", "  },"], ["=", '  "constructor": 1', '  "constructor": 1'], ["=", "}", "}"]]),
    (DEEP_A, DEEP_B, None),
    ('{"t": "\\u202e\\ud800</script>"}', '{"t": "\\u202e\\ud800</script>"}', None),
]
HARNESS = r"""
var cases = JSON.parse(CASES_JSON), out = cases.map(function (c) {
  return envsimDiff.diffRows(JSON.parse(c[0]), JSON.parse(c[1]));
});
out.push({clean: ({}).polluted === undefined && Object.prototype.polluted === undefined});
"""


def _harness() -> str:
    cases = json.dumps([[a, b] for a, b, _ in CASES]).replace("<", "\\u003c")
    return DIFF_SCRIPT + HARNESS.replace("CASES_JSON", json.dumps(cases))


def _check(out: list) -> None:
    *results, clean = out
    assert clean == {"clean": True}
    for (a, b, rows), got in zip(CASES, results):
        if rows is not None:
            assert got == rows, (a, b)
    assert {r[0] for r in results[0]} == {"="} and results[0][0] == ["=", "{", "{"]      # key order: no difference
    deep = results[7]
    assert [r[0] for r in deep].count("~") >= 1 and all(r[0] in "=~" for r in deep)       # 150 levels: no overflow
    assert {r[0] for r in results[8]} == {"="}


def test_script_diff_under_node():
    node = shutil.which("node")
    if not node:
        pytest.skip("node is not installed: the same cases run in Chromium in the slow tier")
    done = subprocess.run([node, "-e", _harness() + "\nprocess.stdout.write(JSON.stringify(out));"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    _check(json.loads(done.stdout))


@pytest.mark.slow
def test_script_diff_in_chromium(tmp_path):
    page = tmp_path / "diff.html"
    script = _harness() + "\ndocument.body.textContent = JSON.stringify(out);"
    page.write_text(f"<!DOCTYPE html><html><body><script>{script}</script></body></html>", encoding="utf-8")
    dom, console = render(page, tmp_path)
    assert console == []
    body = re.search(r"<body>(.*)</body>", dom, re.S).group(1)
    _check(json.loads(html.unescape(body)))


# --- whole pages ------------------------------------------------------------------------------------------------

def _cli(*args: str):
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return result


def _data(page: Path) -> dict:
    text = page.read_text(encoding="utf-8")
    found = re.search(r'<script type="application/json" id="envsim-data">(.*?)</script>', text, re.S)
    return json.loads(found.group(1))


def _reordered(value):
    """``value`` with every object's keys in reverse order (the same JSON value)."""
    if isinstance(value, dict):
        return {k: _reordered(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [_reordered(v) for v in value]
    return value


def _articles(dom: str) -> dict[str, str]:
    parts = re.split(r'(?=<article class="sample" data-sample-id=")', dom)
    return {html.unescape(re.match(r'<article class="sample" data-sample-id="([^"]*)"', p).group(1)): p
            for p in parts if p.startswith("<article")}


MARKED = re.compile(r'class="(d-changed|d-left|d-right|c-differs|c-missed|c-spurious)"')


@pytest.fixture(scope="module")
def key_order_run(tmp_path_factory) -> tuple[Path, list[str], str]:
    """A null run whose answers are rewritten: each predicts the true observation and patch with every object's
    keys in reverse order, except one control sample whose observation differs in one value."""
    tmp = tmp_path_factory.mktemp("key-order")
    run = tmp / "run"
    _cli("eval", "--model", "null", "--limit", "12", "--run-dir", str(run), "--no-progress")
    records = {r["id"]: r for r in load("v1", "test")}
    rows = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    reordered, control = [], None
    for row in rows:
        record = records[row["id"]]
        observation = _reordered(record["observation"])
        if control is None and isinstance(observation, dict) and observation.get("success") is True:
            control = row["id"]
            observation = {**observation, "success": False}
        elif json.dumps(observation) != json.dumps(record["observation"]):
            reordered.append(row["id"])
        row["answer"] = json.dumps({"observation": observation, "patch": _reordered(record["patch"])})
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert control and len(reordered) >= 6
    return run, reordered, control


def test_key_order_only_is_no_difference_in_the_data(key_order_run, tmp_path):
    run, reordered, control = key_order_run
    page = tmp_path / "page.html"
    _cli("view", str(run), "--out", str(page))
    samples = {s["id"]: s for s in page_samples(_data(page)["runs"][0])}
    for sid in reordered:
        expected, predicted = samples[sid]["observation"]
        assert json.dumps(expected["v"]) != json.dumps(predicted["v"]) and expected["v"] == predicted["v"]
        assert all(row[1] == "same" for row in samples[sid]["changes"]["rows"])


@pytest.mark.slow
def test_chromium_shows_no_difference_for_key_order(key_order_run, tmp_path):
    run, reordered, control = key_order_run
    page = tmp_path / "page.html"
    _cli("view", str(run), "--out", str(page))
    dom, console = render(page, tmp_path)
    articles = _articles(dom)
    assert console == [] and len(articles) == 12
    for sid in reordered:
        assert not MARKED.search(articles[sid]), sid
    assert re.search(r'<tr class="d-changed"><td class="l"><pre>\s*"success": true', articles[control])


@pytest.mark.slow
@pytest.mark.alone
def test_chromium_renders_4000_samples_fast_and_small(tmp_path):
    """4,000 samples (v1 test ten times over, under new ids) scored by the null model: the page weighs <= 15 MB and
    its script has rendered within 5 s of navigation (``data-render-ms``)."""
    records = load("v1", "test")
    bench = tmp_path / "bench4000.jsonl"
    with bench.open("w") as handle:
        for k in range(10):
            for record in records:
                handle.write(json.dumps({**record, "id": f"{record['id']}~{k}"}) + "\n")
    run, page = tmp_path / "run", tmp_path / "page.html"
    _cli("eval", "--model", "null", "--benchmark", str(bench), "--run-dir", str(run), "--no-progress")
    start = time.perf_counter()
    _cli("view", str(run), "--out", str(page))
    view_s = time.perf_counter() - start
    size_mb = page.stat().st_size / 1e6
    dom, console, wall = render(page, tmp_path, timed=True)
    rendered_ms = int(re.search(r'data-render-ms="(\d+)"', dom).group(1))
    print(f"4,000 samples: page {size_mb:.1f} MB, rendered in {rendered_ms} ms (Chromium wall {wall:.1f} s), "
          f"view {view_s:.1f} s")
    assert console == [] and 'data-samples="4000"' in dom and len(_articles(dom)) == 50
    assert "showing 4000 of 4000 samples" in html.unescape(dom)
    assert size_mb <= 15 and rendered_ms <= 5000


@pytest.fixture(scope="module")
def hostile_values(tmp_path_factory) -> Path:
    """A run whose ids and values are the names JavaScript objects inherit (``__proto__``, ``constructor``), with
    right-to-left overrides and lone surrogates, and answers holding the same keys, one nested 150 levels deep."""
    tmp = tmp_path_factory.mktemp("hostile-values")
    records = load("v1", "test")[:4]
    ids = ["__proto__", "constructor", "hasOwnProperty", "rlo\u202etxt.exe\ud800"]
    for record, sid in zip(records, ids):
        record["id"] = sid
        record["observation"] = {"__proto__": {"polluted": 1}, "constructor": "\u202e\ud800", "success": True}
    bench = tmp / "bench.jsonl"
    bench.write_text("".join(json.dumps(r) + "\n" for r in records))
    run = tmp / "run"
    _cli("eval", "--model", "null", "--benchmark", str(bench), "--run-dir", str(run), "--no-progress")
    rows = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    answers = ['{"observation": {"constructor": "\\u202e", "__proto__": {"polluted": 2}}, "patch": '
               '[{"op": "add", "path": "/__proto__", "value": {"polluted": 3}}]}',
               json.dumps({"observation": json.loads(DEEP_A), "patch": []}),
               '{"observation": {"success": true, "constructor": "\\u202e\\ud800", "__proto__": {"polluted": 1}}, '
               '"patch": []}', "not json \ud800"]
    for row, answer in zip(rows, answers):
        row["answer"] = answer
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return run


def test_hostile_values_are_data(hostile_values, tmp_path):
    page = tmp_path / "page.html"
    _cli("view", str(hostile_values), "--out", str(page))
    samples = {s["id"]: s for s in page_samples(_data(page)["runs"][0])}
    assert set(samples) == {"__proto__", "constructor", "hasOwnProperty", "rlo\u202etxt.exe\ud800"}
    assert samples["__proto__"]["observation"][1] == {"v": {"constructor": "\u202e", "__proto__": {"polluted": 2}}}
    assert [r[:2] for r in samples["__proto__"]["changes"]["rows"]] == [["/__proto__", "spurious"]]
    assert samples["constructor"]["observation"][1]["v"] == json.loads(DEEP_A)          # 150 levels: still a value
    assert samples["hasOwnProperty"]["observation"][0] == samples["hasOwnProperty"]["observation"][1]


@pytest.mark.slow
def test_chromium_renders_hostile_values_as_text(hostile_values, tmp_path):
    page = tmp_path / "page.html"
    _cli("view", str(hostile_values), "--out", str(page))
    _, console = render(page, tmp_path, screenshot=True)        # the page as written: its script runs without error
    assert console == []
    # Chromium's --dump-dom aborts on a lone surrogate in the DOM: the same page with U+FFFD in their place
    text = page.read_text(encoding="utf-8")
    assert "\\ud800" in text
    readable = tmp_path / "readable.html"
    readable.write_text(text.replace("\\ud800", "\\ufffd"), encoding="utf-8")
    dom, console = render(readable, tmp_path)
    articles = _articles(dom)
    assert console == [] and 'data-samples="4"' in dom and len(articles) == 4
    assert set(articles) == {"__proto__", "constructor", "hasOwnProperty", "rlo\u202etxt.exe\ufffd"}
    assert not MARKED.search(articles["hasOwnProperty"])                            # equal up to key order
    assert re.search(r'<tr class="d-changed"><td class="l"><pre>\s*"polluted": 1</pre></td><td class="r"><pre>\s*'
                     r'"polluted": 2', articles["__proto__"])
    assert "c-spurious" in articles["__proto__"] and not re.search(r"<img(?! class=\"plot\")", dom)
