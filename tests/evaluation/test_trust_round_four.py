"""Issue 54, findings 1-3: an endpoint's words never act on the terminal or a Markdown viewer, ``--extra`` never
replaces what defines a request, an answer with a key twice is refused as ambiguous, and a failed request is
named once and for what it was."""

from __future__ import annotations

import asyncio
import json
import socket
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from envsim.cli import main
from envsim.control_chars import escape_controls, escape_lines
from envsim.evaluation.baselines.fake_server import FakeOpenAIServer, LocalHTTPServer
from envsim.evaluation.endpoints.providers import OpenAICompatibleProvider
from envsim.evaluation.errors import InvalidOption
from envsim.evaluation.running.runner import EvalConfig, RetryPolicy, prepare_run_dir, run_samples
from envsim.evaluation.scoring.parsing import parse_answer
from envsim.evaluation.scoring.scoring import score_prediction
from tests.evaluation.test_parsing_scoring import GOOD_PATCH, RECORD

#: What a hostile endpoint puts in its error text: a window title (OSC ... BEL), clear screen (CSI 2J), a cursor
#: move, a bare carriage return that overwrites the line, a one-byte C1 CSI and a bidirectional override.
HOSTILE = "boom\x1b]0;pwned\x07\x1b[2J\x1b[5A\rall fine\x9b31m\u202egnp.exe"
RAW = ("\x1b", "\x07", "\r", "\x9b", "\u202e")


def _raw_controls(text: str) -> list[str]:
    return [char for char in RAW if char in text]


class _HostileErrors(LocalHTTPServer):
    """``/v1/chat/completions`` answering HTTP 500 with ``HOSTILE`` as the error message (model ``esc``), closing
    the connection without a response (model ``closer``), or a 200 without choices (model ``nochoices``)."""

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                return

            def do_POST(self) -> None:  # noqa: N802 - http.server API
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                if body.get("model") == "closer":
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                status, payload = ((200, {"choices": []}) if body.get("model") == "nochoices"
                                   else (500, {"error": {"message": HOSTILE}}))
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._bind(Handler)


