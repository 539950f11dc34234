"""The v2 chained tier: episodes of 2-8 calls on one state, labelled step by step.

An episode is one JSON line: the initial ``state``, and ``steps`` (each with its ``action``, the
tool ``code``, and the true ``observation``, ``patch``, ``delta_size``, ``outcome``, ``stratum``,
``arg_count``); ``final_state`` is the state after the last step. Applying the patches in order to
``state`` gives every intermediate state and ``final_state`` (tested for every shipped episode).
At evaluation time the simulator's own predicted state is carried forward (``evaluation/scoring/chained.py``).

Candidates are seeded explorer rollouts of ``max_length`` calls from ``sample_state``;
``sample_episodes`` cuts them to each target length, keeps only episodes that change the state
(at least one change for 2 calls, at least two for longer ones) and spreads them over environments.
"""

from __future__ import annotations

import hashlib
import random
from collections import defaultdict
from typing import Any, Sequence

from envsim.construction.explorer import ExplorerPolicy
from envsim.construction.rollout import rollout
from envsim.delta import canonical_json
from envsim.envs.registry import get_env
from envsim.construction.labelling import record_code
from envsim.envs.shown import env_version

STEP_FIELDS = ("action", "tool", "code", "observation", "patch", "delta_size", "outcome", "stratum", "arg_count")


def episode_id(env_id: str, state: dict[str, Any], actions: Sequence[dict[str, Any]]) -> str:
    """Identity of an episode: sha256 of (environment, initial state, actions), shortened."""
    return hashlib.sha256(canonical_json([env_id, state, list(actions)]).encode()).hexdigest()[:20]


def candidate_episodes(env_id: str, seed: int, episodes: int, max_length: int = 8) -> list[dict[str, Any]]:
    """``episodes`` labelled explorer rollouts of ``max_length`` calls (untrimmed candidates)."""
    cls = get_env(env_id)
    base = seed * 1_000_003 + sum(env_id.encode())
    codes: dict[str, str] = {}
    version, schemas = env_version(cls), cls.tool_schemas()
    out = []
    for episode in range(episodes):
        state = cls.sample_state(base + episode)
        steps = []
        for t in rollout(cls, state, ExplorerPolicy(seed=base * 100_003 + episode), max_length):
            if t.tool not in codes:
                codes[t.tool] = record_code(cls, t.tool)
            steps.append({"action": t.action.to_json(), "tool": t.tool, "code": codes[t.tool],
                          "observation": t.observation,
                          "patch": t.patch, "delta_size": t.delta_size, "outcome": t.outcome, "stratum": t.stratum,
                          "arg_count": t.arg_count, "next_state": t.next_state})
        out.append({"env": env_id, "env_version": version, "state": state, "steps": steps, "tools": schemas})
    return out


def trim(candidate: dict[str, Any], length: int, split: str = "test") -> dict[str, Any]:
    """The episode made of the first ``length`` steps of a candidate (public field order)."""
    steps = candidate["steps"][:length]
    actions = [s["action"] for s in steps]
    return {
        "id": episode_id(candidate["env"], candidate["state"], actions),
        "env": candidate["env"], "env_version": candidate["env_version"], "length": length,
        "state": candidate["state"],
        "steps": [{"index": i, **{k: s[k] for k in STEP_FIELDS}} for i, s in enumerate(steps)],
        "final_state": steps[-1]["next_state"],
        "total_delta_size": sum(s["delta_size"] for s in steps),
        "changing_steps": sum(s["delta_size"] > 0 for s in steps),
        "split": split, "tools": candidate["tools"],
    }


def eligible(candidate: dict[str, Any], length: int) -> bool:
    """Whether the first ``length`` steps of a candidate make an episode worth scoring for drift: it has
    that many steps and changes the state (twice when it has 3 calls or more)."""
    steps = candidate["steps"][:length]
    changing = sum(s["delta_size"] > 0 for s in steps)
    return len(steps) == length and changing >= (1 if length <= 2 else 2)


