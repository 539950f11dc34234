"""``envsim envs check MODULE:CLASS``: conformance checks of a user's own environment class, one line per finding.

What a user needs to know before building a benchmark from their class (issue 53, item 6), each check measured:

* **load**: the class loads (its module is trusted by naming it) and gives a JSON initial state, the same twice;
* **code**: every tool has source to show (``envs.shown.shown_tool_code``) holding ``def <tool>``;
* **arguments**: the explorer (``construction.state_explorer``) builds arguments EnvSim's own argument check
  accepts, for every tool, on states along seeded rollouts;
* **determinism**: each tool, run twice on the same sampled state with the same arguments, answers the same and
  leaves the same next state (a ``uuid4()`` id, the clock or a random draw do not); the first differing path is
  named;
* **json**: every return value and next state is JSON (a value that is not is a failed call, never an outcome);
* **outcomes**: tools that never succeed in the sampled calls are named;
* **executor**: a small test pool (explorer rollouts, views verified as ``construct`` does) is answered by the
  executor baseline from the ``mdp-view`` prompt alone (``evaluation.baselines.executor_baseline``): a miss is a
  prompt-sufficiency defect;
* **views**: verified views and their prompt sizes in Qwen tokens (p50 / p95 / max).

A *defect* makes the benchmark wrong or unscorable and sets the exit code (1); a *warning* is worth a look;
*ok* lines give the figures measured. Nothing raises: a check that cannot run is a defect naming why.
"""

from __future__ import annotations

import copy
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable

from envsim.delta import canonical_json

#: Prompt-size lines: a view prompt over these many Qwen tokens at p95 / at most is named.
P95_TOKENS, MAX_TOKENS = 8_000, 32_000


@dataclass(frozen=True)
class Finding:
    """One line of the report."""

    level: str   # "defect", "warning" or "ok"
    check: str   # load, code, arguments, determinism, json, outcomes, executor, views
    text: str

    def line(self) -> str:
        """The printed line."""
        return f"{self.level.upper():7} {self.check:11} {self.text}"


@dataclass
class OwnCheck:
    """The findings of checking one class."""

    target: str
    findings: list[Finding] = field(default_factory=list)

    @property
    def defects(self) -> list[Finding]:
        """The findings that set the exit code."""
        return [f for f in self.findings if f.level == "defect"]

    def add(self, level: str, check: str, text: str) -> None:
        """Record a finding."""
        self.findings.append(Finding(level, check, text))


