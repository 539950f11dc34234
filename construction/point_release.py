"""Point releases of a shipped benchmark (v1 -> v1.1, v2 -> v2.1): the same samples, with shown code that suffices.

A record carries the code its prompt shows (``code``; a chained episode, one per step). That code is cut out of
its module, so the module's imports are not in it: the date helpers use ``_dt`` (``import datetime as _dt``),
τ-bench's airline tools ``deepcopy``, one BFCL method ``InvalidOperation``. A reader guesses them; a literal
executor cannot, and the benchmark's ceiling is not 100 % (docs/executor.md).

``derive_release`` rewrites every line of the base release's split files with ``code`` headed by the
import statements it needs (``envs.shown.imports.with_imports``, names looked up in the modules the shown code
came from) and copies everything else of the folder as it is. Every other field stays byte-identical: each
line is re-serialised exactly as the base file holds it (checked line by line), the environment modules must
still hash to the records' ``env_version`` (required), each shown code must be the code the environment shows for
its tool now (``labelling.record_code``), a one-step record's observation and next state what the environment gives
for its action on its state now (``observed_problem``), and every new record must equal its base record but for the import lines
(and BFCL's state mapping) put before (after) its code (``release_problem``).

What it writes and reads is bounded (``checked_places``, ``copy_folder``): a release is a new folder named by a plain
name under ``benchmark/`` (no ``/``, no ``..``, not an absolute path, not a shipped version, not the base); ``--out``
may be anywhere but inside a shipped version or the base; every file is written through ``envsim.safe_files`` (a
link planted in the output is replaced or refused, never written through); the base is read without following a
link (a link in it stops the release, named) and every line by ``jsonsafe``'s strict rules, so a line that is not
JSON, nests too deep, or names an environment that is unknown or untrusted is a ``ReleaseError`` at ``FILE:LINE``.

    python -m envsim.construction.point_release --base v1 --release v1.1
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import stat
import sys
from pathlib import Path
from typing import Any, Iterator, Mapping

from envsim import ast_parse
from envsim.envs.shown import with_imports
from envsim.jsonsafe import MAX_DEPTH, dumps_line, loads, write_text_atomic

__all__ = ["ReleaseError", "checked_places", "copy_folder", "derive_release", "observed_problem", "release_line",
           "release_problem", "released_code", "released_lines"]

#: Files of the base folder that a point release does not copy (its own card, build file and accepted misses).
OWN_FILES = {"README.md", "build.json", "executor_misses.json"}


#: Largest file of a base folder copied (stats, specs, stored-state blobs) and largest split file read.
MAX_COPIED_BYTES = 256 << 20
#: A release's name: a plain folder name (``v1.1``, ``v2.1-rc``).
RELEASE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class ReleaseError(RuntimeError):
    """A base line that cannot be carried over unchanged (re-serialisation differs, environment changed), or a
    release that would write where it must not; the message names the file (and line)."""


def _dump(record: dict[str, Any]) -> str:
    return dumps_line(record, sort_keys=True, separators=(",", ":"))


def _top_level_names(code: str) -> list[str]:
    try:
        return [n.name for n in ast_parse.parse(code).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
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
    from envsim.envs.registry import get_env, refusal

    if env_id not in cache:
        refused = refusal(env_id)  # a benchmark file is data: it never makes a module importable
        if refused:
            raise LookupError(refused)
        cache[env_id] = get_env(env_id)
    return cache[env_id]


def _holders(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The parts of a record that carry shown code: each step of a chained episode, else the record itself."""
    steps = record.get("steps")
    return steps if isinstance(steps, list) else [record]


def _shown_now(env_class: type, holder: dict[str, Any], codes: dict[tuple[type, str], str]) -> str:
    """The code the environment shows for the holder's tool now (``labelling.record_code``, once per tool)."""
    from envsim.construction.labelling import record_code

    action = holder.get("action")
    tool = holder.get("tool") or (action.get("name") if isinstance(action, dict) else None)
    if not isinstance(tool, str):
        raise ValueError("no tool named (fields 'tool' / 'action.name')")
    key = (env_class, tool)
    if key not in codes:
        codes[key] = record_code(env_class, tool)
    return codes[key]


