"""The one reader of replay logs (``construct --policy replay``), for one process and for worker processes alike.

A replay log is JSONL: each line ``{"env", "state"?, "seed"?, "actions": [{"name", "arguments"}, ...]}`` (a task).
``checked_lines`` reads the whole log before any call runs and refuses, naming ``LOG:LINE``, every line that
labelling or a benchmark reader would refuse later:

* lines are split on ``\\n`` only (a ``\\r`` is JSON white space inside a line, never a line break), and a line
  longer than ``MAX_LOG_LINE_BYTES`` is refused without being held;
* bytes that are not UTF-8; text that is not strict JSON (``envsim.jsonsafe``: no NaN, no number that overflows
  to infinity such as ``1e999``, no integer longer than Python reads);
* nesting deeper than ``jsonsafe.MAX_DEPTH`` (measured on the text, before it is decoded: a record holds a state or
  an argument at most as deep as the line does, so what is written is what ``eval`` reads), and more JSON values
  than ``envs.sandbox.executor.MAX_STATE_VALUES`` (counted on the text before it is decoded, so a line of ten million
  values costs no memory);
* a line that is not an object, an unknown or untrusted environment, ``actions`` that are not a list of calls
  ``{"name": string, "arguments": object}`` (arguments given as a JSON string are decoded by the same rules),
  a ``state`` that is not an object.

``checked_lines`` returns where each line is and the SHA-256 of its bytes; ``read_line`` reads a line again where
it was (in the parent or in a worker) and refuses it when its bytes changed since the check.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from envsim.benchmark.state_store import MAX_BLOB_BYTES
from envsim.envs.base import Environment
from envsim.envs.sandbox.executor import MAX_STATE_VALUES
from envsim.jsonsafe import MAX_DEPTH, JSONLimitError, count_values, loads, loads_utf8, nests_deeper
from envsim.records import Action

__all__ = ["LogLine", "LoggedEpisode", "ReplayError", "MAX_LOG_LINE_BYTES", "MAX_LOG_VALUES", "checked_lines",
           "line_entry", "read_line", "read_episode", "state_digest"]

#: Longest log line read (bytes, without its newline): the largest state a benchmark file can store
#: (``benchmark.state_store.MAX_BLOB_BYTES``, 32 MiB), as a line holds its state.
MAX_LOG_LINE_BYTES = MAX_BLOB_BYTES
#: Most JSON values one log line may hold: what labelling accepts of a state (``envs.sandbox.executor``).
MAX_LOG_VALUES = MAX_STATE_VALUES
#: Deepest nesting of an argument given as a JSON string: an argument sits three levels down in a log line
#: (``{"actions": [{"arguments": ...}]}``), as deep as the line bound allows.
_ARGUMENT_DEPTH = MAX_DEPTH - 3
#: Normalised starting states kept per process (a foreign class's load->save form is costly on a large state).
_NORMALISED_KEPT = 4


class ReplayError(ValueError):
    """A log line that cannot be replayed (the message starts with ``LOG:LINE:``)."""


@dataclass(frozen=True)
class LogLine:
    """Where a checked log line is: its number (1-based), byte offset and size (without the newline), and the
    SHA-256 of its bytes."""

    number: int
    offset: int
    size: int
    digest: str


@dataclass
class LoggedEpisode:
    """One line of a replay log: the environment, its starting state and the logged calls."""

    line: int
    env_class: type[Environment]
    state: dict[str, Any]
    actions: list[Action]


#: Escapes in a JSON string (a backslash and the byte after it), dropped before strings are cut out.
_ESCAPE = re.compile(rb"\\.", re.DOTALL)
#: Every byte but brackets, commas and quotes.
_NOT_STRUCTURE = bytes(c for c in range(256) if c not in b'[]{},"')


def text_value_count(data: bytes) -> int:
    """How many JSON values (containers and scalars, object keys not counted) the *valid* JSON text ``data``
    holds, read off its structure outside strings at C speed: one for the root, one per comma, one per non-empty
    container (a first member has no comma before it)."""
    if b"\\" in data:
        data = _ESCAPE.sub(b"", data)
    kept = data.translate(None, _NOT_STRUCTURE).replace(b'""', b"")
    if b'"' in kept:
        kept = b"".join(kept.split(b'"')[0::2])
    containers = kept.count(b"{") + kept.count(b"[") - kept.count(b"{}") - kept.count(b"[]")
    return 1 + kept.count(b",") + containers


def _problem(where: str, message: str) -> ReplayError:
    return ReplayError(f"{where}: {message}")


def _decoded(body: bytes, where: str) -> Any:
    """The JSON value of one line's bytes under the bounds (``ReplayError`` naming ``where`` otherwise)."""
    if len(body) > 2 * MAX_LOG_VALUES and text_value_count(body) > MAX_LOG_VALUES:
        raise _problem(where, f"holds more than {MAX_LOG_VALUES:,} JSON values (MAX_LOG_VALUES: what labelling "
                              "accepts of a state); not decoded")
    if nests_deeper(body, MAX_DEPTH):
        raise _problem(where, f"JSON nested deeper than {MAX_DEPTH} levels (jsonsafe.MAX_DEPTH: what a benchmark "
                              "file may hold); not decoded")
    try:
        return loads_utf8(body, max_depth=MAX_DEPTH)
    except UnicodeDecodeError as exc:
        raise _problem(where, f"not UTF-8 (byte 0x{body[exc.start]:02x} at column {exc.start + 1})") from None
    except JSONLimitError as exc:
        raise _problem(where, str(exc)) from None
    except (ValueError, RecursionError) as exc:
        raise _problem(where, f"not a JSON line ({exc})") from None


