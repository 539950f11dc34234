"""``envsim simulate`` takes eval's request options (``--timeout``, ``--max-tokens``, ``--response-format``),
defined once for both commands (issue 55, item 4)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from envsim.cli import main
from envsim.cli.eval_cmd import eval_cmd
from envsim.cli.simulate_cmd import simulate_cmd
from envsim.evaluation.baselines.fake_server import FakeOpenAIServer

SHARED = ("max_tokens", "response_format", "timeout")


def test_eval_and_simulate_share_the_option_definitions():
    def options(command):
        return {p.name: p for p in command.params}

    ev, sim = options(eval_cmd), options(simulate_cmd)
    for name in SHARED:
        assert (ev[name].opts, ev[name].default, ev[name].help, str(ev[name].type)) == \
            (sim[name].opts, sim[name].default, sim[name].help, str(sim[name].type))


def test_simulate_sends_max_tokens_and_times_out_after_timeout_seconds(tmp_path):
    common = ["simulate", "--env", "online_store-v1", "--episodes", "1", "--steps", "2", "--no-progress",
              "--no-shadow"]
    with FakeOpenAIServer([], slow_seconds=3.0) as server:
        ok = CliRunner().invoke(main, [*common, "--simulator", "null", "--base-url", server.base_url,
                                       "--max-tokens", "321", "--out", str(tmp_path / "ok")])
        assert ok.exit_code == 0, ok.output
        assert server.max_tokens and set(server.max_tokens[1:]) == {321}   # [0]: the preflight's tiny probe
        slow = CliRunner().invoke(main, [*common, "--simulator", "slow", "--base-url", server.base_url,
                                         "--timeout", "0.3", "--max-attempts", "1", "--no-preflight",
                                         "--out", str(tmp_path / "slow")])
    assert slow.exit_code == 3, slow.output          # every step timed out: fallback steps, exit 3
    steps = [json.loads(line) for line in (tmp_path / "slow" / "steps.jsonl").read_text().splitlines()]
    assert steps and all(s.get("fallback") and "TimeoutError" in s["reason"] and s["latency_s"] < 2.5
                         for s in steps), steps[:1]
