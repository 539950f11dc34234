"""Issue 14: no single hostile answer can end an evaluation or touch the other samples.

Each hostile answer is a scored failure with a precise reason (an infrastructure failure only where
the endpoint itself is at fault), and the rest of the run scores as if it were not there.
"""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from envsim.cli import main
from envsim.delta import same_json
from envsim.evaluation.running import runner as runner_module
from envsim.evaluation.baselines.hostile_server import HostileServer, hostile_text
from envsim.evaluation.scoring.parsing import parse_answer
from envsim.evaluation.endpoints.providers import Generation, NullProvider
from envsim.evaluation.running.runner import EvalConfig, prepare_run_dir, read_results, run_samples
from envsim.evaluation.scoring.scoring import score_prediction
from tests.evaluation.test_parsing_scoring import RECORD

# --- parser and scorer: precise reasons -------------------------------------------------------------

REASONS = {
    "deep": "JSON nested deeper than 200 levels",
    "bigint": "integer literal of 5001 digits exceeds Python's limit of 4300 digits",
    "nan": "NaN is not valid JSON",
    "bare": "answer is a JSON list, not an object with observation and patch",
}


@pytest.mark.parametrize("kind", sorted(REASONS))
def test_hostile_text_is_a_scored_failure_with_a_precise_reason(kind):
    score = score_prediction(RECORD, parse_answer(hostile_text(kind)))
    assert not score.parsed and not score.fm and not score.cm
    assert REASONS[kind] in score.reason


@pytest.mark.parametrize("depth", [201, 500, 990, 5000])
def test_nesting_over_the_bound_is_refused_before_recursive_code(depth):
    for text in ('{"observation": ' + "[" * depth + "]" * depth + ', "patch": []}',
                 '{"observation": {}, "patch": [{"op": "add", "path": "/a", "value": ' + "[" * depth + "]" * depth + "}]}",
                 "```json\n" + '{"observation": ' + '{"a": ' * depth + "1" + "}" * depth + ', "patch": []}\n```'):
        score = score_prediction(RECORD, parse_answer(text))
        assert score.reason == "JSON nested deeper than 200 levels", (depth, score.reason)


def test_nesting_within_the_bound_still_parses():
    text = '{"observation": ' + "[" * 150 + "]" * 150 + ', "patch": []}'
    assert parse_answer(text).ok


@pytest.mark.parametrize("text, reason", [
    ('{"observation": Infinity, "patch": []}', "Infinity is not valid JSON"),
    ('{"observation": -Infinity, "patch": []}', "-Infinity is not valid JSON"),
    ('{"observation": {"x": 1e999}, "patch": []}', "number 1e999 overflows to infinity"),
    ('{"observation": {}, "patch": [{"op": "add", "path": "/a", "value": NaN}]}', "NaN is not valid JSON"),
])
def test_nan_and_infinity_are_refused(text, reason):
    answer = parse_answer(text)
    assert not answer.ok and reason in answer.error


def test_same_json_never_recurses():
    deep: list = []
    cursor = deep
    for _ in range(10_000):
        cursor.append([])
        cursor = cursor[0]
    assert same_json(deep, deep) and not same_json(deep, [[]])
    assert same_json({"a": 1}, {"a": 1.0}) and not same_json({"a": True}, {"a": 1})
    assert not same_json(math.nan, 1.0)


def test_long_answer_without_an_object_says_so():
    assert "answer longer than 400000 characters" in parse_answer("x" * 500_000).error


# --- over HTTP: every behaviour in one run, the other samples untouched --------------------------------

BEHAVIOURS = ["deep", "bigint", "nan", "bare", "number", "object", "huge", "huge-length", "gzip", "huge-500"]
EXPECTED = {
    "deep": "JSON nested deeper than 200 levels",
    "bigint": "integer literal of 5001 digits",
    "nan": "NaN is not valid JSON",
    "bare": "answer is a JSON list",
    "number": "response content is a number, not text",
    "object": "response content is an object, not text",
    "huge": "response exceeded 16777216 bytes",
    "huge-length": "response exceeded 16777216 bytes",
    "gzip": "response exceeded 16777216 bytes",
}


