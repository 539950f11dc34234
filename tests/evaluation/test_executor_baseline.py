"""The executor baseline (``envsim eval --model executor``): it answers from the prompt text alone, names the
cause of every miss, and survives hostile code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import envsim
from envsim.construction.pipeline import write_jsonl
from envsim.envs.sandbox import Limits
from envsim.evaluation.baselines import executor_baseline
from envsim.evaluation.errors import InvalidOption
from envsim.evaluation.prompting.prompts import PROMPT_VERSIONS, build_messages
from envsim.evaluation.prompting.shown_prompt import read_prompt

COUNTER_CODE = '''@tool(write=True)
def bump(self, by: int) -> dict:
    """Add to the counter."""
    self.count = self.count + by
    return {"success": True, "count": self.count}
'''
COUNTER_TOOLS = [{"type": "function", "function": {"name": "bump", "description": "Add to the counter.",
                                                   "parameters": {"type": "object", "properties": {
                                                       "by": {"type": "integer"}}, "required": ["by"]}}}]


def _record(sample_id: str, code: str, *, state: dict[str, Any] | None = None, observation: Any = None,
            next_state: dict[str, Any] | None = None) -> dict[str, Any]:
    """A hand-made one-step record of the counter tool: ``bump(by=2)`` on ``{"count": 1}``."""
    state = state or {"count": 1}
    next_state = next_state or {**state, "count": state["count"] + 2}
    patch = [{"op": "replace", "path": "/count", "value": next_state["count"]}]
    return {"id": sample_id, "env": "counter-v1", "env_version": "0", "tool": "bump",
            "action": {"name": "bump", "arguments": {"by": 2}}, "state": state, "code": code,
            "observation": observation or {"success": True, "count": next_state["count"]}, "next_state": next_state,
            "patch": patch, "changed_paths": ["/count"], "delta_size": 1, "outcome": "change", "arg_count": 1,
            "stratum": "simple", "split": "test", "tools": COUNTER_TOOLS}


def _evaluate(records: list[dict[str, Any]], tmp_path: Path, **kwargs: Any) -> Any:
    path = tmp_path / "bench.jsonl"
    write_jsonl(records, path)
    return envsim.evaluate("executor", benchmark=str(path), run_dir=tmp_path / "run", concurrency=2, **kwargs)


def _misses(run_dir: Path) -> dict[str, dict[str, Any]]:
    return {m["id"]: m for m in json.loads((run_dir / "executor_misses.json").read_text())["misses"]}


@pytest.mark.parametrize("version", PROMPT_VERSIONS)
@pytest.mark.parametrize("mode", ["mdp", "full-class", "mdp-view"])
def test_prompt_reads_back_what_it_shows(version: str, mode: str) -> None:
    """Every prompt version and mode that shows code reads back as the same state, code and call."""
    if mode == "mdp-view" and int(version) < 3:
        pytest.skip("mdp-view exists from prompt version 3 on")
    record = _record("r", COUNTER_CODE, state={"count": 1, "note": "a\n\nb ```"})
    source = "class Counter(Environment):\n" + "\n".join("    " + line for line in COUNTER_CODE.splitlines()) + "\n"
    shown = read_prompt(build_messages(record, mode, class_source=source, version=version))
    assert shown.mode == mode
    assert shown.action == record["action"]
    assert shown.code == (source if mode == "full-class" else record["code"])
    if mode == "mdp":
        assert shown.state == record["state"]
        assert shown.schema == COUNTER_TOOLS[0]["function"]


def test_pomdp_is_refused_with_the_reason(tmp_path: Path) -> None:
    with pytest.raises(InvalidOption, match="shows neither the state nor the code"):
        _evaluate([_record("r", COUNTER_CODE)], tmp_path, prompt_mode="pomdp")
    execution = executor_baseline.execute_prompt(build_messages(_record("r", COUNTER_CODE), "pomdp"))
    assert execution.status == "pomdp" and "nothing to execute" in execution.detail


def test_a_missing_helper_is_a_named_defect(tmp_path: Path) -> None:
    """The shown code calls a module helper it does not define: ``name_not_defined``, naming the helper."""
    code = COUNTER_CODE.replace("self.count + by", "_clamp(self.count + by)")
    summary = _evaluate([_record("helper", code), _record("fine", COUNTER_CODE)], tmp_path)
    assert summary.scored == 2 and summary.infra_failures == 0
    misses = _misses(summary.run_dir)
    assert list(misses) == ["helper"]
    assert misses["helper"]["cause"] == "name_not_defined" and "_clamp" in misses["helper"]["detail"]
    assert json.loads((summary.run_dir / "summary.json").read_text())["executor_misses"] == \
        {"total": 1, "by_cause": {"name_not_defined": 1}}


def test_a_view_without_a_read_path_is_a_named_defect(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A view that leaves out ``step`` (the tool reads it): ``state_rendered_differently``."""
    from envsim.envs.views.view import View
    from envsim.evaluation.prompting import prompts

    code = COUNTER_CODE.replace("self.count + by", "self.count + by * self.step")
    record = _record("view", code, state={"count": 1, "step": 1, "other": "x"})
    monkeypatch.setattr(prompts, "record_view", lambda rec, schema=None: View(state={"count": rec["state"]["count"]}))
    summary = _evaluate([record], tmp_path, prompt_mode="mdp-view")
    assert summary.scored == 1
    miss = _misses(summary.run_dir)["view"]
    assert miss["cause"] == "state_rendered_differently" and "view leaves out" in miss["detail"]


