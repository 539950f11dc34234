"""Up-front validation of benchmark files: every record against the record schema, before any run.

A benchmark file can come from anywhere (``--benchmark PATH``). Every problem is reported as
``BenchmarkFileError("file:line: what is wrong")`` before a single request is sent: bytes that are
not UTF-8, a line that is not strict JSON (NaN, an integer longer than Python reads, nesting deeper
than ``MAX_DEPTH``), a line that is not an object, a missing or mistyped field, a duplicate id, an
``env`` that would import code (``module:Class`` of a module the user did not trust: a benchmark file is
data, see ``envsim.envs.trust``), a stored-state reference that does not resolve within its bounds
(``benchmark.state_store``: a malformed digest, a missing or corrupt blob, a patch past ``envsim.patch_bounds``),
and whatever the caller's ``check`` refuses (``--prompt-mode mdp-view``: tool code Python cannot parse).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterable

from envsim.envs.registry import refusal as env_refusal
from envsim.jsonsafe import MAX_DEPTH, NOT_DECODED, JSONLimitError, decoded_utf8, loads
from envsim.records import STRATA


class BenchmarkFileError(ValueError):
    """A benchmark file that cannot be evaluated; the message starts with ``file:line:``."""


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


_MISSING = object()


def record_problem(record: Any) -> str | None:
    """What is wrong with one record, or ``None``; the fields a run reads are required and typed."""
    if not isinstance(record, dict):
        return f"a record must be a JSON object, got {type(record).__name__}"
    checks: list[tuple[str, bool, str]] = [
        ("id", isinstance(record.get("id"), str) and bool(record.get("id")), "a non-empty string"),
        ("env", isinstance(record.get("env"), str) and bool(record.get("env")), "a non-empty string"),
        ("stratum", record.get("stratum") in STRATA, "one of " + ", ".join(STRATA)),
        ("observation", "observation" in record, "present (any JSON value)"),
        ("state", isinstance(record.get("state"), dict), "a JSON object"),
        ("next_state", isinstance(record.get("next_state"), dict), "a JSON object"),
        ("action", isinstance(record.get("action"), dict), "an object {name, arguments}"),
        ("delta_size", _is_int(record.get("delta_size")) and record.get("delta_size", -1) >= 0,
         "a non-negative integer"),
        ("arg_count", _is_int(record.get("arg_count")) and record.get("arg_count", -1) >= 0,
         "a non-negative integer"),
    ]
    for name, ok, expected in checks:
        if not ok:
            value = record.get(name, _MISSING)
            got = "missing" if value is _MISSING else f"got {type(value).__name__} {_short(value)}"
            return f"field {name!r} must be {expected} ({got})"
    refused = env_refusal(record["env"])
    if refused:
        return refused
    action = record["action"]
    if not isinstance(action.get("name"), str) or not isinstance(action.get("arguments", {}), dict):
        return "field 'action' must be {\"name\": string, \"arguments\": object}"
    for name, kind in (("code", str), ("patch", list), ("tools", list), ("changed_paths", list), ("tool", str),
                       ("outcome", str), ("split", str), ("env_version", str)):
        if name in record and not isinstance(record[name], kind):
            return f"field {name!r} must be a {'string' if kind is str else 'list'} (got {type(record[name]).__name__})"
    if "changed_paths" in record and not all(isinstance(p, str) for p in record["changed_paths"]):
        return "field 'changed_paths' must hold strings"
    if "tools" in record:
        return tools_problem(record["tools"])
    return None


def tools_problem(tools: Any) -> str | None:
    """Why a record's ``tools`` is not a list of tool schemas the prompt can show (each an object; its ``function``,
    when present, an object whose ``name``, when present, is a string), or ``None``. Checked at validation, so a
    ``tools: [1, ...]`` is a bad record named at its line, never a prompt that fails at run time and is retried."""
    if not isinstance(tools, list):
        return f"field 'tools' must be a list (got {type(tools).__name__})"
    for i, tool in enumerate(tools):
        function = tool.get("function", tool) if isinstance(tool, dict) else None
        if not isinstance(function, dict):
            shown = tool if not isinstance(tool, dict) else function
            return (f"field 'tools' item {i} must be a tool schema object (with 'function': an object), got "
                    f"{type(shown).__name__} {_short(shown)}")
        if not isinstance(function.get("name", ""), str):
            return f"field 'tools' item {i}: its function's 'name' must be a string"
    return None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


#: An extra check of one record (what a particular run needs of it): its problem, or ``None``.
RecordCheck = Callable[[dict[str, Any]], "str | None"]


def checked_problem(record: Any, check: RecordCheck | None = None) -> str | None:
    """``record_problem`` and then ``check``; a stored-state reference that does not resolve is the record's
    problem (``StateRefError``: its field and why), never an exception out of validation."""
    from envsim.benchmark.state_store import StateRefError

    try:
        return record_problem(record) or (check(record) if check is not None else None)
    except StateRefError as exc:
        return str(exc)


def validate_records(records: Iterable[Any], where: Iterable[str],
                     check: RecordCheck | None = None) -> list[dict[str, Any]]:
    """Check records (``where`` names each one, e.g. ``file:line``); raise on the first problem or a repeated id.
    ``check`` adds what this run needs of every record (see ``checked_problem``)."""
    seen: dict[str, str] = {}
    out = []
    for record, place in zip(records, where):
        problem = checked_problem(record, check)
        if problem is None and record["id"] in seen:
            problem = f"duplicate id {_short(record['id'])} (first at {seen[record['id']]})"
        if problem is not None:
            raise BenchmarkFileError(f"{place}: {problem}")
        seen[record["id"]] = place
        out.append(record)
    return out


_BLANK = object()


def parse_line(raw: bytes, place: str) -> Any:
    """One line of a JSONL benchmark file (without its newline) decoded with the strict rules; a blank line is
    ``_BLANK``; raises ``BenchmarkFileError`` naming ``place`` (``file:line``)."""
    try:
        value = decoded_utf8(raw, max_depth=MAX_DEPTH)  # valid UTF-8 JSON: the text is not decoded on its own
    except JSONLimitError as exc:
        raise BenchmarkFileError(f"{place}: {exc}") from None
    if value is not NOT_DECODED:
        return value
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BenchmarkFileError(f"{place}: not UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})") from None
    if not line.strip():
        return _BLANK
    try:
        return loads(line, max_depth=MAX_DEPTH)
    except JSONLimitError as exc:
        raise BenchmarkFileError(f"{place}: {exc}") from None
    except ValueError as exc:
        raise BenchmarkFileError(f"{place}: not a JSON line ({exc})") from None


def read_jsonl_records(path: Path, check: RecordCheck | None = None) -> list[dict[str, Any]]:
    """All records of a JSONL benchmark file, each checked (and by ``check``); raises ``BenchmarkFileError`` at
    ``file:line``."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise BenchmarkFileError(f"{path}: cannot read ({exc.strerror or exc})") from None
    rows, places = [], []
    for number, raw in enumerate(data.split(b"\n"), 1):
        place = f"{path}:{number}"
        value = parse_line(raw, place)
        if value is _BLANK:
            continue
        rows.append(value)
        places.append(place)
    from envsim.benchmark.state_store import has_refs, resolve, state_folder

    folder = state_folder(path)  # records of large-state tracks name content-addressed states: resolved on read
    rows = [resolve(row, folder) if has_refs(row) else row for row in rows]
    return validate_records(rows, places, check)
