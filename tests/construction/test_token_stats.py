"""Data cards count prompt / answer tokens per stratum (never a characters-per-token guess)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from envsim.cli import main
from envsim.construction.stats import record_token_stats, tokens_markdown
from envsim.envs.registry import get_env
from envsim.envs.shown import class_source
from envsim.evaluation.prompting.prompts import build_messages, target_answer
from envsim.tokens import chat_tokens, count_tokens


def test_record_token_stats_count_each_stratum(small_records):
    source = {"online_store-v1": class_source(get_env("online_store-v1"))}
    stats = record_token_stats(small_records, prompt_mode="full-class", prompt_version="2", class_sources=source,
                               cutoff=1000)
    assert stats["tokenizer"] == "qwen-bpe" and stats["prompt_version"] == "2"
    for stratum in {r["stratum"] for r in small_records}:
        rows = [r for r in small_records if r["stratum"] == stratum]
        prompts = [chat_tokens(build_messages(r, "full-class", class_source=source[r["env"]], version="2"))
                   for r in rows]
        answers = [count_tokens(target_answer(r, "2")) for r in rows]
        assert stats["prompt"][stratum]["n"] == len(rows) and stats["prompt"][stratum]["max"] == max(prompts)
        assert stats["prompt"][stratum]["over_cutoff"] == sum(p > 1000 for p in prompts)
        assert stats["answer"][stratum]["max"] == max(answers)
    assert stats["prompt"]["overall"]["n"] == len(small_records)
    table = tokens_markdown(stats)
    assert "over cutoff" in table and f"| overall | {len(small_records)} |" in table


def test_construct_writes_token_figures_into_the_data_card(tmp_path):
    cls = get_env("online_store-v1")
    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps({"env": "online_store-v1", "state": cls.sample_state(0), "actions": [
        {"name": "list_categories", "arguments": {}}, {"name": "cancel_order", "arguments": {"order_id": "nope"}}]})
        + "\n")
    out = tmp_path / "card.jsonl"
    result = CliRunner().invoke(main, ["construct", "--split", "test", "--policy", "replay", "--replay-log", str(log),
                                       "--pool", "10", "--out", str(out)])
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in out.read_text().splitlines()]
    stats = json.loads(out.with_suffix(".stats.json").read_text())
    tokens = stats["tokens"]
    assert tokens["prompt_version"] == "1" and tokens["prompt_mode"] == "mdp"      # benchmark v1 keeps version 1
    assert tokens["prompt"]["overall"]["max"] == max(chat_tokens(build_messages(r)) for r in records)
    assert "Tokens counted with `qwen-bpe`" in out.with_suffix(".stats.md").read_text()
