"""Tolerant parsing of simulator answers into an observation and a patch (or a next state).

Accepted answers (DESIGN.md, Simulator I/O):
* ``{"observation": <JSON>, "patch": [RFC 6902 ops]}`` - ours;
* ``{"feedback": <JSON>, "config_changes": [{"type", "path", "value"}]}`` - the original benchmark's;
* ``{"observation": <JSON>, "next_state": {...}}`` - a full next state.

The JSON may sit in a code fence or after prose (a rationale); the last JSON object carrying one
of these key sets wins. Anything else is a ``ParsedAnswer`` with ``error`` set - never an
exception. Work is bounded: long answers are cut, the number of decode attempts is capped.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from envsim.jsonsafe import MAX_DEPTH, JSONLimitError, too_deep
from envsim.jsonsafe import loads as strict_loads
from envsim.jsonsafe import raw_decode as strict_raw_decode
from envsim.patch_bounds import MAX_PATCH_OPS  # one bound for answers and stored patches

MAX_ANSWER_CHARS = 400_000
MAX_DECODE_ATTEMPTS = 400
#: Characters the decoder may read over all attempts on one answer (each attempt reads from its ``{`` to where
#: it ended or failed): a parse bomb (``{"a":`` x 400 then a long list) is cut here instead of costing minutes.
MAX_DECODE_CHARS = 4 * MAX_ANSWER_CHARS
PATCH_OPS = {"add", "remove", "replace", "move", "copy", "test"}
_FENCE = re.compile(r"```(?:json|JSON)?\s*\n(.*?)```", re.DOTALL)


@dataclass
class ParsedAnswer:
    """A parsed answer: observation plus patch or next state, or the reason it could not be parsed."""

    observation: Any = None
    patch: list[dict[str, Any]] | None = None
    next_state: Any = None
    format: str = ""
    error: str | None = None
    feedback_text: str | None = None  # original format: the feedback string as given, when it was decoded
    changes: list[tuple[str, list[str], Any]] | None = None  # original format: (type, path parts, value)

    @property
    def ok(self) -> bool:
        """Whether the answer parsed into a usable prediction."""
        return self.error is None


def _objects(text: str, problems: list[str] | None = None) -> list[tuple[dict[str, Any], str]]:
    """JSON objects found in ``text``, each with its source text: fenced blocks first, then objects starting at
    each ``{``.

    Strict JSON (no NaN/Infinity, integers Python can read, at most ``MAX_DEPTH`` levels): why a
    candidate was refused for one of these reasons is appended to ``problems``. The decoder reads at most
    ``MAX_DECODE_CHARS`` characters over all attempts (a refusal without a known end counts the rest of the text)."""
    found: list[tuple[dict[str, Any], str]] = []
    for block in _FENCE.findall(text):
        try:
            value = strict_loads(block)
        except JSONLimitError as exc:
            if problems is not None:
                problems.append(str(exc))
            continue
        except ValueError:
            continue
        if isinstance(value, dict):
            found.append((value, block))
    if found:
        return found
    attempts = read = 0
    position = text.find("{")
    while position != -1 and attempts < MAX_DECODE_ATTEMPTS:
        if read > MAX_DECODE_CHARS:
            if problems is not None:
                problems.append(f"answer too costly to parse: {attempts} decode attempts read over "
                                f"{MAX_DECODE_CHARS} characters")
            break
        attempts += 1
        try:
            value, end = strict_raw_decode(text, position)
        except JSONLimitError as exc:
            read += (exc.end if exc.end is not None else len(text)) - position
            if problems is not None:
                problems.append(str(exc))
            position = text.find("{", position + 1)
            continue
        except json.JSONDecodeError as exc:
            read += max(1, exc.pos - position)
            position = text.find("{", position + 1)
            continue
        except ValueError:
            read += len(text) - position
            position = text.find("{", position + 1)
            continue
        read += end - position
        if isinstance(value, dict):
            found.append((value, text[position:end]))
        position = text.find("{", end)
    return found


class _DuplicateKey(ValueError):
    """A JSON object holds one key twice (``args[0]``: the key)."""


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return value


_PAIRS_DECODER = json.JSONDecoder(object_pairs_hook=_unique_pairs)


def duplicate_key(source: str) -> str | None:
    """The first key that some object of the JSON text ``source`` (already decoded strictly, so valid and bounded)
    holds twice, or ``None``. Python's decoder keeps the last of two equal keys silently: an answer with two
    ``"patch"`` keys would be scored on whichever came last."""
    try:
        _PAIRS_DECODER.decode(source)
    except _DuplicateKey as exc:
        return str(exc.args[0])
    except (ValueError, RecursionError):  # decoded before by the strict decoder: not expected
        return None
    return None


def _path_parts(path: Any) -> list[str]:
    """Keys of a path in the original format: dotted (``a.b.0``, ``a[0].b``), a JSON pointer or a list of keys."""
    if isinstance(path, list):
        if not all(isinstance(p, (str, int)) and not isinstance(p, bool) for p in path):
            raise ValueError("a path list must hold strings or integers")
        return [str(p) for p in path]
    if not isinstance(path, str):
        raise ValueError(f"path must be a string or list, got {type(path).__name__}")
    if path.startswith("/") or path == "":
        return [p.replace("~1", "/").replace("~0", "~") for p in path.split("/")[1:]]
    return [p for p in re.split(r"\.|\[(\d+)\]", path) if p]


def _pointer_from(path: Any) -> str:
    """A JSON pointer from the original format's paths: a pointer, a dotted string or a list of keys."""
    if isinstance(path, str) and (path.startswith("/") or path == ""):
        return path
    return "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in _path_parts(path))


_CHANGE_TYPES = {"add": "add", "added": "add", "insert": "add", "create": "add", "append": "add",
                 "modify": "replace", "modified": "replace", "update": "replace", "updated": "replace",
                 "change": "replace", "changed": "replace", "replace": "replace", "set": "replace",
                 "delete": "remove", "deleted": "remove", "remove": "remove", "removed": "remove"}


def read_config_changes(changes: Any) -> tuple[list[dict[str, Any]], list[tuple[str, list[str], Any]]]:
    """The original benchmark's ``config_changes`` as RFC 6902 operations and as ``(type, parts, value)``.

    The value is ``value`` or, as the original script also reads it, ``after``; both given and
    different, or neither given for an add/modify, is refused with the change's number and path.
    """
    if not isinstance(changes, list):
        raise ValueError(f"config_changes must be a list, got {type(changes).__name__}")
    patch, plain = [], []
    for number, change in enumerate(changes):
        if not isinstance(change, dict):
            raise ValueError(f"config change {number} is not an object")
        kind = change.get("type")
        op = _CHANGE_TYPES.get(kind.lower()) if isinstance(kind, str) else None
        if op is None:
            raise ValueError(f"config change {number} has unknown type {str(kind)[:40]!r}")
        parts = _path_parts(change.get("path"))
        entry: dict[str, Any] = {"op": op, "path": _pointer_from(change.get("path"))}
        value = None
        if op != "remove":
            where = f"config change {number} ({kind} {str(change.get('path'))[:60]})"
            if "value" in change and "after" in change and not _same(change["value"], change["after"]):
                raise ValueError(f"{where} has both value and after, and they differ")
            if "value" not in change and "after" not in change:
                raise ValueError(f"{where} has no value")
            value = change["value"] if "value" in change else change["after"]
            entry["value"] = value
        patch.append(entry)
        plain.append((kind, parts, value))
    return patch, plain


def _same(a: Any, b: Any) -> bool:
    try:
        return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    except (TypeError, ValueError, RecursionError):
        return False


def config_changes_to_patch(changes: Any) -> list[dict[str, Any]]:
    """Convert the original benchmark's ``config_changes`` list into RFC 6902 operations."""
    return read_config_changes(changes)[0]


_JSON_SCALARS = (str, int, float, bool, type(None))


def _is_json(value: Any, depth: int = 0) -> bool:
    if depth > 200:
        return False
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_json(v, depth + 1) for k, v in value.items())
    if isinstance(value, list):
        return all(_is_json(v, depth + 1) for v in value)
    return isinstance(value, _JSON_SCALARS)


