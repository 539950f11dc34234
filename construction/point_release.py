"""Point releases of a shipped benchmark (v1 -> v1.1, v2 -> v2.1): the same samples, with shown code that suffices.

A record carries the code its prompt shows (``code``; a chained episode, one per step). That code is cut out of
its module, so the module's imports are not in it: the date helpers use ``_dt`` (``import datetime as _dt``),
τ-bench's airline tools ``deepcopy``, one BFCL method ``InvalidOperation``. A reader guesses them; a literal
executor cannot, and the benchmark's ceiling is not 100 % (docs/executor.md).

``derive_release`` rewrites every line of the base release's split files with ``code`` headed by the
import statements it needs (``envs.shown.imports.with_imports``, names looked up in the modules the shown code
came from) and copies everything else of the folder as it is. Every other field stays byte-identical: each
line is re-serialised exactly as the base file holds it (checked line by line), the environment modules must
still hash to the records' ``env_version``, and the new file's other fields are compared with the base's.

    python -m envsim.construction.point_release --base v1 --release v1.1
"""

from __future__ import annotations

import argparse
import ast
import json
import shutil
import sys
from pathlib import Path
from typing import Any, Iterator, Mapping

from envsim.envs.shown import with_imports
from envsim.jsonsafe import dumps_line, write_text_atomic

__all__ = ["ReleaseError", "derive_release", "release_line", "released_code", "released_lines"]

#: Files of the base folder that a point release does not copy (its own card, build file and accepted misses).
OWN_FILES = {"README.md", "build.json", "executor_misses.json"}


class ReleaseError(RuntimeError):
    """A base line that cannot be carried over unchanged (re-serialisation differs, environment changed)."""


def _dump(record: dict[str, Any]) -> str:
    return dumps_line(record, sort_keys=True, separators=(",", ":"))


