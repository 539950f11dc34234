"""A warning before a run whose whole-state prompts are large while a view prompt mode exists for its records.

A production database as the state gives prompts of tens of thousands of tokens (a 160,000-character helpdesk
state: about 65,000 tokens), which most simulators cannot take or answer well; ``--prompt-mode mdp-view``
shows each call's verified state view instead (a few thousand tokens). Before the first request,
``large_prompt_warning`` counts the prompts of up to ``SAMPLED`` samples spread over the run (chat framing
included, the run's token counter) and warns when their p95 passes ``LARGE_PROMPT_TOKENS`` and every sampled
record can be prompted with views (its code parses), giving both figures.
"""

from __future__ import annotations

from typing import Any

#: Counted prompt tokens (p95 of the sampled samples) past which a full-state run is warned.
LARGE_PROMPT_TOKENS = 32_768
#: Samples counted (spread evenly over the run).
SAMPLED = 12
#: Prompt modes that show the whole state (the ones a view mode replaces).
FULL_STATE_MODES = ("mdp",)


def sampled(stream: Any, count: int = SAMPLED) -> list[dict[str, Any]]:
    """Up to ``count`` records of a ``benchmark.stream.RecordStream``, spread evenly over its positions."""
    from envsim.benchmark.stream import RecordStream, cut_positions

    positions = cut_positions(list(stream.positions), count)
    return list(RecordStream(stream.path, stream.total, positions, stream.records))


def large_prompt_warning(stream: Any, prompt_mode: str, prompt_version: str, counter: Any = None) -> str | None:
    """The warning line (``None`` when the mode shows no whole state, the prompts are not large, or some sampled
    record has no view); ``counter``: a token counter or model directory (default: Qwen's BPE)."""
    from envsim.evaluation.prompting.prompts import VIEW_PROMPT_VERSION, build_messages, view_problem
    from envsim.tokens import chat_tokens, get_tokenizer, token_stats, tokenizer_name

    if prompt_mode not in FULL_STATE_MODES:
        return None
    records = sampled(stream)
    if not records or any(view_problem(r) for r in records):
        return None
    prompts = [build_messages(r, prompt_mode, version=prompt_version) for r in records]
    if max(sum(len(m["content"]) for m in p) for p in prompts) < LARGE_PROMPT_TOKENS:
        return None  # fewer characters than the limit: fewer tokens too
    counter = counter if hasattr(counter, "chat") else get_tokenizer(counter)
    full = token_stats(chat_tokens(p, counter) for p in prompts)
    if full["p95"] <= LARGE_PROMPT_TOKENS:
        return None
    views = token_stats(chat_tokens(build_messages(r, "mdp-view", version=VIEW_PROMPT_VERSION), counter)
                        for r in records)
    return (f"warning: large prompts: counted prompt tokens p95 {full['p95']:,.0f}, max {full['max']:,} "
            f"({len(records)} of {len(stream)} samples, --prompt-mode {prompt_mode}, {tokenizer_name(counter)}); "
            f"--prompt-mode mdp-view --prompt-version {VIEW_PROMPT_VERSION} shows each call's verified state view "
            f"instead: p95 {views['p95']:,.0f}, max {views['max']:,} on the same samples")