def decode_feedback(feedback: Any) -> tuple[Any, str | None]:
    """The original format's feedback string (its prompt asks for a string) decoded as JSON, or failing
    that as a Python literal (how the original's data renders observations); ``(value, raw text)``.
    A string that decodes to neither is kept as it is, with no raw text."""
    if not isinstance(feedback, str):
        return feedback, None
    try:
        return strict_loads(feedback), feedback
    except (ValueError, RecursionError):
        pass
    text = feedback.strip()
    if text[:1] in "{[(" and text:
        import ast

        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return feedback, None
        if _is_json(value):
            return value, feedback
    return feedback, None


def validate_patch(patch: Any) -> list[dict[str, Any]]:
    """Check the shape of an RFC 6902 patch (ops, string paths, values where needed)."""
    if not isinstance(patch, list):
        raise ValueError("patch must be a list of operations")
    if len(patch) > MAX_PATCH_OPS:
        raise ValueError(f"patch has {len(patch)} operations (limit {MAX_PATCH_OPS})")
    for op in patch:
        if not isinstance(op, dict) or op.get("op") not in PATCH_OPS:
            raise ValueError(f"invalid patch operation {str(op)[:80]!r}")
        if not isinstance(op.get("path"), str):
            raise ValueError("every patch operation needs a string path")
        if op["op"] in ("add", "replace", "test") and "value" not in op:
            raise ValueError(f"{op['op']} operation without value")
        if op["op"] in ("move", "copy") and not isinstance(op.get("from"), str):
            raise ValueError(f"{op['op']} operation without 'from'")
    return patch