def observed_problem(env_class: type, record: dict[str, Any]) -> str | None:
    """For a one-step record holding its states (not a chained episode, not a stored-state reference): why its
    observation, next state or patch (``delta_size``, ``changed_paths``) is not what its environment gives for its
    action on its state now (the executor), else ``None``."""
    from envsim.delta import canonical_json
    from envsim.envs.sandbox import execute
    from envsim.records import Action

    if "steps" in record or not all(isinstance(record.get(k), dict) for k in ("state", "next_state", "action")) \
            or "observation" not in record:
        return None
    transition = execute(env_class, record["state"], Action.from_json(record["action"]))
    for field, value in (("observation", transition.observation), ("next_state", transition.next_state),
                         ("patch", transition.patch), ("delta_size", transition.delta_size),
                         ("changed_paths", transition.changed_paths)):
        if (field in record or field in ("observation", "next_state")) \
                and canonical_json(value) != canonical_json(record.get(field)):
            return f"its {field} is not what {record['env']} gives for its action on its state"
    return None


def release_problem(old: dict[str, Any], new: dict[str, Any]) -> str | None:
    """Why the released record ``new`` is not its base record ``old`` with import lines put before each code (and,
    for BFCL, the state mapping after it), or ``None``."""
    from envsim.envs.adapters.bfcl_shown import HEADER as MAPPING_HEADER

    old_holders, new_holders = _holders(old), _holders(new)
    if len(old_holders) != len(new_holders):
        return "its steps differ from the base record's"
    stripped_old, stripped_new = json.loads(json.dumps(old)), json.loads(json.dumps(new))
    for holder in _holders(stripped_old) + _holders(stripped_new):
        holder.pop("code", None)
    if stripped_old != stripped_new:
        changed = sorted(k for k in set(stripped_old) | set(stripped_new) if stripped_old.get(k) != stripped_new.get(k))
        return f"fields other than its code differ from the base record's ({', '.join(changed[:5])})"
    for before, after in zip(old_holders, new_holders):
        code, mapped, _mapping = str(after.get("code")).partition("\n\n\n" + MAPPING_HEADER)
        base = str(before.get("code"))
        if mapped:
            base = base.rstrip("\n")
        if code == base:
            continue
        head, _, rest = code.partition("\n\n")
        if rest != base or not all(line.startswith(("import ", "from ")) for line in head.splitlines()):
            return "its code is not the base record's code headed by import lines"
    return None


def release_line(line: str, where: str, classes: dict[str, type],
                 codes: dict[tuple[type, str], str] | None = None) -> str:
    """One base line with its code (each step's, for an episode) carrying its imports; refuses (``ReleaseError``
    naming ``where``) a line that is not strict JSON within the depth bound, that would not re-serialise to the same
    bytes, whose environment is unknown, untrusted or changed since the base was built (``env_version`` required),
    whose code is not what the environment shows for its tool, or whose release would differ from it in more than
    the import lines (``release_problem``)."""
    from envsim.envs.shown import env_version

    codes = {} if codes is None else codes
    try:
        record = loads(line, max_depth=MAX_DEPTH)
    except ValueError as exc:
        raise ReleaseError(f"{where}: not a JSON line ({str(exc)[:200]})") from None
    if not isinstance(record, dict) or not isinstance(record.get("env"), str):
        raise ReleaseError(f"{where}: not a record (a JSON object with a string 'env')")
    if _dump(record) != line:
        raise ReleaseError(f"{where}: the line does not re-serialise to the same bytes")
    try:
        env_class = _env_class(record["env"], classes)
    except Exception as exc:  # noqa: BLE001 - unknown, untrusted or broken environments: named, not a traceback
        raise ReleaseError(f"{where}: environment {record['env']!r:.120} cannot be used ({type(exc).__name__}: "
                           f"{str(exc)[:200]})") from None
    if not isinstance(record.get("env_version"), str):
        raise ReleaseError(f"{where}: no env_version: a point release checks that the environment is the one the "
                           "base was built with")
    if record["env_version"] != env_version(env_class):
        raise ReleaseError(f"{where}: {record['env']} hashes to {env_version(env_class)}, the record to "
                           f"{record['env_version']}: the environment changed since the base was built")
    new = json.loads(line)
    try:
        problem = observed_problem(env_class, record)
        if problem is not None:
            raise ReleaseError(f"{where}: {problem}: the base was changed")
        for holder in _holders(new):
            if not isinstance(holder, dict) or not isinstance(holder.get("code"), str):
                raise ValueError("a record or step without a string 'code'")
            if holder["code"] != _shown_now(env_class, holder, codes):
                raise ReleaseError(f"{where}: its code is not what {record['env']} shows for its tool "
                                   f"{holder.get('tool')!r}: the base was changed")
            holder["code"] = released_code(env_class, holder["code"])
    except ReleaseError:
        raise
    except Exception as exc:  # noqa: BLE001 - a malformed record: named, not a traceback
        raise ReleaseError(f"{where}: {type(exc).__name__}: {str(exc)[:200]}") from None
    problem = release_problem(record, new)
    if problem is not None:
        raise ReleaseError(f"{where}: the released record is not the base record with imports: {problem}")
    return _dump(new)