def test_one_run_with_every_hostile_response(tmp_path, small_records):
    records = small_records[:16]
    behaviours = {r["id"]: kind for r, kind in zip(records, BEHAVIOURS)}
    bench = tmp_path / "bench.jsonl"
    bench.write_text("".join(json.dumps(r) + "\n" for r in records))
    run_dir = tmp_path / "run"
    with HostileServer(records, behaviours, huge_bytes=24 << 20) as server:
        result = CliRunner().invoke(main, ["eval", "--model", "hostile", "--base-url", server.base_url, "--benchmark",
                                           str(bench), "--run-dir", str(run_dir), "--max-retries", "0",
                                           "--max-response-bytes", str(16 << 20)],  # room for the bare patch
                                    catch_exceptions=False)
    assert result.exit_code == 0, result.output
    rows = read_results(run_dir / "results.jsonl")
    assert len(rows) == len(records)
    for record in records:
        row, kind = rows[record["id"]], behaviours.get(record["id"], "oracle")
        if kind == "oracle":  # untouched by its hostile neighbours
            assert row["status"] == "scored" and row["fm"] and row["cm"], row
        elif kind == "huge-500":  # an error page is the endpoint's fault
            assert row["status"] == "infra_failure" and "HTTP 500 error response exceeded" in row["reason"]
        else:
            assert row["status"] == "scored" and not row["parsed"] and not row["cm"], row
            assert EXPECTED[kind] in row["reason"], (kind, row["reason"])
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["scored"] == len(records) - 1 and summary["infra_failures"] == 1
    assert summary["overall"]["cm"] == pytest.approx((len(records) - len(BEHAVIOURS)) / (len(records) - 1), abs=1e-4)


def test_response_cap_is_configurable(tmp_path, small_records):
    records = small_records[:2]
    bench = tmp_path / "bench.jsonl"
    bench.write_text("".join(json.dumps(r) + "\n" for r in records))
    with HostileServer(records, {records[0]["id"]: "huge"}, huge_bytes=300_000) as server:
        for cap, capped in (("100000", True), ("1000000", False)):
            run_dir = tmp_path / f"run-{cap}"
            result = CliRunner().invoke(main, ["eval", "--model", "hostile", "--base-url", server.base_url,
                                               "--benchmark", str(bench), "--run-dir", str(run_dir),
                                               "--max-response-bytes", cap], catch_exceptions=False)
            assert result.exit_code == 0, result.output
            row = read_results(run_dir / "results.jsonl")[records[0]["id"]]
            assert row["status"] == "scored" and not row["parsed"]
            assert (row["reason"] == f"response exceeded {cap} bytes") == capped, row["reason"]


# --- per-sample isolation ----------------------------------------------------------------------------


def _config(path: Path) -> EvalConfig:
    return EvalConfig(model="test", benchmark=str(path))


def test_an_exception_in_scoring_fails_only_its_sample(tmp_path, small_records, monkeypatch):
    records = small_records[:8]
    victim = records[3]["id"]
    real = runner_module.score_prediction

    def flaky(record, answer):
        if record["id"] == victim:
            raise RuntimeError("scorer bug")
        return real(record, answer)

    monkeypatch.setattr(runner_module, "score_prediction", flaky)
    prepare_run_dir(tmp_path, _config(tmp_path))
    rows = asyncio.run(run_samples(records, NullProvider(), _config(tmp_path), tmp_path))
    assert rows[victim]["status"] == "scored" and not rows[victim]["cm"]
    assert rows[victim]["reason"] == "internal error in scoring: RuntimeError: scorer bug"
    others = [rows[r["id"]] for r in records if r["id"] != victim]
    assert all(r["status"] == "scored" and r["reason"] != rows[victim]["reason"] for r in others)
    assert len((tmp_path / "results.jsonl").read_text().splitlines()) == len(records)