def _is_bare_list(text: str) -> bool:
    """Whether the answer (or its first code fence) is a JSON list rather than an object."""
    fence = _FENCE.search(text)
    body = fence.group(1) if fence else text
    return body.lstrip().startswith("[")


def _no_answer_reason(text: str, truncated: bool, problems: list[str], objects: list[dict[str, Any]]) -> str:
    """The most precise reason why no answer object was found."""
    if problems:
        return problems[0]
    if _is_bare_list(text):
        return "answer is a JSON list, not an object with observation and patch (a bare patch?)"
    if truncated:
        return f"answer longer than {MAX_ANSWER_CHARS} characters holds no complete answer object in them"
    if not objects:
        return "no JSON object in answer"
    return f"JSON object lacks observation/patch keys (has {sorted(objects[-1])[:6]})"


def parse_answer(text: Any) -> ParsedAnswer:
    """Parse a model's answer; on failure the result carries ``error`` (a reason), never raises."""
    if not isinstance(text, str):
        return ParsedAnswer(error=f"answer is not text (got {type(text).__name__})")
    if not text.strip():
        return ParsedAnswer(error="empty answer")
    parsed = _parse_text(text)
    if parsed.ok and any(too_deep(v) for v in (parsed.observation, parsed.patch, parsed.next_state)):
        return ParsedAnswer(error=f"JSON nested deeper than {MAX_DEPTH} levels")
    return parsed


def _parse_text(text: str) -> ParsedAnswer:
    truncated = len(text) > MAX_ANSWER_CHARS
    problems: list[str] = []
    found = _objects(text[:MAX_ANSWER_CHARS], problems)
    objects = [value for value, _source in found]
    candidates = [(o, source) for o, source in found if ("observation" in o and ("patch" in o or "next_state" in o))
                  or ("feedback" in o and "config_changes" in o)]
    if not candidates:
        return ParsedAnswer(error=_no_answer_reason(text[:MAX_ANSWER_CHARS], truncated, problems, objects))
    answer, source = candidates[-1]
    duplicate = duplicate_key(source)
    if duplicate is not None:
        return ParsedAnswer(error=f"ambiguous answer: key {duplicate[:60]!r} appears more than once in one object "
                                  "(which one counts is not defined)")
    try:
        if "feedback" in answer and "config_changes" in answer and "observation" not in answer:
            patch, changes = read_config_changes(answer["config_changes"])
            observation, feedback_text = decode_feedback(answer["feedback"])
            return ParsedAnswer(observation=observation, patch=validate_patch(patch), format="config_changes",
                                feedback_text=feedback_text, changes=changes)
        if "patch" in answer:
            return ParsedAnswer(observation=answer["observation"], patch=validate_patch(answer["patch"]),
                                format="patch")
        if not isinstance(answer["next_state"], dict):
            raise ValueError("next_state must be a JSON object")
        return ParsedAnswer(observation=answer["observation"], next_state=answer["next_state"], format="next_state")
    except (ValueError, TypeError) as exc:
        return ParsedAnswer(error=f"invalid answer: {exc}")