def _open_base_file(path: Path, base: Path) -> int:
    """A descriptor of the regular file ``path`` inside ``base``, no link followed (``ReleaseError`` otherwise)."""
    from envsim.safe_files import open_regular

    try:
        return open_regular(path, base)
    except OSError as exc:
        raise ReleaseError(f"{path}: {exc}") from None


def _lines(path: Path, base: Path | None = None) -> Iterator[str]:
    """The lines of a split file of ``base`` (default: its own folder), read without following a link."""
    fd = _open_base_file(path, base or path.parent)
    with os.fdopen(fd, "rb") as handle:
        if os.fstat(handle.fileno()).st_size > MAX_COPIED_BYTES:
            raise ReleaseError(f"{path}: larger than {MAX_COPIED_BYTES:,} bytes")
        for number, raw in enumerate(handle, 1):
            try:
                yield raw.decode("utf-8").rstrip("\n")
            except UnicodeDecodeError as exc:
                raise ReleaseError(f"{path}:{number}: not UTF-8 (byte 0x{raw[exc.start]:02x})") from None


def released_lines(path: Path, classes: dict[str, type] | None = None, base: Path | None = None) -> list[str]:
    """The lines of the base split file ``path`` as the point release holds them (``release_line`` each)."""
    classes = {} if classes is None else classes
    codes: dict[tuple[type, str], str] = {}
    return [release_line(line, f"{path}:{number}", classes, codes)
            for number, line in enumerate(_lines(path, base), 1)]


def _own_folder(folder: Path) -> None:
    """Create ``folder`` (one level) in the release, refusing a link or a file planted at its name."""
    try:
        mode = os.lstat(folder).st_mode
    except FileNotFoundError:
        folder.mkdir()
        return
    if not stat.S_ISDIR(mode):
        raise ReleaseError(f"{folder}: a symbolic link or a file is in the way; a point release writes no link")


def copy_folder(source: Path, target: Path, base: Path) -> int:
    """Copy the folder ``source`` of ``base`` into ``target``: regular files only (a link, a FIFO or a device in the
    base is refused, named), each read without following a link and written through ``envsim.safe_files`` (a
    link planted in the release is replaced, never written through). Returns the files copied."""
    from envsim.safe_files import read_bytes, write_bytes

    _own_folder(target)
    copied = 0
    for item in sorted(source.iterdir()):
        if item.is_symlink():
            raise ReleaseError(f"{item}: a symbolic link in the base; a point release copies no link")
        if item.is_dir():
            copied += copy_folder(item, target / item.name, base)
            continue
        try:
            data = read_bytes(item, MAX_COPIED_BYTES, base)
        except OSError as exc:
            raise ReleaseError(f"{item}: {exc}") from None
        write_bytes(target / item.name, data, follow_folder=False)
        copied += 1
    return copied


