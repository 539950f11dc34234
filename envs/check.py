"""Conformance check of an environment class against the environment contract.

``python -m envsim.envs.check ID [ID ...]`` (or ``--all``) prints the problems found and the
|Δ| histogram of seeded explorer rollouts; the test suite runs the same checks on every built-in.
"""

from __future__ import annotations

import ast
import inspect
import sys
import textwrap
from collections import Counter
from dataclasses import dataclass, field

from envsim.delta import apply_patch, canonical_json, same_json
from envsim.envs.base import Environment
from envsim.envs.sandbox import NondeterminismError, StateError, check_json_state

FORBIDDEN_MODULES = {"random", "time", "os", "sys", "socket", "subprocess", "uuid", "secrets", "requests",
                     "urllib", "pathlib", "shutil", "threading"}
FORBIDDEN_CALLS = {"open", "input", "print", "eval", "exec", "now", "today", "utcnow", "Sampler"}


@dataclass
class CheckReport:
    """What the conformance check found for one environment."""

    env_id: str
    problems: list[str] = field(default_factory=list)
    deltas: Counter = field(default_factory=Counter)
    outcomes: Counter = field(default_factory=Counter)
    transitions: int = 0

    @property
    def ok(self) -> bool:
        """No problem found."""
        return not self.problems


def static_problems(cls: type[Environment]) -> list[str]:
    """Tool-count, arity and purity problems found without running anything."""
    problems: list[str] = []
    specs = cls.tool_specs()
    writes = [s for s in specs.values() if s.write]
    if len(specs) < 6:
        problems.append(f"has {len(specs)} tools, needs >= 6")
    if len(writes) < 3:
        problems.append(f"has {len(writes)} write tools, needs >= 3")
    if not any(s.arity == 0 for s in specs.values()):
        problems.append("needs a tool that takes no arguments")
    if not any(s.arity == 1 and not s.write for s in specs.values()):
        problems.append("needs a read tool with exactly one argument")
    for spec in specs.values():
        try:
            spec.schema
        except Exception as exc:  # noqa: BLE001 - report any schema derivation failure
            problems.append(f"schema of {spec.name}: {exc}")
    module = sys.modules[cls.__module__]
    try:
        tree = ast.parse(inspect.getsource(module))
    except (OSError, TypeError):
        return problems
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name.split(".")[0] for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [(node.module or "").split(".")[0]]
        else:
            continue
        bad = FORBIDDEN_MODULES.intersection(names)
        if bad:
            problems.append(f"imports {', '.join(sorted(bad))} (no clock, randomness or I/O in environments)")
    for spec in specs.values():
        body = ast.parse(textwrap.dedent(inspect.getsource(spec.method)))
        for node in ast.walk(body):
            if isinstance(node, ast.Call):
                name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                if name in FORBIDDEN_CALLS:
                    problems.append(f"tool {spec.name} calls {name}()")
    return problems


def dynamic_problems(cls: type[Environment], report: CheckReport, seeds: int = 4, steps: int = 50) -> None:
    """Sample states and run seeded explorer rollouts; record determinism, JSON and patch problems."""
    from envsim.construction.rollout import seeded_rollouts

    for seed in range(3):
        first, second = cls.sample_state(seed), cls.sample_state(seed)
        try:
            check_json_state(first, f"sample_state({seed})")
        except StateError as exc:
            report.problems.append(str(exc))
            return
        if canonical_json(first) != canonical_json(second):
            report.problems.append(f"sample_state({seed}) is not deterministic")
    if canonical_json(cls.sample_state(0)) == canonical_json(cls.sample_state(1)):
        report.problems.append("sample_state gives the same state for different seeds")
    specs = cls.tool_specs()
    try:
        for t in seeded_rollouts(cls, seed=0, episodes=seeds, steps=steps, check_determinism=True):
            report.transitions += 1
            report.outcomes[t.outcome] += 1
            report.deltas[t.delta_size] += 1
            if not same_json(apply_patch(t.state, t.patch), t.next_state):
                report.problems.append(f"patch does not reproduce next state for {t.tool}")
            spec = specs.get(t.tool)
            if spec is not None and not spec.write and t.delta_size:
                report.problems.append(f"read tool {t.tool} changed state ({t.changed_paths[:3]})")
            err = t.observation.get("error", "") if isinstance(t.observation, dict) else ""
            if isinstance(err, str) and err.split(":")[0] in ("KeyError", "TypeError", "AttributeError",
                                                               "IndexError", "ValueError", "ZeroDivisionError"):
                report.problems.append(f"tool {t.tool} crashed with {err[:120]!r} on {t.action.arguments}")
    except NondeterminismError as exc:
        report.problems.append(str(exc))
    except StateError as exc:
        report.problems.append(str(exc))


def check_environment(cls: type[Environment], seeds: int = 4, steps: int = 50) -> CheckReport:
    """Full conformance check: static rules plus ``seeds`` x ``steps`` seeded calls."""
    report = CheckReport(cls.env_id(), static_problems(cls))
    dynamic_problems(cls, report, seeds=seeds, steps=steps)
    report.problems = list(dict.fromkeys(report.problems))
    return report


def main(argv: list[str] | None = None) -> int:
    """Command-line entry: check the named environments (or ``--all``) and print a summary."""
    from envsim.envs.registry import get_env, list_envs

    args = list(sys.argv[1:] if argv is None else argv)
    classes = [e.cls for e in list_envs()] if args == ["--all"] else [get_env(a) for a in args]
    failed = 0
    for cls in classes:
        report = check_environment(cls)
        hist = " ".join(f"{k}:{v}" for k, v in sorted(report.deltas.items()))
        status = "ok" if report.ok else "FAIL"
        print(f"{status:4} {report.env_id:32} n={report.transitions} outcomes={dict(report.outcomes)} |Δ| {hist}")
        for problem in report.problems[:10]:
            print(f"     - {problem}")
        failed += not report.ok
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