def _top_level_names(code: str) -> list[str]:
    try:
        return [n.name for n in ast.parse(code).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
    except SyntaxError:
        return []


def _module_globals(name: str | None) -> Mapping[str, Any] | None:
    module = sys.modules.get(name or "")
    return vars(module) if module is not None else None


def code_scopes(env_class: type, code: str) -> list[Mapping[str, Any]]:
    """Module globals in which the shown ``code``'s free names are looked up, most specific first: the module
    of each function or class the code defines (a helper of ``envsim.envs.sampling``, a τ-bench tool class),
    then the foreign class's module (BFCL), then the environment's own module."""
    from envsim.envs.adapters.tau import is_tau, tool_classes

    homes: list[Mapping[str, Any]] = []
    env_globals = _module_globals(env_class.__module__) or {}
    foreign = getattr(env_class, "_foreign", object)
    candidates: dict[str, Any] = {}
    if is_tau(env_class):
        candidates.update({tool.__name__: tool for tool in tool_classes(env_class._tau_domain)})
    if foreign is not object:
        candidates.update(vars(sys.modules[foreign.__module__]))
        candidates.update({k: v for k, v in vars(foreign).items() if callable(v)})
    candidates.update(env_globals)
    candidates.update({k: v for k, v in vars(env_class).items() if callable(v)})
    pending = _top_level_names(code)
    while pending:  # a helper shown because another helper calls it lives in that helper's module
        unresolved = []
        for name in pending:
            target = candidates.get(name, next((h[name] for h in homes if name in h), None))
            scope = _module_globals(getattr(target, "__module__", None))
            if scope is None:
                unresolved.append(name)
            elif all(scope is not h for h in homes):
                homes.append(scope)
        pending = unresolved if len(unresolved) < len(pending) else []
    for extra in ([_module_globals(foreign.__module__)] if foreign is not object else []) + [env_globals]:
        if extra is not None and all(extra is not h for h in homes):
            homes.append(extra)
    return homes


def released_code(env_class: type, code: str) -> str:
    """``code`` headed by the standard-library imports it uses and does not bind; a BFCL tool's code also
    followed by how its class's JSON state maps to the object it runs on (``envs.adapters.bfcl_shown``)."""
    from envsim.envs.adapters.bfcl import is_bfcl
    from envsim.envs.adapters.bfcl_shown import with_state_mapping

    if is_bfcl(env_class):
        code = with_state_mapping(env_class, code)
    return with_imports(code, code_scopes(env_class, code))


def _env_class(env_id: str, cache: dict[str, type]) -> type:
    from envsim.envs.registry import get_env

    if env_id not in cache:
        cache[env_id] = get_env(env_id)
    return cache[env_id]


def release_line(line: str, where: str, classes: dict[str, type]) -> str:
    """One base line with its code (each step's, for an episode) carrying its imports; refuses a line that
    would not re-serialise to the same bytes or whose environment changed since the base was built."""
    from envsim.envs.shown import env_version

    record = json.loads(line)
    if _dump(record) != line:
        raise ReleaseError(f"{where}: the line does not re-serialise to the same bytes")
    env_class = _env_class(record["env"], classes)
    if record.get("env_version") and record["env_version"] != env_version(env_class):
        raise ReleaseError(f"{where}: {record['env']} hashes to {env_version(env_class)}, the record to "
                           f"{record['env_version']}: the environment changed since the base was built")
    if "steps" in record:
        for step in record["steps"]:
            step["code"] = released_code(env_class, step["code"])
    else:
        record["code"] = released_code(env_class, record["code"])
    return _dump(record)


def _lines(path: Path) -> Iterator[str]:
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            yield line.rstrip("\n")


def released_lines(path: Path, classes: dict[str, type] | None = None) -> list[str]:
    """The lines of the base split file ``path`` as the point release holds them (``release_line`` each)."""
    classes = {} if classes is None else classes
    return [release_line(line, f"{path}:{number}", classes) for number, line in enumerate(_lines(path), 1)]


def derive_release(base: Path, out: Path) -> dict[str, dict[str, int]]:
    """Write the point release of the benchmark folder ``base`` into ``out``: every ``*.jsonl`` rewritten by
    ``release_line``, every other file and folder (stats, specs, held-out list, stored states) copied, the
    release's own ``README.md`` / ``build.json`` / ``executor_misses.json`` left to the caller. Returns, per
    split file, how many records there are and how many got imports."""
    out.mkdir(parents=True, exist_ok=True)
    counts: dict[str, dict[str, int]] = {}
    classes: dict[str, type] = {}
    for item in sorted(base.iterdir()):
        if item.name in OWN_FILES:
            continue
        if item.is_dir():
            shutil.copytree(item, out / item.name, dirs_exist_ok=True)
        elif item.suffix == ".jsonl":
            old_lines = list(_lines(item))
            new_lines = released_lines(item, classes)
            write_text_atomic(out / item.name, new_lines)
            counts[item.stem] = {"records": len(new_lines),
                                 "with_imports": sum(a != b for a, b in zip(old_lines, new_lines))}
        else:
            shutil.copy2(item, out / item.name)
    return counts


def main(argv: list[str] | None = None) -> int:
    """Command line: ``--base v1 --release v1.1`` (names of folders under ``benchmark/``)."""
    from envsim.benchmark import BENCHMARK_DIR

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", required=True, help="Shipped benchmark to derive from (v1, v2).")
    parser.add_argument("--release", required=True, help="Name of the point release (v1.1, v2.1).")
    parser.add_argument("--out", type=Path, default=None, help="Folder to write (default: benchmark/RELEASE).")
    args = parser.parse_args(argv)
    out = args.out or BENCHMARK_DIR / args.release
    try:
        counts = derive_release(BENCHMARK_DIR / args.base, out)
    except ReleaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for split, figures in counts.items():
        print(f"{out / split}.jsonl: {figures['records']} records, {figures['with_imports']} with imports added")
    return 0


if __name__ == "__main__":
    sys.exit(main())