def _action(value: Any, index: int) -> Action:
    """Logged call ``index`` as an ``Action``; ``ValueError`` names what is wrong."""
    if not isinstance(value, dict) or not isinstance(value.get("name"), str) or not value["name"]:
        raise ValueError(f"call {index}: needs a non-empty string 'name', got {json.dumps(value)[:120]}")
    arguments = value.get("arguments", {})
    if isinstance(arguments, str):  # the OpenAI form: arguments as a JSON string, decoded by the same rules
        try:
            arguments = loads(arguments, max_depth=_ARGUMENT_DEPTH) if arguments.strip() else {}
        except JSONLimitError as exc:
            raise ValueError(f"call {index}: arguments: {exc}") from None
        except ValueError as exc:
            raise ValueError(f"call {index}: arguments are not JSON ({exc})") from None
        if count_values(arguments, MAX_LOG_VALUES) > MAX_LOG_VALUES:
            raise ValueError(f"call {index}: arguments hold more than {MAX_LOG_VALUES:,} JSON values")
    if not isinstance(arguments, dict):
        raise ValueError(f"call {index}: 'arguments' must be a JSON object, got {type(arguments).__name__}")
    return Action(value["name"], arguments)


def line_entry(path: Path, number: int, body: bytes) -> tuple[dict[str, Any], type[Environment], list[Action]]:
    """Log line ``number`` (its bytes, without the newline) decoded and checked: the entry, its environment class
    and its calls; ``ReplayError`` at ``LOG:LINE`` for anything labelling or a benchmark reader would refuse."""
    from envsim.envs.registry import get_env

    where = f"{path}:{number}"
    entry = _decoded(body, where)
    try:
        if not isinstance(entry, dict):
            raise ValueError(f"expected a JSON object, got {type(entry).__name__}")
        env_class = get_env(entry["env"]) if isinstance(entry.get("env"), str) else None
        if env_class is None:
            raise ValueError("'env' must name an environment (a string)")
        logged = entry.get("actions", [])
        if not isinstance(logged, list):
            raise ValueError("'actions' must be a list")
        if "state" in entry and not isinstance(entry["state"], dict):
            raise ValueError("'state' must be a JSON object")
        if "seed" in entry and (not isinstance(entry["seed"], int) or isinstance(entry["seed"], bool)):
            raise ValueError("'seed' must be an integer")
        return entry, env_class, [_action(a, i) for i, a in enumerate(logged, 1)]
    except (KeyError, ValueError, TypeError, LookupError, AttributeError) as exc:
        raise ReplayError(f"{where}: {type(exc).__name__}: {exc}") from None