def sample_episodes(candidates: Sequence[dict[str, Any]], lengths: Sequence[int], per_length: int, seed: int,
                    per_env_cap: int | None = None, split: str = "test") -> list[dict[str, Any]]:
    """``per_length`` episodes of every length in ``lengths``, each candidate used at most once,
    environments taken least-used first (at most ``per_env_cap`` episodes each). Raises ``ValueError``
    when the candidates cannot fill a length."""
    rng = random.Random(seed)
    order = sorted(range(len(candidates)), key=lambda i: episode_id(candidates[i]["env"], candidates[i]["state"],
                                                                     [s["action"] for s in candidates[i]["steps"]]))
    rng.shuffle(order)
    used: set[int] = set()
    per_env: dict[str, int] = defaultdict(int)
    chosen: list[dict[str, Any]] = []
    for length in lengths:
        picks = 0
        while picks < per_length:
            best, best_count = None, None
            for i in order:
                env = candidates[i]["env"]
                if i in used or (per_env_cap is not None and per_env[env] >= per_env_cap):
                    continue
                if not eligible(candidates[i], length):
                    continue
                if best_count is None or per_env[env] < best_count:
                    best, best_count = i, per_env[env]
                    if best_count == 0:
                        break
            if best is None:
                raise ValueError(f"chained tier: only {picks} eligible episodes of length {length}; "
                                 "add candidate episodes")
            used.add(best)
            per_env[candidates[best]["env"]] += 1
            chosen.append(trim(candidates[best], length, split))
            picks += 1
    return chosen


def build_chained(env_ids: Sequence[str], seed: int, *, candidates_per_env: int, lengths: Sequence[int],
                  per_length: int, per_env_cap: int | None, split: str = "test",
                  progress: Any = None) -> list[dict[str, Any]]:
    """The chained tier: candidates of every environment, then ``sample_episodes``."""
    pool = []
    for env_id in env_ids:
        pool += candidate_episodes(env_id, seed, candidates_per_env, max(lengths))
        if progress is not None:
            progress.update(1)
    return sample_episodes(pool, lengths, per_length, seed, per_env_cap, split)


def replay_states(episode: dict[str, Any]) -> list[dict[str, Any]]:
    """The true state after every step, by applying the stored patches to the initial state."""
    from envsim.delta import apply_patch

    states, state = [], episode["state"]
    for step in episode["steps"]:
        state = apply_patch(state, step["patch"])
        states.append(state)
    return states


def step_records(episode: dict[str, Any]) -> list[dict[str, Any]]:
    """Each step as a one-step record on its true state (what a perfect simulator is asked at that step)."""
    states = [episode["state"], *replay_states(episode)]
    return [{"env": episode["env"], "state": states[i], "action": s["action"], "code": s["code"],
             "tools": episode["tools"], "observation": s["observation"], "patch": s["patch"], "stratum": s["stratum"]}
            for i, s in enumerate(episode["steps"])]


def chained_stats(episodes: Sequence[dict[str, Any]], tokenizer: Any = None) -> dict[str, Any]:
    """Counts of a chained tier (episodes per length, steps per stratum, environments) and counted tokens:
    per step, the ``mdp`` prompt v2 on the true state and the target answer; per episode, their sums."""
    from collections import Counter

    from envsim.evaluation.prompting.prompts import build_messages, target_answer
    from envsim.records import STRATA
    from envsim.tokens import chat_tokens, count_tokens, get_tokenizer, token_stats, tokenizer_name

    counter = tokenizer if hasattr(tokenizer, "chat") else get_tokenizer(tokenizer)
    step_prompt: dict[str, list[int]] = {s: [] for s in STRATA}
    step_answer: dict[str, list[int]] = {s: [] for s in STRATA}
    per_episode: list[int] = []
    for episode in episodes:
        total = 0
        for record in step_records(episode):
            p = chat_tokens(build_messages(record, "mdp", version="2"), counter)
            step_prompt[record["stratum"]].append(p)
            step_answer[record["stratum"]].append(count_tokens(target_answer(record, "2"), counter))
            total += p
        per_episode.append(total)
    steps = [s for e in episodes for s in e["steps"]]
    return {
        "episodes": len(episodes), "steps": len(steps), "environments": len({e["env"] for e in episodes}),
        "by_length": {str(k): v for k, v in sorted(Counter(e["length"] for e in episodes).items())},
        "steps_by_stratum": {s: sum(x["stratum"] == s for x in steps) for s in STRATA},
        "max_per_env": max(Counter(e["env"] for e in episodes).values(), default=0),
        "tokens": {"tokenizer": tokenizer_name(counter), "prompt_mode": "mdp", "prompt_version": "2",
                   "step_prompt": {"overall": token_stats([c for v in step_prompt.values() for c in v]),
                                   **{s: token_stats(v) for s, v in step_prompt.items()}},
                   "step_answer": {"overall": token_stats([c for v in step_answer.values() for c in v]),
                                   **{s: token_stats(v) for s, v in step_answer.items()}},
                   "episode_prompt_total": token_stats(per_episode)},
    }


