"""A first real evaluation tells the truth loudly: the preflight stops a run that cannot work (with
the server's own words), the exit code says whether anything was scored, the API key option reaches
the server, and progress shows "–" until a sample is scored."""

from __future__ import annotations

import json
import socket
from dataclasses import asdict

import pytest
from click.testing import CliRunner

from envsim.benchmark import file_digest
from envsim.cli import main
from envsim.evaluation.reporting.console import live_rates
from envsim.cli.eval_outcome import EXIT_TOO_FEW_SCORED, MinScored, MinScoredType
from envsim.evaluation.baselines.fake_server import FakeOpenAIServer
from envsim.evaluation.baselines.hostile_server import HostileServer
from envsim.evaluation.running.runner import EvalConfig


def _closed_port_url() -> str:
    """A local URL nothing listens on (connections are refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}/v1"


@pytest.fixture(autouse=True)
def _no_ambient_credentials(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def _run(args: list[str]):
    return CliRunner().invoke(main, ["eval", *args], catch_exceptions=False)


def test_no_url_and_no_key_is_refused_before_anything_is_written(tmp_path):
    run_dir = tmp_path / "run"
    result = _run(["--model", "gpt-4o", "--limit", "3", "--run-dir", str(run_dir)])
    assert result.exit_code == 1
    assert "no --base-url and no API key" in result.output and "OPENAI_API_KEY" in result.output
    assert "https://api.openai.com/v1" in result.output
    assert not run_dir.exists()


def test_refusing_server_fails_the_preflight_with_the_connection_error(tmp_path, small_benchmark):
    url = _closed_port_url()
    run_dir = tmp_path / "run"
    result = _run(["--model", "m", "--base-url", url, "--benchmark", str(small_benchmark), "--run-dir", str(run_dir),
                   "--timeout", "5"])
    assert result.exit_code == 1
    assert "preflight failed, no sample was sent" in result.output
    assert f"cannot connect to {url}" in result.output and "--no-preflight" in result.output
    assert not run_dir.exists()


def test_default_endpoint_with_a_key_is_probed_at_openai_base_url(tmp_path, small_benchmark, monkeypatch):
    url = _closed_port_url()
    monkeypatch.setenv("OPENAI_BASE_URL", url)          # where the SDK goes without --base-url
    result = _run(["--model", "gpt-4o", "--api-key", "sk-test", "--benchmark", str(small_benchmark),
                   "--run-dir", str(tmp_path / "run"), "--timeout", "5"])
    assert result.exit_code == 1 and f"cannot connect to {url}" in result.output


@pytest.mark.parametrize("model, status, words", [("missing", 404, "The model `missing` does not exist."),
                                                  ("locked", 401, "Incorrect API key provided.")])
def test_server_errors_are_shown_in_the_servers_words(tmp_path, small_benchmark, small_records, model, status, words):
    with FakeOpenAIServer(small_records) as server:
        result = _run(["--model", model, "--base-url", server.base_url, "--benchmark", str(small_benchmark),
                       "--run-dir", str(tmp_path / "run")])
    assert result.exit_code == 1
    assert f"HTTP {status} from {server.base_url}" in result.output and words in result.output
    assert not (tmp_path / "run").exists()


def test_preflight_passes_and_the_api_key_reaches_the_server_but_not_the_run_dir(tmp_path, small_benchmark,
                                                                                   small_records):
    run_dir = tmp_path / "run"
    with FakeOpenAIServer(small_records) as server:
        result = _run(["--model", "oracle", "--base-url", server.base_url, "--benchmark", str(small_benchmark),
                       "--run-dir", str(run_dir), "--api-key", "sk-secret-123", "--limit", "4"])
    assert result.exit_code == 0, result.output
    assert f"preflight: {server.base_url} answered" in result.output
    assert server.auth_headers == {"Bearer sk-secret-123"}
    assert "sk-secret-123" not in "".join(p.read_text(errors="replace") for p in run_dir.iterdir() if p.is_file())


def test_api_key_from_the_environment(tmp_path, small_benchmark, small_records, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    with FakeOpenAIServer(small_records) as server:
        result = _run(["--model", "oracle", "--base-url", server.base_url, "--benchmark", str(small_benchmark),
                       "--run-dir", str(tmp_path / "run"), "--limit", "2"])
    assert result.exit_code == 0, result.output
    assert server.auth_headers == {"Bearer sk-from-env"}


def test_a_fleet_passes_when_one_endpoint_answers_and_names_the_other(tmp_path, small_benchmark, small_records):
    dead = _closed_port_url()
    with FakeOpenAIServer(small_records) as server:
        result = _run(["--model", "oracle", "--base-url", server.base_url, "--base-url", dead,
                       "--benchmark", str(small_benchmark), "--run-dir", str(tmp_path / "run"), "--limit", "4",
                       "--timeout", "5"])
    assert result.exit_code == 0, result.output
    assert f"warning: preflight: cannot connect to {dead}" in result.output


def test_nothing_scored_exits_3_and_names_the_reason(tmp_path, small_benchmark):
    url = _closed_port_url()
    run_dir = tmp_path / "run"
    result = _run(["--model", "m", "--base-url", url, "--benchmark", str(small_benchmark), "--run-dir", str(run_dir),
                   "--no-preflight", "--max-retries", "0", "--limit", "3", "--no-progress"])
    assert result.exit_code == EXIT_TOO_FEW_SCORED
    assert "no sample was scored: all 3 failed" in result.output
    assert f"3× APIConnectionError: cannot connect to {url}" in result.output
    assert "fewer than --min-scored 1" in result.output
    after = result.output.split("infrastructure failures", 1)[1]
    assert "0.0%" not in after and "0.0 [" not in after           # no figure pretends to be a zero
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["scored"] == 0 and summary["infra_failures"] == 3
    off = _run(["--model", "m", "--base-url", url, "--benchmark", str(small_benchmark), "--run-dir", str(run_dir),
                "--no-preflight", "--max-retries", "0", "--limit", "3", "--min-scored", "0"])
    assert off.exit_code == 0, off.output


def test_min_scored_threshold_on_a_partly_failing_endpoint(tmp_path, small_benchmark, small_records):
    failing = {r["id"]: "error-500" for r in small_records[:5]}
    common = ["--model", "m", "--benchmark", str(small_benchmark), "--max-retries", "0", "--no-progress"]
    with HostileServer(small_records, failing) as server:
        strict = _run([*common, "--base-url", server.base_url, "--run-dir", str(tmp_path / "a"),
                       "--min-scored", "90%"])
        loose = _run([*common, "--base-url", server.base_url, "--run-dir", str(tmp_path / "b"),
                      "--min-scored", "80%"])
        count = _run([*common, "--base-url", server.base_url, "--run-dir", str(tmp_path / "c"),
                      "--min-scored", str(len(small_records) - 4)])
    scored = len(small_records) - 5
    assert strict.exit_code == EXIT_TOO_FEW_SCORED, strict.output
    assert f"{scored} of {len(small_records)} samples scored, fewer than --min-scored 90%" in strict.output
    assert f"5 of {len(small_records)} samples were not scored" in strict.output
    assert "5× InternalServerError: HTTP 500 from" in strict.output and "boom: replica lost its GPU" in strict.output
    assert loose.exit_code == 0, loose.output
    assert count.exit_code == EXIT_TOO_FEW_SCORED
    report = (tmp_path / "b" / "report.md").read_text()
    assert "boom: replica lost its GPU" in report


def test_min_scored_parsing_and_rounding():
    kind = MinScoredType()
    assert kind.convert("95%", None, None) == MinScored(percent=95.0)
    assert kind.convert("380", None, None) == MinScored(count=380)
    assert MinScored(percent=95).required(400) == 380 and MinScored(percent=90).required(26) == 24
    assert MinScored(count=380).required(3) == 3 and MinScored(count=0).required(400) == 0
    for bad in ("abc", "150%", "-1", "0.5"):
        with pytest.raises(Exception):
            kind.convert(bad, None, None)
    usage = CliRunner().invoke(main, ["eval", "--model", "null", "--min-scored", "lots"])
    assert usage.exit_code == 2 and "is not a count" in usage.output


def test_progress_shows_a_dash_until_something_is_scored():
    assert live_rates({"n": 0, "fm": 0, "cm": 0, "infra": 3}) == {"FM": "–", "CM": "–"}
    assert live_rates({"n": 4, "fm": 1, "cm": 2, "infra": 0}) == {"FM": "25.0%", "CM": "50.0%"}


def test_progress_lines_of_a_dead_endpoint_show_dashes(tmp_path, small_benchmark, monkeypatch):
    monkeypatch.setenv("ENVSIM_PROGRESS", "lines")
    result = _run(["--model", "m", "--base-url", _closed_port_url(), "--benchmark", str(small_benchmark),
                   "--run-dir", str(tmp_path / "run"), "--no-preflight", "--max-retries", "0", "--limit", "3"])
    progress = [line for line in result.output.splitlines() if line.startswith("eval m:")]
    assert progress and all("FM=–, CM=–" in line for line in progress)
    assert not any("CM=0.0%" in line for line in progress)


def test_baselines_need_no_preflight_and_exit_0(tmp_path, small_benchmark):
    result = _run(["--model", "null", "--benchmark", str(small_benchmark), "--run-dir", str(tmp_path / "run"),
                   "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "preflight" not in result.output


def test_eval_help_documents_every_option_and_the_exit_codes():
    result = CliRunner().invoke(main, ["eval", "--help"], terminal_width=200)
    text = " ".join(result.output.split())
    for option in ("--prompt-mode", "--temperature", "--max-tokens", "--api-key", "--min-scored", "--no-preflight"):
        assert option in text
    assert "Exit codes: 0 done" in text and "env var: OPENAI_API_KEY" in text
    for option in ("--prompt-mode", "--temperature", "--max-tokens"):
        described = text.split(f" {option} ", 1)[1].split(" --", 1)[0]   # up to the next option
        assert len(described.split()) > 6, f"{option} has no help text: {described!r}"


def test_report_of_a_tier_with_nothing_scored_reads_dash():
    from envsim.evaluation.running.tiers import tiers_markdown

    table = {"core": {"kind": "single", "n": 0, "fm": 0.0, "cm": 0.0, "infra_failures": 400},
             "chained": {"kind": "chained", "n": 0, "steps": 0, "fm": 0.0, "cm": 0.0, "episode_cm": 0.0,
                         "cm_at_k": {"1": 0.0}, "infra_failures": 112}}
    text = tiers_markdown(table, "m", "v2")
    assert "0.0" not in text and "| core | 0 | – | – |" in text


def test_chained_report_with_nothing_scored_names_the_reasons():
    from envsim.evaluation.scoring.chained import chained_markdown, chained_summary

    rows = [{"id": f"e{i}", "env": "x", "length": 3, "status": "infra_failure",
             "reason": "request failed: APIConnectionError: cannot connect"} for i in range(4)]
    summary = chained_summary(rows, model="m", prompt_mode="mdp", prompt_version="2")
    assert summary["infra_failure_reasons"] == {"request failed: APIConnectionError: cannot connect": 4}
    text = chained_markdown(summary)
    assert "**No episode was scored.**" in text and "4× request failed" in text
    assert "0.0 [" not in text


def test_rollout_track_cli_null_scores_nothing_at_step_1_and_a_dead_endpoint_exits_3(tmp_path):
    null = _run(["--model", "null", "--track", "rollout", "--limit", "8", "--episodes", "1", "--horizon", "2",
                 "--run-dir", str(tmp_path / "null"), "--no-progress"])
    assert null.exit_code == 0, null.output
    assert "CM@k: @1 0.0%" in null.output
    assert "CM@k, episodes whose state had changed by step k: @1 0.0%" in null.output
    config = json.loads((tmp_path / "null" / "config.json").read_text())
    assert config["rollout_version"] == 2
    dead = _run(["--model", "m", "--base-url", _closed_port_url(), "--track", "rollout", "--limit", "4",
                 "--episodes", "1", "--horizon", "2", "--run-dir", str(tmp_path / "dead"), "--no-preflight",
                 "--timeout", "5", "--no-progress"])
    assert dead.exit_code == EXIT_TOO_FEW_SCORED, dead.output
    assert "no episode was scored" in dead.output and "request failed" in dead.output


@pytest.mark.parametrize("args, version", [([], "1"), (["--prompt-version", "2"], "2")])
def test_rollout_track_cli_sends_the_prompt_version_its_config_records(tmp_path, args, version):
    from envsim.evaluation.prompting.prompts import system_prompt

    with FakeOpenAIServer([]) as server:
        result = _run(["--model", "oracle-remote", "--base-url", server.base_url, "--track", "rollout", "--limit", "2",
                       "--episodes", "1", "--horizon", "2", "--run-dir", str(tmp_path / "run"), "--no-progress", *args])
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "run" / "config.json").read_text())["prompt_version"] == version
    assert server.system_prompts == {system_prompt(version)}   # v1's rollout track sent version 1 whatever was asked


def test_a_rollout_run_dir_of_the_old_episode_drawing_is_not_resumed(tmp_path):
    run_dir = tmp_path / "old"
    run_dir.mkdir()
    old = EvalConfig(model="null", benchmark_sha256=file_digest("v1", "test"), prompt_version="1", limit=8,
                     track="rollout", horizon=2, episodes=1)          # written before rollout_version existed
    payload = {k: v for k, v in asdict(old).items() if k != "rollout_version"}
    (run_dir / "config.json").write_text(json.dumps({**payload, "config_hash": old.digest()}))
    result = _run(["--model", "null", "--track", "rollout", "--limit", "8", "--episodes", "1", "--horizon", "2",
                   "--run-dir", str(run_dir), "--no-progress"])
    assert result.exit_code == 1 and "other settings (rollout_version)" in result.output