def _raw_lines(path: Path) -> Iterator[tuple[int, int, bytes | None]]:
    """``(number, offset, bytes without the newline)`` of every line of ``path`` split on ``\\n`` alone; ``None``
    for a line longer than ``MAX_LOG_LINE_BYTES`` (not held); ``ReplayError`` when the log cannot be read."""
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise ReplayError(f"{path}: cannot read the replay log ({exc.strerror or exc})") from None
    with handle:
        offset, number = 0, 0
        while True:
            raw = handle.readline(MAX_LOG_LINE_BYTES + 1)
            if not raw:
                return
            number += 1
            if len(raw) > MAX_LOG_LINE_BYTES and not raw.endswith(b"\n"):
                yield number, offset, None
                return
            yield number, offset, raw[:-1] if raw.endswith(b"\n") else raw
            offset += len(raw)


def checked_lines(path: Path) -> list[LogLine]:
    """Every non-blank line of the replay log ``path`` checked (``line_entry``), before any call runs; returns
    where each is and the digest of its bytes. The first bad line raises ``ReplayError`` at ``LOG:LINE``."""
    lines = []
    for number, offset, body in _raw_lines(path):
        if body is None:
            raise ReplayError(f"{path}:{number}: line longer than {MAX_LOG_LINE_BYTES:,} bytes (MAX_LOG_LINE_BYTES: "
                              "the largest state a benchmark file stores); not read")
        if not body.strip():
            continue
        line_entry(path, number, body)
        lines.append(LogLine(number, offset, len(body), hashlib.sha256(body).hexdigest()))
    return lines


def read_line(path: Path, line: LogLine) -> bytes:
    """The bytes of checked line ``line`` read again where it was; ``ReplayError`` when they are not the bytes
    that were checked (the log changed after its check)."""
    try:
        with path.open("rb") as handle:
            handle.seek(line.offset)
            body = handle.read(line.size)
    except OSError as exc:
        raise ReplayError(f"{path}:{line.number}: cannot read the replay log again ({exc.strerror or exc})") \
            from None
    if len(body) != line.size or hashlib.sha256(body).hexdigest() != line.digest:
        raise ReplayError(f"{path}:{line.number}: the log changed after it was checked (this line's bytes are not "
                          "the ones checked); nothing of this line was labelled")
    return body


def state_digest(state: Any) -> str:
    """A digest of a JSON state as it is (key order included): equal digests, equal states."""
    try:
        import orjson

        data = orjson.dumps(state)
    except (ImportError, TypeError):  # no orjson, or a value it does not write (an integer past 64 bits)
        data = json.dumps(state, ensure_ascii=True, separators=(",", ":")).encode()
    return hashlib.sha256(data).hexdigest()


#: Normalised logged states of this process, by environment class and the logged state's digest (most recent last).
_NORMALISED: OrderedDict[tuple[type, str], dict[str, Any]] = OrderedDict()


def _normalised(env_class: type[Environment], state: dict[str, Any]) -> dict[str, Any]:
    """A foreign class's load->save form of a logged state, made once per process for equal logged states (tasks
    that log the same starting state share it; labelling never changes it)."""
    key = (env_class, state_digest(state))
    if key in _NORMALISED:
        _NORMALISED.move_to_end(key)
        return _NORMALISED[key]
    normal = env_class.normalise(state)
    _NORMALISED[key] = normal
    while len(_NORMALISED) > _NORMALISED_KEPT:
        _NORMALISED.popitem(last=False)
    return normal


def read_episode(path: Path, number: int, body: bytes | str,
                 initial: dict[tuple[type, int], dict[str, Any]]) -> LoggedEpisode:
    """Log line ``number`` as an episode: its environment, calls and starting state (its ``state``, a foreign class's
    in the load->save form, or ``sample_state(seed)``, made once per class and seed in ``initial``);
    ``ReplayError`` names the line."""
    data = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
    entry, env_class, actions = line_entry(path, number, data)
    try:
        if "state" in entry:
            state = entry["state"]
            if callable(getattr(env_class, "normalise", None)):  # foreign: the load->save form
                state = _normalised(env_class, state)
        else:  # sample_state gives the load->save form already; episodes never mutate it
            key = (env_class, int(entry.get("seed", 0)))
            if key not in initial:
                initial[key] = env_class.sample_state(key[1])
            state = initial[key]
    except (KeyError, ValueError, TypeError, LookupError, AttributeError, RecursionError) as exc:
        raise ReplayError(f"{path}:{number}: {type(exc).__name__}: {exc}") from None
    return LoggedEpisode(number, env_class, state, actions)