class _SlowProvider:
    """Answers after a delay; fails if used after ``aclose``."""

    name = "slow"

    def __init__(self) -> None:
        self.closed = False
        self.after_close = 0

    async def generate(self, messages, record):
        await asyncio.sleep(0.2)
        if self.closed:
            self.after_close += 1
            raise RuntimeError("client has been closed")
        return Generation(json.dumps({"observation": {"success": True}, "patch": []}))

    def should_retry(self, exc):
        return False

    async def aclose(self) -> None:
        self.closed = True


def test_provider_is_closed_only_after_every_sample(tmp_path, small_records, monkeypatch):
    records = small_records[:6]
    victim = records[0]["id"]
    real = runner_module._evaluate_one

    async def crashing(record, *args, **kwargs):
        if record["id"] == victim:
            raise RuntimeError("worker bug outside the per-sample guard")
        return await real(record, *args, **kwargs)

    monkeypatch.setattr(runner_module, "_evaluate_one", crashing)
    provider = _SlowProvider()
    prepare_run_dir(tmp_path, _config(tmp_path))
    with pytest.raises(RuntimeError, match="worker bug"):
        asyncio.run(run_samples(records, provider, _config(tmp_path), tmp_path, concurrency=6))
    assert provider.closed and provider.after_close == 0
    rows = read_results(tmp_path / "results.jsonl")
    assert len(rows) == len(records) - 1 and all(r["status"] == "scored" for r in rows.values())


def test_non_text_answer_from_any_provider_is_a_scored_failure(tmp_path, small_records):
    class Weird(NullProvider):
        async def generate(self, messages, record):
            return Generation({"observation": 1})  # type: ignore[arg-type]

    prepare_run_dir(tmp_path, _config(tmp_path))
    rows = asyncio.run(run_samples(small_records[:2], Weird(), _config(tmp_path), tmp_path))
    assert {r["reason"] for r in rows.values()} == {"answer is not text (got dict)"}


class _PaddedProvider:
    """The null answer, padded with prose to ``size`` characters for the ids in ``padded``."""

    name = "padded"

    def __init__(self, padded: set[str], size: int) -> None:
        self.padded, self.size = padded, size

    async def generate(self, messages, record):
        answer = json.dumps({"observation": {"success": True}, "patch": []})
        if record["id"] in self.padded:
            answer = "x" * self.size + "\n" + answer
        return Generation(answer)

    def should_retry(self, exc):
        return False


def test_cheap_samples_are_scored_on_the_event_loop_and_costly_ones_in_the_scoring_thread(tmp_path, small_records,
                                                                                        monkeypatch):
    """A sample whose prompt and answer are small is scored where its request ran (no hand-over to a thread and
    back); one past ``INLINE_SCORING_CHARS`` goes to the scoring thread; both score the same way."""
    import threading

    records = small_records[:6]
    costly = {records[0]["id"], records[3]["id"]}
    where: dict[str, str] = {}
    real = runner_module._score_generation

    def recording(record, *args):
        where[record["id"]] = threading.current_thread().name
        return real(record, *args)

    monkeypatch.setattr(runner_module, "_score_generation", recording)
    config = EvalConfig(model="padded", prompt_mode="mdp")
    prepare_run_dir(tmp_path, config)
    rows = asyncio.run(run_samples(records, _PaddedProvider(costly, runner_module.INLINE_SCORING_CHARS),
                                   config, tmp_path, concurrency=3))
    main_thread = threading.main_thread().name
    assert {i for i, name in where.items() if name != main_thread} == costly
    assert all(where[i].startswith("envsim-score") for i in costly)
    assert all(rows[r["id"]]["status"] == "scored" and rows[r["id"]]["parsed"] for r in records)
