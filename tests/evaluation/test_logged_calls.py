"""Logged calls of the same tool listed in the prompt (``evaluation.prompting.logged_calls``): which calls are picked
(never the asked question, commonest effects first, same record preferred), where the part sits, how SFT data and
``envsim eval --logged-calls`` use one pool, and that a pool of held-out environments is refused."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from envsim.cli import main
from envsim.construction.pipeline import build_pool, write_jsonl
from envsim.evaluation.endpoints.providers import NullProvider
from envsim.evaluation.prompting.logged_calls import (EXAMPLES_HEADING, LoggedCalls, effect_shape, load_logged_calls,
                                                      logged_call, pool_from_samples)
from envsim.evaluation.prompting.prompts import build_messages
from envsim.evaluation.running.runner import EvalConfig, prepare_run_dir, run_samples
from envsim.training.data import check_logged_examples, write_sft_dataset
from envsim.training.sft_cpu import read_samples

ENV = "issue_dependency_tracker-v1"


def _record(rid: str, tool: str, args: dict, patch: list, observation: object = None, state: object = None) -> dict:
    return {"id": rid, "env": "e", "action": {"name": tool, "arguments": args}, "patch": patch,
            "observation": {"success": True} if observation is None else observation,
            "state": {"n": rid} if state is None else state}


def _pool(records: list[dict]) -> LoggedCalls:
    return LoggedCalls(logged_call(r, f"answer of {r['id']}", "3") for r in records)


CHANGE_X = [{"op": "replace", "path": "/items/IT-1/x", "value": 1}]
LOG = [_record("a1", "t", {"item": "IT-1"}, CHANGE_X), _record("a2", "t", {"item": "IT-2"}, CHANGE_X),
       _record("a3", "t", {"item": "IT-3"}, [{"op": "replace", "path": "/items/IT-3/x", "value": 2}]),
       _record("c1", "t", {"item": "IT-4"}, []), _record("c2", "t", {"item": "IT-5"}, []),
       _record("b1", "t", {"item": "IT-9"}, [], observation={"success": False, "error": "no"}),
       _record("o1", "other", {"item": "IT-1"}, CHANGE_X)]


def test_the_commonest_effect_shapes_come_first_one_call_each_then_the_next_round() -> None:
    assert effect_shape(LOG[0]) == effect_shape(LOG[2]) == ("change", (("replace", "/items/*/x"),))
    asked = _record("q", "t", {"item": "IT-7"}, [])
    picked = [c.id for c in _pool(LOG).pick(asked, 5)]
    assert [p[0] for p in picked] == ["a", "c", "b", "a", "c"]  # 3 changes, 2 no-changes, 1 error: by frequency
    assert picked == [c.id for c in _pool(list(reversed(LOG))).pick(asked, 5)]  # the log's order does not matter
    assert [c.id for c in _pool(LOG).pick(asked, 1)] == picked[:1]
    assert _pool(LOG).pick(asked, 0) == [] and _pool(LOG).pick(_record("q", "none", {}, []), 3) == []


def test_within_a_shape_the_call_about_the_same_record_is_taken() -> None:
    for item, expected in (("IT-2", "a2"), ("IT-3", "a3"), ("IT-1", "a1")):
        assert _pool(LOG).pick(_record("q", "t", {"item": item}, []), 1)[0].id == expected


def test_the_asked_question_itself_is_never_shown_under_any_id() -> None:
    own = _pool(LOG).pick(LOG[0], 10)
    assert "a1" not in {c.id for c in own} and {c.tool for c in own} == {"t"} and len(own) == 5
    same_question = {**LOG[1], "id": "copy-of-a2"}
    assert "a2" not in {c.id for c in _pool(LOG).pick(same_question, 10)}
    other_state = {**LOG[1], "id": "a2-later", "state": {"n": "changed"}}
    assert "a2" in {c.id for c in _pool(LOG).pick(other_state, 10)}


def test_the_examples_part_sits_before_the_call_and_leaves_the_rest_of_the_prompt_as_it_was() -> None:
    record = build_pool([ENV], 5, 1, 6, "train")[-1]
    plain = build_messages(record, "mdp-view", version="3")
    listed = build_messages(record, "mdp-view", version="3", examples=[("t({})", '{"x":1}'), ("t({\"a\":2})", "y")])
    part = f"{EXAMPLES_HEADING}\n1. t({{}})\n-> {{\"x\":1}}\n2. t({{\"a\":2}})\n-> y\n\n"
    call_at = plain[1]["content"].rindex("Call:\n")
    assert listed[1]["content"] == plain[1]["content"][:call_at] + part + plain[1]["content"][call_at:]
    assert listed[0] == plain[0]
    from envsim.evaluation.prompting.shown_prompt import read_prompt

    assert read_prompt(listed) == read_prompt(plain)  # the executor baseline reads the same state, code and call


@pytest.fixture(scope="module")
def train_data(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[dict]]:
    """SFT data of one training environment without and with 2 logged calls per prompt (Qwen's BPE counts)."""
    records = build_pool([ENV], 5, 3, 12, "train")
    root = tmp_path_factory.mktemp("logged")
    for name, k in (("plain", 0), ("logged", 2)):
        write_sft_dataset(records, root / name, "in_env", "mdp-view", version="3", cutoff=8192,
                          append_form="dash", replace_tests="shown", logged_examples=k)
    return root / "plain", root / "logged", records


def test_sft_prompts_list_other_samples_of_the_same_tool_with_their_exact_answers(train_data) -> None:
    plain_dir, logged_dir, records = train_data
    plain = {s["id"]: s for s in read_samples(plain_dir / "in_env.jsonl")}
    logged = {s["id"]: s for s in read_samples(logged_dir / "in_env.jsonl")}
    assert plain.keys() == logged.keys() and len(logged) == len(records)
    tool = {r["id"]: r["action"]["name"] for r in records}
    shown = 0
    for sid, sample in logged.items():
        assert sample["messages"][-1] == plain[sid]["messages"][-1]  # the same target
        examples = sample.get("examples", [])
        assert sid not in examples and all(tool[e] == tool[sid] for e in examples) and len(examples) <= 2
        for example in examples:
            assert "\n-> " + plain[example]["messages"][-1]["content"] + "\n" in sample["messages"][1]["content"] + "\n"
        shown += len(examples)
        if not examples:
            assert sample["messages"][:2] == plain[sid]["messages"][:2]
    assert shown > len(logged)  # most prompts list two
    assert load_logged_calls(logged_dir).size == len(records)


def test_a_prompt_that_would_pass_the_cutoff_lists_fewer_calls_and_stays_in(train_data, tmp_path) -> None:
    from envsim.tokens import chat_tokens, get_tokenizer

    plain_dir, _, records = train_data
    counter = get_tokenizer(None)
    longest = max(chat_tokens(s["messages"], counter) for s in read_samples(plain_dir / "in_env.jsonl"))
    _, tokens = write_sft_dataset(records, tmp_path, "in_env", "mdp-view", version="3", cutoff=longest + 150,
                                  append_form="dash", replace_tests="shown", logged_examples=2)
    samples = read_samples(tmp_path / "in_env.jsonl")
    assert len(samples) == len(records) and tokens["dropped_over_cutoff"] == 0
    assert all(chat_tokens(s["messages"], counter) <= longest + 150 for s in samples)
    counts = tokens["logged_examples"]["shown"]
    assert sum(counts.values()) == len(records) and counts.get(2, 0) < len(records) and len(counts) >= 2


def test_samples_too_long_without_logged_calls_are_dropped_and_counted_once(train_data, tmp_path) -> None:
    from envsim.tokens import chat_tokens, get_tokenizer

    plain_dir, _, records = train_data
    counter = get_tokenizer(None)
    lengths = {s["id"]: chat_tokens(s["messages"], counter) for s in read_samples(plain_dir / "in_env.jsonl")}
    cutoff = sorted(lengths.values())[len(lengths) // 2]
    over = {sid for sid, n in lengths.items() if n > cutoff}
    _, tokens = write_sft_dataset(records, tmp_path, "in_env", "mdp-view", version="3", cutoff=cutoff,
                                  append_form="dash", replace_tests="shown", logged_examples=2)
    written = read_samples(tmp_path / "in_env.jsonl")
    assert over and {s["id"] for s in written} == set(lengths) - over
    assert tokens["dropped_over_cutoff"] == len(over) and set(tokens["dropped_ids"]) == over
    assert not {e for s in written for e in s.get("examples", [])} & over  # a dropped sample is no logged call
    assert {json.loads(line)["id"] for line in (tmp_path / "in_env.records.jsonl").read_text().splitlines()} \
        == set(lengths) - over


def test_a_recipe_asks_for_a_small_whole_number_of_logged_calls() -> None:
    assert check_logged_examples(3) == 3
    for bad in (-1, 9, 2.5, True, "3"):
        with pytest.raises(ValueError, match="logged_examples"):
            check_logged_examples(bad)


class UserPromptRecorder(NullProvider):
    """The null baseline that keeps every user message it is sent."""

    def __init__(self) -> None:
        self.users: dict[str, str] = {}

    async def generate(self, messages, record):  # type: ignore[override]
        self.users[record["id"]] = messages[-1]["content"]
        return await super().generate(messages, record)


def test_a_run_lists_the_pools_calls_in_each_prompt(train_data, tmp_path) -> None:
    _, logged_dir, _ = train_data
    pool = load_logged_calls(logged_dir)
    heldout = [r for r in build_pool([ENV], 1013, 1, 10, "train")][:6]
    config = EvalConfig(model="null", benchmark="x", prompt_mode="mdp-view", prompt_version="3")
    prepare_run_dir(tmp_path, config)
    recorder = UserPromptRecorder()
    asyncio.run(run_samples(heldout, recorder, config, tmp_path,
                            examples=lambda r: [(c.call, c.answer) for c in pool.pick(r, 2)]))
    for record in heldout:
        expected = build_messages(record, "mdp-view", version="3",
                                  examples=[(c.call, c.answer) for c in pool.pick(record, 2)])
        assert recorder.users[record["id"]] == expected[-1]["content"]
    assert any(EXAMPLES_HEADING in text for text in recorder.users.values())


def test_eval_names_the_pool_in_its_config_and_run_dir_and_refuses_a_held_out_pool(train_data, tmp_path) -> None:
    _, logged_dir, _ = train_data
    bench = tmp_path / "heldout.jsonl"
    write_jsonl(build_pool([ENV], 1013, 1, 10, "train")[:5], bench)
    base = ["eval", "--model", "null", "--benchmark", str(bench), "--prompt-mode", "mdp-view", "--runs-root",
            str(tmp_path / "runs")]
    result = CliRunner().invoke(main, [*base, "--logged-calls", str(logged_dir), "--logged-k", "2"])
    assert result.exit_code == 0, result.output
    run_dir = next((tmp_path / "runs").iterdir())
    assert run_dir.name.endswith("-logged2")
    config = json.loads((run_dir / "config.json").read_text())
    assert config["logged_k"] == 2 and config["logged_calls_sha256"] == load_logged_calls(logged_dir).digest()
    plain = CliRunner().invoke(main, base)
    assert plain.exit_code == 0 and len(list((tmp_path / "runs").iterdir())) == 2
    resumed_without = CliRunner().invoke(main, [*base, "--run-dir", str(run_dir)])
    assert resumed_without.exit_code != 0 and "logged_calls_sha256" in resumed_without.output
    for held_out in ("airline_seat_map-v1",):  # a v1 test environment: its answers must never reach v1 prompts
        leak = tmp_path / "leak"
        write_sft_dataset(build_pool([held_out], 0, 1, 6, "test"), leak, "in_env", "mdp", version="2", cutoff=8192)
        refused = CliRunner().invoke(main, [*base, "--logged-calls", str(leak)])
        assert refused.exit_code == 2 and "--logged-calls" in refused.output, refused.output
        assert "held-out test environments" in refused.output and held_out in refused.output
    assert not pool_from_samples([], []).by_tool


def test_grpo_prompts_list_the_calls_the_sft_prompts_listed(train_data) -> None:
    from envsim.training.rl import logged_examples_of, read_records, rl_rows

    plain_dir, logged_dir, _ = train_data
    records_path = logged_dir / "in_env.records.jsonl"
    assert logged_examples_of(records_path) is None  # no stats.json: the folder says nothing about its prompts
    (logged_dir / "stats.json").write_text(json.dumps({"logged_examples": 2}))
    (plain_dir / "stats.json").write_text(json.dumps({"logged_examples": 0}))
    try:
        rows = rl_rows(read_records(records_path), "mdp-view", "3", logged_examples_of(records_path))
        samples = read_samples(logged_dir / "in_env.jsonl")
        assert [r["prompt"] for r in rows] == [s["messages"][:-1] for s in samples]
        assert logged_examples_of(plain_dir / "in_env.records.jsonl") is None
    finally:
        (logged_dir / "stats.json").unlink()
