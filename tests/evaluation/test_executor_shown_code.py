"""The executor baseline runs module-shaped tool code (``envsim.envs.shown.code``): pydantic models rebuilt from
the JSON state in the sandbox, the tool attached to the state's class, the prompt's ``ToolError`` rule, and
stand-ins for the records a call only counts (issue 43, item 2)."""

from __future__ import annotations

import json

from envsim.construction.labelling import to_record
from envsim.envs.adapters.foreign import wrap_target
from envsim.envs.sandbox import execute
from envsim.evaluation.baselines.executor_baseline import build_module, execute_prompt
from envsim.evaluation.scoring.parsing import parse_answer
from envsim.evaluation.prompting.prompts import build_messages, default_prompt_version, system_prompt
from envsim.evaluation.scoring.scoring import score_prediction

HELPDESK = "tests.fixtures.helpdesk.wrapper:HelpdeskEnv"


def _record(target: str, tool: str, arguments: dict) -> dict:
    env = wrap_target(target)
    return to_record(execute(env, env.sample_state(0), {"name": tool, "arguments": arguments}), env, "test")


def _solved(record: dict, mode: str = "mdp-view") -> bool:
    execution = execute_prompt(build_messages(record, mode, version="4"))
    assert execution.status == "ran", execution.detail
    score = score_prediction(record, parse_answer(json.dumps(execution.answer())))
    return score.fm and score.cm


def test_a_new_record_with_model_defaults_and_a_counted_id_is_derived_from_the_view():
    record = _record(HELPDESK, "create_ticket", {"customer_id": "C0003", "subject": "VPN drops", "channel": "chat"})
    assert record["outcome"] == "change" and record["observation"]["ticket_id"] == "T1037"
    text = build_messages(record, "mdp-view", version="4")[1]["content"]
    assert "/tickets has 36 entries in all (the call counts them)" in text and '"T1001":{' not in text
    assert _solved(record)
    module = build_module(record["code"], "create_ticket")
    assert (module.shape, module.class_name, module.packages) == ("module", "HelpdeskEnv", ["pydantic"])


def test_helpdesk_tools_raise_their_own_exceptions_and_enum_transitions_hold():
    failures = [_record(HELPDESK, "merge_tickets", {"source_ticket_id": "T1002", "target_ticket_id": "T1002"}),
                _record(HELPDESK, "update_status", {"ticket_id": "T9999", "status": "open"}),
                _record(HELPDESK, "update_status", {"ticket_id": "T1001", "status": "pending"})]
    assert [r["observation"]["error"].split(":")[0] for r in failures] == ["InvalidTransition", "NotFound",
                                                                            "InvalidTransition"]
    assert all(_solved(r) for r in failures)
    assert _solved(_record(HELPDESK, "assign_ticket", {"ticket_id": "T1001", "agent_id": "A02"}), mode="mdp")


def test_the_prompts_tool_error_is_the_rule_and_a_class_of_the_codes_own_is_an_ordinary_exception():
    from envsim.evaluation.baselines.executor_baseline import run_shown
    from envsim.evaluation.prompting.shown_prompt import ShownPrompt

    ending = "\n\n# The call runs Desk.close on an object whose public attributes are the state.\n"
    provided = "class Desk:\n    def close(self) -> dict:\n        raise ToolError('closed already')\n" + ending
    own = "class ToolError(Exception):\n    pass\n\n" + provided
    action = {"name": "close", "arguments": {}}
    answers = [run_shown(ShownPrompt("mdp", "desk", action, {"open": True}, code=code, code_kind="tool")).observation
               for code in (provided, own)]
    assert answers == [{"success": False, "error": "closed already"}, {"success": False, "error": "ToolError: closed already"}]


def test_prompt_version_4_maps_objects_to_the_state_and_is_the_default_for_benchmark_files():
    text = system_prompt("4", "mdp-view")
    assert 'self.db.tickets["T1"].status` is state["tickets"]["T1"]["status"]' in text
    assert "Enum members appear as their values" in text and "You see a view" in text
    assert 'in the code is state["<name>"]' not in text and 'in the code is state["<name>"]' in system_prompt("3", "mdp-view")
    assert default_prompt_version("shop_test.jsonl", "mdp-view") == "4"
    assert default_prompt_version("v2", "mdp-view") == default_prompt_version("v1", "mdp-view") == "3"
    assert default_prompt_version("shop_test.jsonl", "mdp") == "1"
    record = _record(HELPDESK, "get_ticket", {"ticket_id": "T1003"})
    three, four = build_messages(record, "mdp-view", version="3"), build_messages(record, "mdp-view", version="4")
    assert three[1] == four[1] and three[0] != four[0]  # the user message reads as in version 3