def first_difference(a: Any, b: Any, path: str = "") -> str:
    """The JSON pointer of the first place two JSON values differ (``/`` for the roots)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in list(a) + [k for k in b if k not in a]:
            if key not in a or key not in b:
                return f"{path}/{key}"
            if canonical_json(a[key]) != canonical_json(b[key]):
                return first_difference(a[key], b[key], f"{path}/{key}")
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            if canonical_json(x) != canonical_json(y):
                return first_difference(x, y, f"{path}/{i}")
    return path or "/"


def _short(value: Any, limit: int = 90) -> str:
    text = canonical_json(value) if not isinstance(value, str) else value
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _guard(report: OwnCheck, check: str, step: Callable[[], Any]) -> Any:
    """Run one check step; an exception is a defect line naming it (never a traceback)."""
    try:
        return step()
    except Exception as exc:  # noqa: BLE001 - every failure of the user's class is reported, not raised
        report.add("defect", check, f"could not run: {type(exc).__name__}: {_short(str(exc), 200)}")
        return None


def _load(report: OwnCheck) -> type | None:
    from envsim.envs.registry import get_env
    from envsim.envs.sandbox import trust_target
    from envsim.envs.sandbox.executor import StateError, check_json_state

    trust_target(report.target)
    cls = get_env(report.target)
    first, second = cls.sample_state(0), cls.sample_state(0)
    try:
        check_json_state(first, "the initial state")
    except StateError as exc:
        report.add("defect", "load", str(exc))
        return None
    if canonical_json(first) != canonical_json(second):
        report.add("defect", "load", f"two initial states differ at {first_difference(first, second)}: "
                                     "the class's __init__ is not deterministic")
    tools = cls.tool_specs()
    if not tools:
        report.add("defect", "load", "the class has no tools (public methods)")
        return None
    report.add("ok", "load", f"{cls.env_id()}: {len(tools)} tools, an initial state of "
                             f"{len(canonical_json(first)):,} JSON characters")
    return cls


def _code(report: OwnCheck, cls: type) -> None:
    from envsim.envs.shown import shown_tool_code

    missing = []
    for name in cls.tool_specs():
        try:
            code = shown_tool_code(cls, name)
        except Exception as exc:  # noqa: BLE001 - named per tool
            report.add("defect", "code", f"{name}: no code to show ({type(exc).__name__}: {_short(str(exc))})")
            continue
        if f"def {name}(" not in code:
            missing.append(name)
    if missing:
        report.add("warning", "code", f"shown code lacks 'def <tool>(' for {', '.join(missing)} (the call's own "
                                      "function under another name?)")


def _sampled_states(cls: type, seed: int, episodes: int, steps: int) -> list[dict[str, Any]]:
    """States along seeded explorer rollouts (the initial ones first), at most one per step."""
    from envsim.construction.rollout import seeded_rollouts

    states = [cls.sample_state(seed)]
    for transition in seeded_rollouts(cls, seed=seed, episodes=episodes, steps=steps):
        states.append(transition.next_state)
    return states


def _calls(report: OwnCheck, cls: type, states: list[dict[str, Any]], per_tool: int, seed: int
           ) -> dict[str, list[tuple[dict[str, Any], dict[str, Any]]]]:
    """``per_tool`` explorer calls per tool on sampled states (without deliberate misses); refused ones named."""
    from envsim.construction.state_explorer import StateExplorer
    from envsim.envs.arguments import argument_error

    explorer = StateExplorer(seed, miss_rate=0.0)
    calls: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    for name, spec in cls.tool_specs().items():
        refused: list[str] = []
        for i in range(per_tool):
            state = states[(i * 7 + len(name)) % len(states)]
            try:
                args = explorer.arguments_for(cls, spec, state)
            except Exception as exc:  # noqa: BLE001 - the explorer failing on a tool is a finding
                refused.append(f"the explorer raised {type(exc).__name__}: {_short(str(exc))}")
                continue
            problem = argument_error(spec, args)
            if problem:
                refused.append(f"{_short(args, 60)}: {problem}")
            else:
                calls.setdefault(name, []).append((state, args))
        if len(refused) == per_tool:
            report.add("defect", "arguments", f"{name}: the explorer built no arguments EnvSim's argument check "
                                              f"accepts ({per_tool} tried; first: {refused[0]})")
        elif refused:
            report.add("warning", "arguments", f"{name}: {len(refused)} of {per_tool} explorer argument sets refused "
                                               f"(first: {refused[0]})")
    return calls


def _determinism(report: OwnCheck, cls: type, calls: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]]) -> None:
    """Each call run twice on copies of its state: answers and next states compared; JSON checked."""
    from envsim.records import Action

    succeeded: Counter = Counter()
    run = 0
    for name, pairs in calls.items():
        for state, args in pairs:
            action = Action(name, args)
            try:
                first = cls.run_call(copy.deepcopy(state), action)
                second = cls.run_call(copy.deepcopy(state), action)
            except Exception as exc:  # noqa: BLE001 - the runner itself failing is a defect of the class
                report.add("defect", "json", f"{name}: the call could not be run ({type(exc).__name__}: "
                                             f"{_short(str(exc))})")
                break
            run += 1
            observation = first[0]
            error = observation.get("error", "") if isinstance(observation, dict) else ""
            if isinstance(error, str) and "non-JSON" in error:
                report.add("defect", "json", f"{name}({_short(args, 60)}): {_short(error, 160)}")
                break
            succeeded[name] += not (isinstance(observation, dict) and observation.get("success") is False)
            if canonical_json(first) != canonical_json(second):
                where = ("observation " + first_difference(first[0], second[0])
                         if canonical_json(first[0]) != canonical_json(second[0])
                         else "next state " + first_difference(first[1], second[1]))
                report.add("defect", "determinism", f"{name}: two runs on the same state differ at {where} "
                                                    f"({name}({_short(args, 60)})); construct leaves it out of test "
                                                    "splits")
                break
    never = [n for n in cls.tool_specs() if n in calls and not succeeded[n]]
    if never:
        report.add("warning", "outcomes", f"never succeeded in the sampled calls: {', '.join(never)}")
    report.add("ok", "determinism", f"{run} calls of {len(calls)} tools run twice on the same state")


def _pool(report: OwnCheck, cls: type, episodes: int, steps: int) -> None:
    """A small test pool answered by the executor from the mdp-view prompt; view sizes counted."""
    from envsim.construction.pipeline import build_pool
    from envsim.evaluation.baselines.executor_baseline import run_shown
    from envsim.evaluation.prompting.prompts import OBJECT_PROMPT_VERSION, build_messages
    from envsim.evaluation.prompting.shown_prompt import read_prompt
    from envsim.tokens import chat_tokens, get_tokenizer, token_stats

    records = build_pool([report.target], seed=0, episodes=episodes, steps=steps, split="test")
    counter = get_tokenizer()
    misses: dict[str, list[str]] = {}
    tokens: list[int] = []
    widened: Counter = Counter()
    scored = unreproducible = 0
    for record in records:
        view = record.get("view") or {}
        if view.get("verified") is False:
            unreproducible += 1
            continue  # not reproducible at all: the determinism check names the tool
        if view.get("widening"):
            widened[record["tool"]] += 1
        messages = build_messages(record, "mdp-view", version=OBJECT_PROMPT_VERSION)
        tokens.append(chat_tokens(messages, counter))
        answer = run_shown(read_prompt(messages))
        scored += 1
        if answer.status != "ran":
            misses.setdefault(record["tool"], []).append(f"{answer.status}: {_short(answer.detail)}")
        elif canonical_json(answer.observation) != canonical_json(record["observation"]):
            misses.setdefault(record["tool"], []).append(
                f"observation differs at {first_difference(answer.observation, record['observation'])}")
        elif canonical_json(answer.patch) != canonical_json(record["patch"]):
            misses.setdefault(record["tool"], []).append("the state change differs")
    for tool, why in sorted(misses.items()):
        report.add("defect", "executor", f"{tool}: {len(why)} record(s) not answered from the mdp-view prompt alone "
                                         f"(first: {why[0]})")
    missed = sum(len(v) for v in misses.values())
    report.add("ok" if not missed else "warning", "executor",
               f"{scored - missed} of {scored} records answered exactly by the executor from the mdp-view prompt "
               f"(a pool of {len(records)} from {episodes} x {steps} explorer calls"
               + (f"; {unreproducible} not reproducible when run again, left out" if unreproducible else "") + ")")
    for tool, count in sorted(widened.items()):
        report.add("warning", "views", f"{tool}: {count} view(s) widened by verification (the analysis missed a read)")
    if tokens:
        stats = token_stats(tokens)
        level = "defect" if stats["max"] > MAX_TOKENS else "warning" if stats["p95"] > P95_TOKENS else "ok"
        report.add(level, "views", f"mdp-view prompt tokens (Qwen) p50 {stats['p50']:,.0f} / p95 {stats['p95']:,.0f} / "
                                   f"max {stats['max']:,} over {len(tokens)} records (lines: p95 {P95_TOKENS:,}, max "
                                   f"{MAX_TOKENS:,})")


def check_own_class(target: str, *, seed: int = 0, episodes: int = 2, steps: int = 8, per_tool: int = 4
                    ) -> OwnCheck:
    """Every check above on the class ``target`` (``module:Class``)."""
    report = OwnCheck(target)
    cls = _guard(report, "load", lambda: _load(report))
    if cls is None:
        return report
    _guard(report, "code", lambda: _code(report, cls))
    states = _guard(report, "arguments", lambda: _sampled_states(cls, seed, 1, steps)) or [cls.sample_state(seed)]
    calls = _guard(report, "arguments", lambda: _calls(report, cls, states, per_tool, seed)) or {}
    _guard(report, "determinism", lambda: _determinism(report, cls, calls))
    _guard(report, "executor", lambda: _pool(report, cls, episodes, steps))
    return report
