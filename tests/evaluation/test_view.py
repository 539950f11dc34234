"""``envsim view`` (issue 29 item 2): the page embeds what the run holds, for every run kind; untrusted text from a
model or a benchmark file is escaped; and (slow tier) headless Chromium renders one ``data-sample-id`` element per
sample with no script error and without running any of a hostile run's payloads."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.evaluation.chromium import render as _render
from jsonpointer import resolve_pointer

from envsim.benchmark import load
from envsim.cli import main
from envsim.evaluation.reporting.view_page import SCRIPT, STYLE
from envsim.evaluation.reporting.view_values import cell, page_samples

PAYLOAD = "</script><img src=x onerror=\"document.title='PWNED';document.body.setAttribute('data-pwned','1')\">"
LINK = "<a href=\"javascript:document.title='PWNED'\">click</a>"


def _cli(*args: str):
    return CliRunner().invoke(main, list(args))


def _ok(result) -> None:
    assert result.exit_code == 0, result.output


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """A one-step null run (v1, 12 samples), a tiers directory (core and chained tiers, 3 each) and a simulate
    output, all written by the real commands."""
    tmp = tmp_path_factory.mktemp("view")
    _ok(_cli("eval", "--model", "null", "--limit", "12", "--run-dir", str(tmp / "single"), "--no-progress"))
    for tier in ("core", "chained"):
        _ok(_cli("eval", "--model", "null", "--benchmark", "v2", "--tier", tier, "--limit", "3",
                 "--run-dir", str(tmp / "tiers"), "--no-progress"))
    _ok(_cli("simulate", "--env", "library_circulation-v1", "--simulator", "null", "--episodes", "1",
             "--steps", "3", "--out", str(tmp / "sim")))
    return {"single": tmp / "single", "tiers": tmp / "tiers", "sim": tmp / "sim"}


def _page(*runs: Path, out: Path) -> tuple[str, dict]:
    _ok(_cli("view", *map(str, runs), "--out", str(out)))
    html = out.read_text(encoding="utf-8")
    match = re.search(r'<script type="application/json" id="envsim-data">(.*?)</script>', html, re.S)
    assert match, "no embedded data"
    return html, json.loads(match.group(1))


def _at(state: dict, path: str) -> dict | None:
    """The value at a JSON pointer as a page cell, or None where the state has nothing."""
    found = resolve_pointer(state, path, _ABSENT)
    return None if found is _ABSENT else {"v": found}


_ABSENT = object()


def _rows(path: Path) -> dict[str, dict]:
    return {r["id"]: r for r in map(json.loads, path.read_text().splitlines())}


def test_embedded_data_is_the_run(runs, tmp_path):
    html, data = _page(runs["single"], out=tmp_path / "page.html")
    (run,) = data["runs"]
    rows = _rows(runs["single"] / "results.jsonl")
    records = {r["id"]: r for r in load("v1", "test")}
    assert [s["id"] for s in run["samples"]] == [i for i in records if i in rows]   # benchmark order, all rows
    assert all(set(s) >= {"id", "fm", "cm", "classes", "at"} and "observation" not in s for s in run["samples"])
    for sample in page_samples(run):
        row, record = rows[sample["id"]], records[sample["id"]]
        assert (sample["fm"], sample["cm"], sample["fm_json"], sample["cm_numeric"]) == (
            row["fm"], row["cm"], row["fm_json"], row["cm_numeric"])
        assert sample["classes"] == row["failure"] and sample["tool"] == row["tool"] == record["tool"]
        assert sample["call"] == cell(record["action"]) and sample["stratum"] == record["stratum"]
        assert sample["observation"][0] == {"v": record["observation"]} and sample["patch"][0] == {"v": record["patch"]}
        assert sample["patch"][1] == {"v": []}                                   # the null model's patch
        changes = sample["changes"]                                         # what the true call changed, old -> new
        assert sorted(r[0] for r in changes["rows"]) == sorted(record["changed_paths"])
        for path, status, old, new, predicted_old, predicted_new in changes["rows"]:
            assert status == "missed" and predicted_old is None and predicted_new is None
            assert old == _at(record["state"], path) and new == _at(record["next_state"], path)
        assert sample["answer"] == row["answer"] and sample["has_answer"] and "[user]" in sample["prompt"]
    summary = json.loads((runs["single"] / "summary.json").read_text())
    assert run["failure"]["failure_classes"] == summary["failure_classes"]
    assert base64.b64decode(run["plots"][0]["png"]) == (runs["single"] / "cm_by_delta.png").read_bytes()
    assert len(re.findall(r"<script", html, re.I)) == 2 and "innerHTML" not in SCRIPT


def test_csp_allows_only_the_pages_own_script_and_style(runs, tmp_path):
    html, _ = _page(runs["single"], out=tmp_path / "page.html")
    csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', html).group(1)

    def digest(text: str) -> str:
        return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"

    assert f"script-src {digest(SCRIPT)};" in csp and f"style-src {digest(STYLE)};" in csp
    assert csp.startswith("default-src 'none';") and "img-src data:;" in csp and "unsafe" not in csp
    assert f"<script>{SCRIPT}</script>" in html and f"<style>{STYLE}</style>" in html
    assert html.index("Content-Security-Policy") < html.index("<style>")


def test_every_run_kind_and_several_runs(runs, tmp_path):
    _, data = _page(runs["tiers"], runs["sim"], runs["single"], out=tmp_path / "all.html")
    kinds = {r["label"]: r["kind"] for r in data["runs"]}
    assert kinds == {"tiers/chained": "chained", "tiers/core": "single", "sim": "simulate", "single": "single"}
    chained = next(r for r in data["runs"] if r["kind"] == "chained")
    episodes = _rows(runs["tiers"] / "chained" / "results.jsonl")
    steps = {f"{e['id']}#{s['index']}": s for e in episodes.values() for s in e["steps"]}
    assert {s["id"] for s in chained["samples"]} == set(steps)
    for sample in page_samples(chained):
        step = steps[sample["id"]]
        assert (sample["fm"], sample["cm"], sample["classes"]) == (step["fm"], step["cm"], step["failure"])
        assert sample["patch"][0] == {"v": step["true_patch"]} and sample["patch"][1] == {"v": step["patch"]}
        assert {r[0] for r in sample["changes"]["rows"] if r[3] is not None or r[1] != "spurious"} >= {
            op["path"] for op in step["true_patch"] if op["op"] in ("add", "replace")}
    sim = next(r for r in data["runs"] if r["kind"] == "simulate")
    steps = [json.loads(line) for line in (runs["sim"] / "steps.jsonl").read_text().splitlines()]
    assert len(sim["samples"]) == len(steps) and any(p["title"] == "drift by step" for p in sim["plots"])
    assert sum(sum(c.values()) for c in sim["failure"]["failure_classes"].values()) == sum(
        (not s["fm"]) + (not s["cm"]) for s in steps)


def test_a_directory_it_does_not_know_is_refused(tmp_path):
    result = _cli("view", str(tmp_path), "--out", str(tmp_path / "x.html"))
    assert result.exit_code == 1 and "not a run directory" in result.output


@pytest.fixture(scope="module")
def hostile(runs, tmp_path_factory) -> Path:
    """A real run over a benchmark file whose ids, observations and argument values hold markup, with answers
    rewritten to hold the same payloads, and a model name holding one too."""
    tmp = tmp_path_factory.mktemp("hostile")
    records = load("v1", "test")[:4]
    for i, record in enumerate(records):
        record["id"] = f"{PAYLOAD}-{i}"
        record["observation"] = {"success": False, "error": PAYLOAD + LINK + "\u2028<!--"}
    bench = tmp / "bench.jsonl"
    bench.write_text("".join(json.dumps(r) + "\n" for r in records))
    run = tmp / "run"
    _ok(_cli("eval", "--model", "null", "--benchmark", str(bench), "--run-dir", str(run), "--no-progress"))
    rows = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    with (run / "results.jsonl").open("w") as handle:
        for row in rows:
            row["answer"] = json.dumps({"observation": {"note": PAYLOAD, "link": LINK},
                                        "patch": [{"op": "add", "path": "/x" + PAYLOAD, "value": LINK}]})
            row["reason"] = PAYLOAD
            handle.write(json.dumps(row) + "\n")
    config = json.loads((run / "config.json").read_text())
    (run / "config.json").write_text(json.dumps({**config, "model": PAYLOAD}))
    return run


def test_hostile_run_is_escaped(hostile, tmp_path):
    html, data = _page(hostile, out=tmp_path / "hostile.html")
    assert "<img" not in html and "</script><" not in html and "<a " not in html and "<!--" not in html
    assert "\u2028" not in html and len(re.findall(r"<script", html, re.I)) == 2
    (run,) = data["runs"]
    assert len(run["samples"]) == 4 and all(s["id"].startswith(PAYLOAD) for s in run["samples"])
    sample = page_samples(run)[0]
    assert sample["observation"][1] == {"v": {"note": PAYLOAD, "link": LINK}} and sample["reason"] == PAYLOAD
    assert sample["observation"][0]["v"]["error"].startswith(PAYLOAD + LINK)
    assert "predicted patch does not apply" in sample["changes"]["note"] and not sample["changes"]["predicted"]
    assert sample["answer"].count(json.dumps(PAYLOAD)[1:-1]) == 2                          # the raw answer, packed


# --- slow tier: a real browser --------------------------------------------------------------------------------

PAGE_SIZE = 50  # samples the page renders at once (its first "per page" choice)


def _articles(dom: str) -> list[str]:
    return re.findall(r"<article [^>]*data-sample-id=", dom)


@pytest.mark.slow
def test_chromium_renders_every_sample_without_errors(runs, tmp_path):
    page = tmp_path / "all.html"
    _, data = _page(runs["single"], runs["tiers"], runs["sim"], out=page)
    dom, console = _render(page, tmp_path)
    ids = {s["id"] for run in data["runs"] for s in run["samples"]}
    assert 0 < len(ids) <= PAGE_SIZE                                          # one page holds them all
    assert console == [] and len(_articles(dom)) == len(ids)
    assert f'data-rendered="{len(ids)}"' in dom and f"showing {len(ids)} of {len(ids)} samples" in dom


@pytest.mark.slow
def test_chromium_runs_no_hostile_payload(hostile, tmp_path):
    page = tmp_path / "hostile.html"
    _page(hostile, out=page)
    # the escaping alone must hold: the same page without its Content-Security-Policy runs nothing either
    bare = tmp_path / "bare.html"
    bare.write_text(re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page.read_text()))
    for path in (page, bare):
        dom, console = _render(path, tmp_path)
        assert console == [], console
        title = re.search(r"<title>(.*?)</title>", dom, re.S).group(1)
        assert "PWNED" not in title and not re.search(r"<body[^>]*data-pwned", dom)
        assert len(_articles(dom)) == 4 and "&lt;img src=x onerror=" in dom
        assert not re.search(r"<(img|a)\s[^>]*(onerror|javascript:)", dom)


def test_rows_written_before_failure_classes_are_classified_again(runs, tmp_path):
    old = tmp_path / "old"
    shutil.copytree(runs["single"], old)
    rows = _rows(old / "results.jsonl")
    (old / "results.jsonl").write_text("".join(
        json.dumps({k: v for k, v in r.items() if k not in ("tool", "fm_json", "cm_numeric", "failure")}) + "\n"
        for r in rows.values()))
    _, data = _page(old, out=tmp_path / "old.html")
    (run,) = data["runs"]
    assert any("classified again" in note for note in run["notes"])
    for sample in run["samples"]:
        row = rows[sample["id"]]
        assert sample["classes"] == row["failure"] and sample["fm_json"] == row["fm_json"]
        assert sample["tool"] == row["tool"]