def chained_stats_markdown(title: str, stats: dict[str, Any]) -> str:
    """The chained tier's statistics as Markdown."""
    tokens = stats["tokens"]
    lines = [f"## {title}", "", f"{stats['episodes']} episodes, {stats['steps']} calls, {stats['environments']} "
             f"environments (at most {stats['max_per_env']} episodes each).", "",
             "| length | episodes |", "|---:|---:|", *[f"| {k} | {v} |" for k, v in stats["by_length"].items()], "",
             f"Tokens counted with `{tokens['tokenizer']}`, prompt `mdp` v2 on the true state of each step.", "",
             "| step stratum | steps | prompt mean | p50 | p95 | max | answer mean | answer max |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, p in tokens["step_prompt"].items():
        if p["n"]:
            a = tokens["step_answer"][name]
            lines.append(f"| {name} | {p['n']} | {p['mean']:,.0f} | {p['p50']:,.0f} | {p['p95']:,.0f} | {p['max']:,} "
                         f"| {a['mean']:,.0f} | {a['max']:,} |")
    e = tokens["episode_prompt_total"]
    if e["n"]:
        lines += ["", f"Prompt tokens per episode (all steps): mean {e['mean']:,.0f}, p95 {e['p95']:,.0f}, "
                      f"max {e['max']:,}."]
    return "\n".join(lines) + "\n"


def load_episodes(name: str = "v2", split: str = "chained", check: Any = None) -> list[dict[str, Any]]:
    """The episodes of a chained tier file (a shipped benchmark's split, or a JSONL path); each line must be
    an episode (``id``, ``env``, ``state``, ``steps`` with actions, ``tools`` when present a list of tool schemas),
    read with the strict decoder (nesting at most ``MAX_DEPTH``), else a ``ValueError`` naming the line. ``check``
    (a step -> its problem or ``None``: what a run needs of each step, such as code a view can be derived from)
    names a bad step at its line too."""
    from envsim.benchmark import benchmark_path
    from envsim.benchmark.state_store import StateRefError, has_refs, resolve, state_folder
    from envsim.benchmark.validation import tools_problem
    from envsim.jsonsafe import loads

    path = benchmark_path(name, split)
    episodes = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                episode = loads(line)
            except (ValueError, RecursionError) as exc:  # JSON errors and limits (NaN, depth, long integers)
                raise ValueError(f"{path}:{number}: not a JSON line ({str(exc)[:200]})") from None
            if has_refs(episode):  # a large-state track: states stored once, resolved on read
                episode = resolve(episode, state_folder(path))
            try:  # resolving refs here names a bad one at its line (bounded: benchmark.state_store)
                shaped = (isinstance(episode, dict) and isinstance(episode.get("state"), dict)
                          and isinstance(episode.get("steps"), list) and episode["steps"]
                          and all(isinstance(s, dict) and isinstance(s.get("action"), dict) for s in episode["steps"])
                          and isinstance(episode.get("id"), str) and isinstance(episode.get("env"), str)
                          and isinstance(episode.get("final_state", {}), dict))
                problem = tools_problem(episode["tools"]) if shaped and "tools" in episode else None
            except StateRefError as exc:
                raise ValueError(f"{path}:{number}: {exc}") from None
            if not shaped:
                raise ValueError(f"{path}:{number}: not a chained episode (needs id, env, state and steps with actions)")
            for i, step in enumerate(episode["steps"] if check is not None and problem is None else ()):
                found = check(step)
                problem = f"steps[{i}]: {found}" if found else None
                if problem:
                    break
            if problem:
                raise ValueError(f"{path}:{number}: {problem}")
            episode.setdefault("length", len(episode["steps"]))
            episodes.append(episode)
    return episodes