@pytest.mark.parametrize("body", [
    'open("/etc/passwd").read()',                     # file access
    '__import__("os").fork()',                       # a new process
    'exec("while True:\\n    pass")',                # never ends
], ids=["open", "fork", "loop"])
def test_hostile_code_is_a_sandbox_refusal(body: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Code that opens files, forks or loops is refused by the sandbox; the run ends normally."""
    monkeypatch.setattr(executor_baseline, "DEFAULT_LIMITS", Limits(cpu_seconds=1, wall_seconds=2.0))
    code = COUNTER_CODE.replace('    self.count = self.count + by\n', f"    {body}\n    self.count = self.count + by\n")
    summary = _evaluate([_record("hostile", code), _record("fine", COUNTER_CODE)], tmp_path)
    assert summary.scored == 2 and summary.infra_failures == 0
    misses = _misses(summary.run_dir)
    assert list(misses) == ["hostile"] and misses["hostile"]["cause"] == "sandbox_refusal"
    rows = [json.loads(line) for line in (summary.run_dir / "results.jsonl").read_text().splitlines()]
    assert next(r for r in rows if r["id"] == "hostile")["reason"].startswith("executor: sandbox:")


def test_the_executor_solves_a_benchmark_whose_prompts_are_sufficient(small_benchmark: Path, tmp_path: Path) -> None:
    """26 stratified samples of a built-in environment: every answer follows from the prompt."""
    summary = envsim.evaluate("executor", benchmark=str(small_benchmark), run_dir=tmp_path / "run", concurrency=2)
    assert summary.scored == 26
    assert summary.overall.fm == 1.0 and summary.overall.cm == 1.0
    assert json.loads((summary.run_dir / "executor_misses.json").read_text())["misses"] == []


SHOP_SOURCE = '''
LIMIT = 10


class Shop:
    def __init__(self, config):
        self.items = config["items"]

    def _find(self, name):
        return self.items.get(name)

    def buy(self, name: str, qty: int = 1) -> dict:
        """Buy some of an item."""
        item = self._find(name)
        if item is None:
            return {"success": False, "error": "no such item"}
        if qty > LIMIT:
            raise ValueError("too many")
        item["stock"] -= qty
        return {"success": True, "left": item["stock"]}
'''


@pytest.mark.parametrize("mode", ["mdp", "full-class"])
def test_user_environments_from_strings_are_solved(mode: str) -> None:
    """An EnvScaler-style string class: its tool code shows the module constant it reads with its real value
    (it once read ``LIMIT = None``), and the executor answers every call as the sandboxed class does."""
    from envsim.envs.adapters.untrusted import from_envscaler
    from envsim.envs.sandbox import execute
    from envsim.envs.shown import tool_code

    env = from_envscaler({"env_class_code": SHOP_SOURCE, "init_config": {"items": {"a": {"stock": 5}}}})
    assert "LIMIT = 10" in tool_code(env, "buy")
    state = env.sample_state(0)
    for arguments in ({"name": "a", "qty": 2}, {"name": "a", "qty": 20}, {"name": "b"}, {"qty": 1}):
        truth = execute(env, state, {"name": "buy", "arguments": arguments})
        record = {"env": env.env_id(), "state": state, "action": {"name": "buy", "arguments": arguments},
                  "code": tool_code(env, "buy"), "tools": env.tool_schemas()}
        execution = executor_baseline.execute_prompt(build_messages(record, mode, class_source=SHOP_SOURCE,
                                                                    version="2"))
        assert (execution.observation, execution.patch) == (truth.observation, truth.patch), arguments


def test_a_chained_miss_is_classified_on_the_true_state_before_it() -> None:
    """A chained step that diverges is analysed as a one-step sample on the replayed true state (``id#step``);
    a later miss of the same episode is carried over, not classified again."""
    from envsim.construction.chained import load_episodes
    from envsim.evaluation.baselines.executor_misses import accepted_misses, chained_misses

    listed = next(iter(accepted_misses("v2", "chained").values()))
    episode_id, step = listed["id"].split("#")
    episode = next(e for e in load_episodes("v2", "chained") if e["id"] == episode_id)
    steps = [{"index": i, "fm": i < int(step), "cm": i < int(step)} for i in range(episode["length"])]
    row = {"status": "scored", "first_divergence": int(step), "steps": steps}
    misses = chained_misses([episode], {episode_id: row}, "mdp", "2")
    assert [m["id"] for m in misses] == [listed["id"]]
    assert (misses[0]["cause"], misses[0]["detail"]) == (listed["cause"], listed["detail"])
    assert misses[0].get("carried", 0) == episode["length"] - int(step) - 1
