"""EnvSimBench as an inspect-ai task: inspect's mock model gives the same verdicts and rates as our runner."""

from __future__ import annotations

import asyncio
import json

import pytest

pytest.importorskip("inspect_ai", reason="needs the [inspect] extra")

from inspect_ai import eval as inspect_eval  # noqa: E402
from inspect_ai.model import ModelOutput, ModelUsage, get_model  # noqa: E402

from envsim.benchmark import load  # noqa: E402
from envsim.evaluation.inspect_task import RATE_KEYS, envsimbench, log_rates, select_records  # noqa: E402
from envsim.evaluation.prompting.prompts import build_messages  # noqa: E402
from envsim.evaluation.endpoints.providers import Generation, oracle_answer  # noqa: E402
from envsim.evaluation.reporting.report import summarize  # noqa: E402
from envsim.evaluation.running.runner import EvalConfig, prepare_run_dir, run_samples  # noqa: E402

LIMIT = 40


def _answer(index: int, record: dict) -> str:
    """A mix of right, half-right, unparseable and inapplicable answers (deterministic per sample)."""
    kind = index % 6
    if kind == 0:
        return oracle_answer(record)
    if kind == 1:
        return json.dumps({"observation": {"success": True}, "patch": []})
    if kind == 2:
        return "I think the call succeeds."
    if kind == 3:
        return "Reasoning first.\n```json\n" + oracle_answer(record) + "\n```"
    if kind == 4:
        truth = json.loads(oracle_answer(record))
        return json.dumps({"observation": truth["observation"], "patch": [{"op": "remove", "path": "/no/such"}]})
    truth = json.loads(oracle_answer(record))
    return json.dumps({"observation": {"wrong": True}, "patch": truth["patch"]})


@pytest.fixture(scope="module")
def answers() -> dict[str, str]:
    records = select_records(load("v1", "test"), LIMIT)
    return {r["id"]: _answer(i, r) for i, r in enumerate(records)}


@pytest.fixture(scope="module")
def inspect_log(answers, tmp_path_factory):
    records = {r["id"]: r for r in select_records(load("v1", "test"), LIMIT)}
    by_prompt = {build_messages(r)[1]["content"]: rid for rid, r in records.items()}

    def respond(messages, tools, tool_choice, config) -> ModelOutput:
        text = answers[by_prompt[messages[-1].text]]
        output = ModelOutput.from_content("mockllm/model", text)
        output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)  # no tiktoken download
        return output

    model = get_model("mockllm/model", custom_outputs=respond)
    logs = inspect_eval(envsimbench(limit=LIMIT), model=model, display="none",
                        log_dir=str(tmp_path_factory.mktemp("inspect-logs")))
    assert len(logs) == 1 and logs[0].status == "success", logs[0].error
    return logs[0]


@pytest.fixture(scope="module")
def envsim_summary(answers, tmp_path_factory) -> tuple[dict, dict]:
    class Replay:
        name = "replay"

        async def generate(self, messages, record):
            return Generation(answers[record["id"]])

        def should_retry(self, exc):
            return False

    records = select_records(load("v1", "test"), LIMIT)
    run_dir = tmp_path_factory.mktemp("envsim-run")
    config = EvalConfig(model="replay", limit=LIMIT)
    prepare_run_dir(run_dir, config)
    rows = asyncio.run(run_samples(records, Replay(), config, run_dir))
    return rows, summarize(rows.values(), {"model": "replay"})


def test_task_samples_use_our_prompt_and_cover_every_default_stratum():
    task = envsimbench(limit=LIMIT)
    samples = list(task.dataset)
    records = select_records(load("v1", "test"), LIMIT)
    assert [s.id for s in samples] == [r["id"] for r in records]
    first = build_messages(records[0])
    assert [m.text for m in samples[0].input] == [m["content"] for m in first]
    assert {s.metadata["stratum"] for s in samples} == {"failure", "no_change", "simple", "medium", "difficult"}
    with pytest.raises(ValueError, match="unknown prompt mode"):
        envsimbench(prompt_mode="nonsense")


def test_per_sample_verdicts_equal_envsim_eval(inspect_log, envsim_summary):
    rows, _ = envsim_summary
    assert len(inspect_log.samples) == LIMIT
    for sample in inspect_log.samples:
        value = sample.scores["envsim_scorer"].value
        row = rows[sample.id]
        assert {k: bool(value[k]) for k in RATE_KEYS} == {k: row[k] for k in RATE_KEYS}, sample.id
        assert bool(value["parsed"]) == row["parsed"]
        assert sample.scores["envsim_scorer"].metadata["stratum"] == row["stratum"]


def test_overall_and_per_stratum_rates_equal_envsim_eval(inspect_log, envsim_summary):
    _, summary = envsim_summary
    rates = log_rates(inspect_log)
    for key in RATE_KEYS:
        assert round(rates["overall"][key], 4) == summary["overall"][key], key
        for stratum, stats in summary["by_stratum"].items():
            if stats["n"]:
                assert round(rates["by_stratum"][stratum][key], 4) == stats[key], (stratum, key)
            else:
                assert stratum not in rates["by_stratum"]
    # the mix is informative: neither all right nor all wrong, and the rates differ from each other
    assert 0 < summary["overall"]["cm"] < 1 and 0 < summary["overall"]["fm"] < 1
    assert summary["overall"]["fm"] != summary["overall"]["cm"]
    assert round(rates["overall"]["parsed"], 4) == round(1 - summary["overall"]["parse_failure_rate"], 4)


def test_inspect_cli_on_the_registered_task_equals_envsim_eval(tmp_path):
    """``inspect eval envsim/envsimbench`` (entry point) against a local OpenAI-compatible server."""
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    from click.testing import CliRunner
    from inspect_ai.log import list_eval_logs, read_eval_log

    from envsim.cli import main
    from envsim.evaluation.baselines.fake_server import FakeOpenAIServer

    inspect_cli = shutil.which("inspect", path=str(Path(sys.executable).parent))
    assert inspect_cli, "the [inspect] extra installs the inspect command next to python"
    with FakeOpenAIServer(load("v1", "test")) as server:
        env = {**os.environ, "FAKE_BASE_URL": server.base_url, "FAKE_API_KEY": "unused",
               "INSPECT_LOG_DIR": str(tmp_path / "logs"), "INSPECT_DISPLAY": "none"}
        done = subprocess.run([inspect_cli, "eval", "envsim/envsimbench", "--model", "openai-api/fake/null",
                               "-T", "limit=20"], env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        ours = CliRunner().invoke(main, ["eval", "--model", "null", "--base-url", server.base_url, "--limit", "20",
                                         "--run-dir", str(tmp_path / "run")])
        assert ours.exit_code == 0, ours.output
    logs = list_eval_logs(str(tmp_path / "logs"))
    assert len(logs) == 1
    rates = log_rates(read_eval_log(logs[0]))
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["scored"] == 20 and 0 < summary["overall"]["cm"] < 1
    for key in RATE_KEYS:
        assert round(rates["overall"][key], 4) == summary["overall"][key]
        for stratum, stats in summary["by_stratum"].items():
            if stats["n"]:
                assert round(rates["by_stratum"][stratum][key], 4) == stats[key], (stratum, key)