@pytest.fixture(autouse=True)
def _no_ambient_credentials(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def _eval(args: list[str]):
    return CliRunner().invoke(main, ["eval", *args], catch_exceptions=False)


# --- 1. control characters ------------------------------------------------------------------------------------


def test_escape_controls_writes_every_control_visibly_and_keeps_plain_text():
    shown = escape_controls(HOSTILE)
    assert not _raw_controls(shown)
    assert shown == "boom\\x1b]0;pwned\\x07\\x1b[2J\\x1b[5A\\rall fine\\x9b31m\\u202egnp.exe"
    assert escape_controls("café\tα: ok") == "café\tα: ok"
    assert escape_lines("a\nb\rc") == "a\nb\\rc" and escape_controls("a\nb") == "a\\nb"


def test_preflight_error_shows_the_servers_words_escaped(tmp_path, small_benchmark):
    with _HostileErrors() as server:
        result = _eval(["--model", "esc", "--base-url", server.base_url, "--benchmark", str(small_benchmark),
                        "--run-dir", str(tmp_path / "run"), "--max-retries", "0", "--timeout", "10"])
    assert result.exit_code == 1
    assert "preflight failed" in result.stderr and "pwned" in result.stderr
    assert not _raw_controls(result.stdout + result.stderr), result.stderr
    assert "\\x1b]0;pwned\\x07" in result.stderr


def test_infrastructure_summary_and_report_md_escape_the_reason(tmp_path, small_benchmark):
    run_dir = tmp_path / "run"
    with _HostileErrors() as server:
        result = _eval(["--model", "esc", "--base-url", server.base_url, "--benchmark", str(small_benchmark),
                        "--run-dir", str(run_dir), "--no-preflight", "--max-retries", "0", "--limit", "2",
                        "--no-progress", "--min-scored", "0"])
    assert result.exit_code == 0, result.stderr
    shown = result.stdout + result.stderr
    assert "2× InternalServerError" in shown and "pwned" in shown
    assert not _raw_controls(shown)
    report = (run_dir / "report.md").read_text()
    assert "pwned" in report and not _raw_controls(report)
    rows = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert all("\x1b]0;pwned" in row["reason"] for row in rows)  # the data keeps the server's words as they were
    again = CliRunner().invoke(main, ["report", str(run_dir)], catch_exceptions=False)
    assert again.exit_code == 0 and "pwned" in again.stdout and not _raw_controls(again.stdout + again.stderr)


def test_api_printers_get_escaped_lines(tmp_path, small_benchmark):
    from envsim.evaluation.api import evaluate

    lines: list[str] = []
    with _HostileErrors() as server:
        evaluate("esc", base_url=server.base_url, benchmark=str(small_benchmark), run_dir=tmp_path / "run",
                 preflight=False, max_retries=0, limit=2, min_scored=0, echo=lines.append, echo_err=lines.append)
    assert any("pwned" in line for line in lines) and not _raw_controls("\n".join(lines))


def test_drift_md_of_a_rollout_or_simulation_escapes_controls(tmp_path, monkeypatch):
    from envsim.simulation import simulate

    monkeypatch.setattr(simulate, "drift_markdown", lambda report, title: f"# {title}\n\nreason: {HOSTILE}\n")
    monkeypatch.setattr(simulate, "plot_drift", lambda *a, **k: None)
    simulate.write_outputs([], tmp_path, horizon=1, shadow=True, stats={}, title="t")
    text = (tmp_path / "drift.md").read_text()
    assert "pwned" in text and not _raw_controls(text)


# --- 2. --extra and the core request fields ---------------------------------------------------------------------


@pytest.mark.parametrize("extra", [{"messages": [], "model": "other"}, {"model": "other"}, {"messages": []},
                                   {"temperature": 1.5}, {"max_tokens": 1}, {"stream": True}, {"n": 4}])
def test_extra_cannot_replace_a_core_request_field(tmp_path, small_benchmark, small_records, extra):
    with FakeOpenAIServer(small_records) as server:
        result = _eval(["--model", "oracle", "--base-url", server.base_url, "--benchmark", str(small_benchmark),
                        "--run-dir", str(tmp_path / "run"), "--limit", "2", "--extra", json.dumps(extra)])
        assert not server.calls  # refused before any request
    assert result.exit_code == 2, result.stderr
    assert "--extra" in result.stderr and "core request field" in result.stderr
    assert all(name in result.stderr for name in extra)
    assert not (tmp_path / "run").exists()


def test_extra_core_fields_are_refused_by_the_api_and_the_provider():
    from envsim.evaluation.api import evaluate
    from envsim.evaluation.endpoints.providers import CORE_REQUEST_FIELDS

    with pytest.raises(InvalidOption, match="core request field"):
        evaluate("null", extra={"model": "other"})
    with pytest.raises(ValueError, match="messages"):
        OpenAICompatibleProvider("m", base_url="http://127.0.0.1:9/v1", extra_body={"messages": []})
    provider = OpenAICompatibleProvider("m", base_url="http://127.0.0.1:9/v1", extra_body={"top_p": 0.5})
    request = provider._request([{"role": "user", "content": "hi"}], 7)
    assert request["model"] == "m" and request["max_tokens"] == 7 and request["top_p"] == 0.5
    assert set(CORE_REQUEST_FIELDS) >= {"model", "messages"}


def test_other_extra_fields_still_reach_the_server(tmp_path, small_benchmark, small_records):
    with FakeOpenAIServer(small_records) as server:
        result = _eval(["--model", "oracle", "--base-url", server.base_url, "--benchmark", str(small_benchmark),
                        "--run-dir", str(tmp_path / "run"), "--limit", "2", "--no-progress",
                        "--extra", '{"response_format": {"type": "json_object"}}'])
    assert result.exit_code == 0, result.stderr
    assert {"type": "json_object"} in server.response_formats


# --- 3. ambiguous answers, failure reasons ----------------------------------------------------------------------


def _answer(record: dict, patch_first: list, patch_last: list) -> str:
    observation = json.dumps(record["observation"])
    return (f'{{"observation": {observation}, "patch": {json.dumps(patch_first)}, '
            f'"patch": {json.dumps(patch_last)}}}')


def test_two_patch_keys_are_refused_as_ambiguous():
    parsed = parse_answer(_answer(RECORD, [], GOOD_PATCH))
    assert not parsed.ok and "ambiguous" in parsed.error and "'patch'" in parsed.error
    score = score_prediction(RECORD, parsed)
    assert not score.parsed and not score.fm and not score.cm
    assert score.failure == {"observation": "unparseable", "state": "unparseable"}


@pytest.mark.parametrize("text", [
    '{"observation": {"ok": true, "ok": false}, "patch": []}',
    '```json\n{"observation": {}, "observation": {"x": 1}, "patch": []}\n```',
    'prose {"observation": {}, "patch": [{"op": "add", "path": "/a", "path": "/b", "value": 1}]}',
])
def test_a_key_twice_anywhere_in_the_answer_is_ambiguous(text):
    parsed = parse_answer(text)
    assert not parsed.ok and parsed.error.startswith("ambiguous answer")


def test_answers_without_duplicates_parse_as_before():
    parsed = parse_answer('x {"a": 1, "a": 2} then {"observation": {"a": 1}, "patch": []}')
    assert parsed.ok and parsed.observation == {"a": 1}  # a duplicate outside the answer object does not matter


class _DoublePatch:
    """Answers every record with its true observation, then two patch keys: the true patch, then an empty one."""

    name = "double"

    async def generate(self, messages, record):
        from envsim.evaluation.endpoints.providers import Generation

        return Generation(_answer(record, record.get("patch") or [], []))

    def should_retry(self, exc):
        return False

    async def aclose(self) -> None:
        return None


def test_a_run_scores_duplicate_keys_as_failures_with_their_class(tmp_path, small_records):
    config = EvalConfig(model="double", benchmark=str(tmp_path))
    prepare_run_dir(tmp_path, config)
    rows = asyncio.run(run_samples(small_records[:4], _DoublePatch(), config, tmp_path))
    for row in rows.values():
        assert row["status"] == "scored" and not row["parsed"] and not row["cm"]
        assert row["reason"].startswith("ambiguous answer") and row["failure"]["state"] == "unparseable"


def _one_row(tmp_path: Path, model: str, url: str, record: dict) -> dict:
    provider = OpenAICompatibleProvider(model, base_url=url, timeout=10)
    config = EvalConfig(model=model, benchmark=str(tmp_path))
    prepare_run_dir(tmp_path, config)
    rows = asyncio.run(run_samples([record], provider, config, tmp_path, policy=RetryPolicy(max_retries=0)))
    return rows[record["id"]]


def test_an_error_is_named_once(tmp_path, small_records):
    with _HostileErrors() as server:
        row = _one_row(tmp_path, "nochoices", server.base_url, small_records[0])
    assert row["status"] == "infra_failure"
    assert row["reason"].startswith("ValueError from ") and "ValueError: ValueError" not in row["reason"]
    assert "the endpoint returned no choices" in row["reason"]


def test_a_server_that_closes_without_answering_is_not_cannot_connect(tmp_path, small_records):
    with _HostileErrors() as server:
        row = _one_row(tmp_path, "closer", server.base_url, small_records[0])
    assert row["status"] == "infra_failure"
    assert "cannot connect" not in row["reason"], row["reason"]
    assert "closed the connection" in row["reason"] and server.base_url in row["reason"]


def test_a_refused_connection_is_still_cannot_connect(tmp_path, small_records):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    row = _one_row(tmp_path, "m", url, small_records[0])
    assert row["reason"].startswith("APIConnectionError: cannot connect to ")