def checked_places(base: Path, out: Path, shipped: Path | None = None) -> None:
    """Refuse (``ReleaseError``) a release written into the base or into a shipped version (a folder of
    ``shipped``, default ``benchmark/``), and a base that is a link or not a folder."""
    from envsim.benchmark import BENCHMARK_DIR

    shipped = BENCHMARK_DIR if shipped is None else shipped
    if base.is_symlink() or not base.is_dir():
        raise ReleaseError(f"{base}: the base must be a benchmark folder (not a link)")
    target = Path(os.path.abspath(out))
    real_target = target.resolve()
    for folder in [base, *(p for p in shipped.iterdir() if p.is_dir() and any(p.glob("*.jsonl")))]:
        for name in (Path(os.path.abspath(folder)), folder.resolve()):
            if real_target == name or name in real_target.parents or target == name or name in target.parents:
                what = "the base" if folder == base else "a shipped version"
                raise ReleaseError(f"{out}: inside {what} ({folder.name}); a point release is written into a new "
                                   "folder")


def release_folder(release: str, shipped: Path | None = None) -> Path:
    """``benchmark/RELEASE`` for a plain release name; ``ReleaseError`` for a path (``../x``, ``/tmp/x``, ``a/b``)
    or an existing folder."""
    from envsim.benchmark import BENCHMARK_DIR

    shipped = BENCHMARK_DIR if shipped is None else shipped
    if not RELEASE_NAME.fullmatch(release) or release in (".", ".."):
        raise ReleaseError(f"--release {release!r}: a release is a plain folder name under benchmark/ (letters, "
                           "digits, '.', '_', '-'); use --out for another place")
    folder = shipped / release
    if os.path.lexists(folder):
        raise ReleaseError(f"{folder}: exists already; a point release is written into a new folder")
    return folder


def derive_release(base: Path, out: Path) -> dict[str, dict[str, int]]:
    """Write the point release of the benchmark folder ``base`` into ``out``: every ``*.jsonl`` rewritten by
    ``release_line``, every other file and folder (stats, specs, held-out list, stored states) copied
    (``copy_folder``), the release's own ``README.md`` / ``build.json`` / ``executor_misses.json`` left to the
    caller; refused inside the base or a shipped version (``checked_places``). Returns, per split file, how many
    records there are and how many got imports."""
    checked_places(base, out)
    out.mkdir(parents=True, exist_ok=True)
    counts: dict[str, dict[str, int]] = {}
    classes: dict[str, type] = {}
    for item in sorted(base.iterdir()):
        if item.name in OWN_FILES:
            continue
        if item.is_symlink():
            raise ReleaseError(f"{item}: a symbolic link in the base; a point release copies no link")
        if item.is_dir():
            copy_folder(item, out / item.name, base)
        elif item.suffix == ".jsonl":
            old_lines = list(_lines(item, base))
            new_lines = released_lines(item, classes, base)
            write_text_atomic(out / item.name, new_lines)
            counts[item.stem] = {"records": len(new_lines),
                                 "with_imports": sum(a != b for a, b in zip(old_lines, new_lines))}
        else:
            from envsim.safe_files import read_bytes, write_bytes

            try:
                data = read_bytes(item, MAX_COPIED_BYTES, base)
            except OSError as exc:
                raise ReleaseError(f"{item}: {exc}") from None
            write_bytes(out / item.name, data)
    return counts


def main(argv: list[str] | None = None) -> int:
    """Command line: ``--base v1 --release v1.1`` (names of folders under ``benchmark/``)."""
    from envsim.benchmark import BENCHMARK_DIR

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", required=True, help="Shipped benchmark to derive from (v1, v2).")
    parser.add_argument("--release", required=True, help="Name of the point release (v1.1, v2.1).")
    parser.add_argument("--out", type=Path, default=None, help="Folder to write (default: benchmark/RELEASE).")
    args = parser.parse_args(argv)
    try:
        if not RELEASE_NAME.fullmatch(args.base) or args.base in (".", ".."):
            raise ReleaseError(f"--base {args.base!r}: the name of a shipped benchmark folder (v1, v2)")
        out = args.out or release_folder(args.release)
        counts = derive_release(BENCHMARK_DIR / args.base, out)
    except ReleaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # the output cannot be written (a directory in the way, no space, no permission)
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for split, figures in counts.items():
        print(f"{out / split}.jsonl: {figures['records']} records, {figures['with_imports']} with imports added")
    return 0


if __name__ == "__main__":
    sys.exit(main())
