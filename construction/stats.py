"""Statistics of a set of records: counts per stratum, |Δ|, arity, environment and domain, and
counted (never estimated) prompt / answer tokens per stratum."""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable, Iterable

from envsim.records import STRATA


def record_stats(records: Iterable[dict[str, Any]], domains: dict[str, str] | None = None) -> dict[str, Any]:
    """Counters of a record set (JSON-friendly)."""
    rows = list(records)
    domains = domains or {}
    return {
        "samples": len(rows),
        "environments": len({r["env"] for r in rows}),
        "domains": len({domains.get(r["env"], "unknown") for r in rows}),
        "by_stratum": {s: sum(r["stratum"] == s for r in rows) for s in STRATA},
        "by_delta": {str(k): v for k, v in sorted(Counter(r["delta_size"] for r in rows).items())},
        "by_arity": {str(k): v for k, v in sorted(Counter(r["arg_count"] for r in rows).items())},
        "by_domain": dict(sorted(Counter(domains.get(r["env"], "unknown") for r in rows).items())),
        "by_env": dict(sorted(Counter(r["env"] for r in rows).items())),
        **({"views": view_stats(rows)} if any("view" in r for r in rows) else {}),
    }


def tool_outcomes(pool: Iterable[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """Per environment and tool, over every labelled call (the pool, before sampling): calls, calls that
    succeeded (outcome other than ``failure``) and the success rate. Tools a record's ``tools`` schemas list
    that were never called count 0 calls."""
    counts: dict[str, dict[str, list[int]]] = {}
    for record in pool:
        tools = counts.setdefault(record["env"], {})
        for schema in record.get("tools") or []:
            name = (schema.get("function", schema) if isinstance(schema, dict) else {}).get("name")
            if isinstance(name, str):
                tools.setdefault(name, [0, 0])
        tally = tools.setdefault(record["tool"], [0, 0])
        tally[0] += 1
        tally[1] += record["outcome"] != "failure"
    return {env: {tool: {"calls": c, "succeeded": ok, "success_rate": round(ok / c, 3) if c else None}
                  for tool, (c, ok) in sorted(tools.items())} for env, tools in sorted(counts.items())}


def tool_lines(outcomes: dict[str, dict[str, dict[str, Any]]], shown: int = 8, envs: int = 10) -> list[str]:
    """Warnings naming the tools that never succeeded (never called, or every call failed), one line per
    environment (``shown`` tools at most; ``envs`` environments at most, then a line counting the others)."""
    lines: list[str] = []
    for env, tools in outcomes.items():
        never = [f"{tool} (" + ("never called" if t["calls"] == 0 else f"0 of {t['calls']} calls") + ")"
                 for tool, t in tools.items() if t["succeeded"] == 0]
        if never:
            more = f", +{len(never) - shown} more" if len(never) > shown else ""
            lines.append(f"warning: {env}: {len(never)} of {len(tools)} tools never succeeded: "
                         f"{', '.join(never[:shown])}{more}")
    if len(lines) > envs:
        lines = lines[:envs] + [f"warning: and in {len(lines) - envs} more environments (tool outcomes in the "
                                "stats files)"]
    return lines


def tools_markdown(outcomes: dict[str, dict[str, dict[str, Any]]]) -> str:
    """Per-tool success rates as Markdown (one table per environment)."""
    lines = ["### Tool outcomes (every labelled call, before sampling)", ""]
    for env, tools in outcomes.items():
        lines += [f"`{env}`", "", "| tool | calls | succeeded | success rate |", "|---|---:|---:|---:|"]
        lines += [f"| {tool} | {t['calls']} | {t['succeeded']} | "
                  + ("–" if t["success_rate"] is None else f"{t['success_rate']:.0%}") + " |" for tool, t in tools.items()]
        lines.append("")
    return "\n".join(lines) + "\n"


def view_stats(rows: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """How construction's verification went (records with a ``view`` field, see ``envsim.envs.views.verify``):
    checked, verified, widened per widening and per tool, not verified."""
    checked = [r for r in rows if isinstance(r.get("view"), dict)]
    by_tool: dict[str, Counter] = {}
    for r in checked:
        counts = by_tool.setdefault(r["tool"], Counter())
        counts["checked"] += 1
        if r["view"].get("widening"):
            counts[r["view"]["widening"]] += 1
        if not r["view"].get("verified"):
            counts["not_verified"] += 1
    widened = Counter(r["view"]["widening"] for r in checked if r["view"].get("widening"))
    return {"checked": len(checked), "verified": sum(bool(r["view"].get("verified")) for r in checked),
            "widened": sum(widened.values()), "by_widening": dict(sorted(widened.items())),
            "by_tool": {tool: dict(sorted(c.items())) for tool, c in sorted(by_tool.items())}}


def view_line(views: dict[str, Any]) -> str:
    """The console line: unverified views first, then verified and widened ones with their tools."""
    failed = views["checked"] - views["verified"]
    parts = [f"views: {failed} NOT verified (not even the whole state reproduced them)"] if failed else ["views:"]
    parts.append(f"{views['verified']} of {views['checked']} verified on the record, {views['widened']} widened")
    widened = [f"{tool} {k} {n}" for tool, c in views["by_tool"].items() for k, n in c.items()
               if k not in ("checked", "not_verified")]
    return " ".join(parts) + (f" ({', '.join(widened)})" if widened else "")


def token_stats_by_stratum(rows: Iterable[dict[str, Any]], prompt_tokens: Callable[[dict[str, Any]], int],
                           answer_tokens: Callable[[dict[str, Any]], int], *, tokenizer: str, prompt_mode: str,
                           prompt_version: str, cutoff: int | None = None) -> dict[str, Any]:
    """Prompt and answer token statistics (``envsim.tokens.token_stats``) overall and per stratum.

    ``prompt_tokens(row)`` / ``answer_tokens(row)`` count one row (a record, an SFT sample or an eval
    result); rows whose count is ``None`` are left out. ``cutoff`` adds ``over_cutoff`` to prompt figures.
    """
    from envsim.tokens import token_stats

    prompts: dict[str, list[int]] = {s: [] for s in STRATA}
    answers: dict[str, list[int]] = {s: [] for s in STRATA}
    for row in rows:
        stratum = row.get("stratum")
        p, a = prompt_tokens(row), answer_tokens(row)
        if stratum in prompts and p is not None:
            prompts[stratum].append(p)
        if stratum in answers and a is not None:
            answers[stratum].append(a)
    return {"tokenizer": tokenizer, "prompt_mode": prompt_mode, "prompt_version": prompt_version,
            "prompt": {"overall": token_stats([c for v in prompts.values() for c in v], cutoff),
                       **{s: token_stats(v, cutoff) for s, v in prompts.items() if v}},
            "answer": {"overall": token_stats([c for v in answers.values() for c in v]),
                       **{s: token_stats(v) for s, v in answers.items() if v}}}


def record_token_stats(records: Iterable[dict[str, Any]], *, prompt_mode: str = "mdp", prompt_version: str = "1",
                       tokenizer: Any = None, class_sources: dict[str, str] | None = None,
                       cutoff: int | None = None) -> dict[str, Any]:
    """Counted tokens of benchmark records: the chat prompt (framing and generation prompt included)
    and the exact target answer, per stratum. ``tokenizer``: a model directory, a loaded counter or None (Qwen BPE)."""
    from envsim.evaluation.prompting.prompts import build_messages, target_answer
    from envsim.tokens import chat_tokens, count_tokens, get_tokenizer, tokenizer_name

    counter = tokenizer if hasattr(tokenizer, "chat") else get_tokenizer(tokenizer)
    sources = class_sources or {}
    return token_stats_by_stratum(
        records,
        lambda r: chat_tokens(build_messages(r, prompt_mode, class_source=sources.get(r["env"]),
                                             version=prompt_version), counter),
        lambda r: count_tokens(target_answer(r, prompt_version), counter),
        tokenizer=tokenizer_name(counter), prompt_mode=prompt_mode, prompt_version=prompt_version, cutoff=cutoff)


def tokens_markdown(tokens: dict[str, Any]) -> str:
    """A Markdown table of prompt / answer token statistics per stratum."""
    has_cutoff = "over_cutoff" in tokens["prompt"]["overall"]
    lines = [f"Tokens counted with `{tokens['tokenizer']}`, prompt mode `{tokens['prompt_mode']}` "
             f"v{tokens['prompt_version']} (chat framing included).", "",
             "| stratum | n | prompt mean | p50 | p95 | max |" + (" over cutoff |" if has_cutoff else "")
             + " answer mean | answer max |",
             "|---|---:|---:|---:|---:|---:|" + ("---:|" if has_cutoff else "") + "---:|---:|"]
    for name, p in tokens["prompt"].items():
        if not p["n"]:
            continue
        a = tokens["answer"].get(name, {"n": 0})
        lines.append(f"| {name} | {p['n']} | {p['mean']:,.0f} | {p['p50']:,.0f} | {p['p95']:,.0f} | {p['max']:,} |"
                     + (f" {p['over_cutoff']} |" if has_cutoff else "")
                     + (f" {a['mean']:,.0f} | {a['max']:,} |" if a["n"] else " – | – |"))
    return "\n".join(lines) + "\n"


def stats_markdown(title: str, stats: dict[str, Any]) -> str:
    """The statistics as Markdown tables."""
    def table(name: str, counts: dict[str, int]) -> str:
        lines = [f"| {name} | samples |", "|---|---:|"] + [f"| {k} | {v} |" for k, v in counts.items()]
        return "\n".join(lines) + "\n"

    return "\n".join([
        f"## {title}", "", f"{stats['samples']} samples from {stats['environments']} environments"
        + (f" in {stats['domains']} domains." if "domains" in stats else "."), "",
        table("stratum", stats["by_stratum"]), table("|Δ|", stats["by_delta"]),
        table("arguments", stats["by_arity"]), table("domain", stats["by_domain"]),
        f"Samples per environment: min {min(stats['by_env'].values(), default=0)}, "
        f"max {max(stats['by_env'].values(), default=0)}.", "",
        *([tokens_markdown(stats["tokens"])] if stats.get("tokens") else []),
        *([views_markdown(stats["views"])] if stats.get("views") else []),
        *([tools_markdown(stats["tool_outcomes"])] if stats.get("tool_outcomes") else []),
    ])


def views_markdown(views: dict[str, Any]) -> str:
    """The view verification counts as Markdown (per tool: checked, widened to records / collections / state)."""
    lines = ["### State views verified at construction", "", view_line(views) + ".", "",
             "| tool | checked | records | collections | state | not verified |", "|---|---:|---:|---:|---:|---:|"]
    lines += [f"| {tool} | {c.get('checked', 0)} | {c.get('records', 0)} | {c.get('collections', 0)} | "
              f"{c.get('state', 0)} | {c.get('not_verified', 0)} |" for tool, c in views["by_tool"].items()]
    return "\n".join(lines) + "\n"
