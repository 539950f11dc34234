"""Conformance check of an environment class against the environment contract.

``python -m envsim.envs.check ID [ID ...]`` (or ``--all``) prints the problems found and the
|Δ| histogram of seeded explorer rollouts; the test suite runs the same checks on every built-in.
``python -m envsim.envs.check MODULE:CLASS`` (``envsim envs check MODULE:CLASS``) checks a user's own class
instead (``envs.check_own``: determinism, JSON returns, explorer arguments, the executor on a small pool, view
sizes), one line per finding, exit status 1 on a defect.
"""

from __future__ import annotations

import ast
import inspect
import sys
import textwrap
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from envsim import ast_parse
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
        tree = ast_parse.parse(inspect.getsource(module))
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
        body = ast_parse.parse(textwrap.dedent(inspect.getsource(spec.method)))
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


def check_own(targets: list[str], echo: Any = print, **options: Any) -> int:
    """Check user classes (``module:Class``, ``envs.check_own``): one line per finding, defects first; 1 when any
    class has a defect."""
    from envsim.envs.check_own import check_own_class

    failed = 0
    for target in targets:
        report = check_own_class(target, **options)
        order = {"defect": 0, "warning": 1, "ok": 2}
        for finding in sorted(report.findings, key=lambda f: order[f.level]):
            echo(finding.line())
        verdict = f"{len(report.defects)} defect(s)" if report.defects else "no defect"
        echo(f"{target}: {verdict}, {sum(f.level == 'warning' for f in report.findings)} warning(s)")
        failed += bool(report.defects)
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    """Command-line entry: check the named environments (or ``--all``) and print a summary; ``module:Class``
    targets (a user's own classes) get the user-class checks (``check_own``)."""
    from envsim.envs.registry import get_env, list_envs

    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        print("usage: python -m envsim.envs.check MODULE:CLASS | ENV_ID ... | --all", file=sys.stderr)
        return 2
    own = [a for a in args if ":" in a]
    if own:
        code = check_own(own)
        args = [a for a in args if ":" not in a]
        if not args:
            return code
    else:
        code = 0
    try:
        classes = [e.cls for e in list_envs()] if args == ["--all"] else [get_env(a) for a in args]
    except Exception as exc:  # noqa: BLE001 - an unknown id is one line, not a traceback
        print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    failed = 0
    for cls in classes:
        report = check_environment(cls)
        hist = " ".join(f"{k}:{v}" for k, v in sorted(report.deltas.items()))
        status = "ok" if report.ok else "FAIL"
        print(f"{status:4} {report.env_id:32} n={report.transitions} outcomes={dict(report.outcomes)} |Δ| {hist}")
        for problem in report.problems[:10]:
            print(f"     - {problem}")
        failed += not report.ok
    return 1 if failed or code else 0


if __name__ == "__main__":
    raise SystemExit(main())
