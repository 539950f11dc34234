"""How ``envsim view`` embeds the values it shows: bounded JSON cells, the state changes of a call (changed paths with
old → new values, expected beside predicted), and sample details, prompts and answers packed into compressed chunks.

The page diffs cells as JSON in its own script (``view_script``); everything here only shapes data, never markup.
A cell is ``{"v": VALUE}`` (a JSON value the page may diff), ``{"text": TEXT}`` (too large or too deep to embed as a
value: shown as text) or ``None`` (nothing to show).
"""

from __future__ import annotations

import base64
import json
import math
import zlib
from typing import Any, Iterable, Mapping, Sequence

import orjson

from envsim.delta import _Slot, exactly_equal, pointer, prune_equal, same_json
from envsim.jsonsafe import MAX_DEPTH, text_depth

MAX_VALUE_CHARS = 50_000   # compact JSON characters of a value embedded as a value (larger: text, cut)
MAX_VALUE_DEPTH = MAX_DEPTH  # nesting a value embedded as a value may have (an answer's own bound; deeper: text)
MAX_CHANGES = 200          # changed paths listed per sample
CHUNK_SAMPLES = 50         # samples whose details (and, apart, whose prompts and answers) share a compressed chunk
#: What of a sample the page decompresses only when it shows the sample.
DETAIL_KEYS = ("call", "observation", "patch", "changes")

#: Why a state change row is marked: both sides changed the path to equal values, to different ones, only the
#: true call changed it (the prediction left it), only the prediction did.
STATUSES = ("same", "differs", "missed", "spurious")


def cut_text(text: str, limit: int) -> str:
    """``text``, or its first ``limit`` characters (at a line or word end when one is near) and how much is left."""
    if len(text) <= limit:
        return text
    end = max(text.rfind("\n", 0, limit), text.rfind(" ", 0, limit))
    end = end if end > limit * 0.8 else limit
    return text[:end] + f"\n… ({len(text) - end:,} more characters not shown)"


def _compact(value: Any) -> bytes | str | None:
    """Compact JSON of ``value`` (orjson at C speed; ``json`` for what orjson refuses), or ``None``."""
    try:
        return orjson.dumps(value)
    except (orjson.JSONEncodeError, TypeError):
        try:
            return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        except (TypeError, ValueError, RecursionError):
            return None


def cell(value: Any) -> dict[str, Any]:
    """``value`` as a cell: ``{"v": value}`` when it is at most ``MAX_VALUE_DEPTH`` deep and ``MAX_VALUE_CHARS``
    characters of compact JSON, else ``{"text": ...}`` (indented JSON, cut; or why it cannot be shown)."""
    if isinstance(value, str) and len(value) <= MAX_VALUE_CHARS or value is None or isinstance(value, (bool, float)):
        return {"v": value}
    compact = _compact(value)
    if compact is None or text_depth(compact) > MAX_VALUE_DEPTH:
        return {"text": f"(a value nested deeper than {MAX_VALUE_DEPTH} levels, or not JSON: not shown)"}
    if len(compact) <= MAX_VALUE_CHARS:
        return {"v": value}
    return {"text": cut_text(json.dumps(value, ensure_ascii=False, indent=2), MAX_VALUE_CHARS)}


def _leaves(old: Any, new: Any, limit: int) -> list[tuple[list[Any], bool, Any, bool, Any]]:
    """The changed leaves of a pruned pair (``envsim.delta.prune_equal``), in key order: (path, has old, old,
    has new, new); at most ``limit``. Iterative: any depth."""
    out: list[tuple[list[Any], bool, Any, bool, Any]] = []
    stack: list[tuple[str, Any, Any, list[Any]]] = [("both", old, new, [])]
    while stack and len(out) < limit:
        side, a, b, path = stack.pop()
        if side == "old":
            out.append((path, True, a, False, None))
        elif side == "new":
            out.append((path, False, None, True, b))
        elif isinstance(a, dict) and isinstance(b, dict):  # a pruned pair of objects, or of aligned lists
            keys = [*a, *(k for k in b if k not in a)]
            for key in reversed(keys):
                part = (key.new if key.new is not None else key.old) if isinstance(key, _Slot) else key
                where = "both" if key in a and key in b else "old" if key in a else "new"
                stack.append((where, a.get(key), b.get(key), path + [part]))
        else:
            out.append((path, True, a, True, b))
    return out


def state_changes(before: Any, after: Any, limit: int = MAX_CHANGES + 1) -> list[tuple[str, bool, Any, bool, Any]]:
    """What changed from ``before`` to ``after``: (JSON pointer, has old, old, has new, new) per changed leaf, lists
    aligned item by item as labels align them (``envsim.delta``); a list item's path holds its new index (its old
    one when removed). Raises ``ValueError`` when the states differ in too many values to align."""
    from envsim.evaluation.scoring.shared_states import strictly_equal_shared

    def equal(a: Any, b: Any) -> bool:  # strictly equal, deciding the common cases at C speed
        try:
            if a != b:  # unequal in Python: unequal as JSON text too (JSON values hold no NaN)
                return False
        except RecursionError:
            pass
        return exactly_equal(a, b) or strictly_equal_shared(a, b)

    small_old, small_new = prune_equal(before, after, equal)
    return [(pointer(path), has_old, old, has_new, new)
            for path, has_old, old, has_new, new in _leaves(small_old, small_new, limit)]


def op_changes(patch: Any) -> list[tuple[str, bool, Any, bool, Any]]:
    """Changed paths read off a patch's ops alone (no state before it): the new value an op writes (``remove``:
    none), later ops on a path replacing earlier ones; old values unknown."""
    latest: dict[str, tuple[bool, Any]] = {}
    for op in patch if isinstance(patch, list) else []:
        if not isinstance(op, dict) or not isinstance(op.get("path"), str):
            continue
        kind, path = op.get("op"), op["path"]
        if kind in ("add", "replace"):
            latest[path] = (True, op.get("value"))
        elif kind == "remove":
            latest[path] = (False, None)
        elif kind in ("copy", "move") and isinstance(op.get("from"), str):
            latest[path] = (True, f"({kind} of {op['from']})")
            if kind == "move":
                latest[op["from"]] = (False, None)
    return [(path, False, None, has_new, new) for path, (has_new, new) in latest.items()]


def _row_key(change: tuple[str, bool, Any, bool, Any]) -> tuple[str, bool, bool]:
    return change[0], change[1], change[3]


def _same_change(a: tuple[str, bool, Any, bool, Any], b: tuple[str, bool, Any, bool, Any]) -> bool:
    return (a[1], a[3]) == (b[1], b[3]) and (not a[1] or same_json(a[2], b[2])) and (not a[3] or same_json(a[4], b[4]))


def compare_changes(expected: Sequence[tuple[str, bool, Any, bool, Any]] | None,
                    predicted: Sequence[tuple[str, bool, Any, bool, Any]] | None, *, old_known: bool,
                    note: str | None = None) -> dict[str, Any]:
    """The changes table of one sample: ``rows`` of ``[path, status, expected old, expected new, predicted old,
    predicted new]`` (cells; ``None`` where a side does not hold the path: absent, unchanged or unknown), expected
    paths first, at most ``MAX_CHANGES``; ``status`` is one of ``STATUSES``, or ``None`` when a side is missing."""
    rows: list[list[Any]] = []
    exp = {_row_key(c): c for c in expected or []}
    pred = {_row_key(c): c for c in predicted or []}
    keys = list(exp) + [k for k in pred if k not in exp]

    def cells(change: tuple[str, bool, Any, bool, Any] | None) -> list[Any]:
        if change is None:
            return [None, None]
        return [cell(change[2]) if change[1] else None, cell(change[4]) if change[3] else None]

    for key in keys[:MAX_CHANGES]:
        e, p = exp.get(key), pred.get(key)
        if expected is None or predicted is None:
            status = None
        elif e is not None and p is not None:
            status = "same" if _same_change(e, p) else "differs"
        else:
            status = "missed" if p is None else "spurious"
        rows.append([key[0], status, *cells(e), *cells(p)])
    notes = [note] if note else []
    if len(keys) > MAX_CHANGES or len(expected or []) > MAX_CHANGES or len(predicted or []) > MAX_CHANGES:
        notes.append(f"only the first {MAX_CHANGES} changed paths are listed")
    return {"rows": rows, "old_known": old_known, "expected": expected is not None,
            "predicted": predicted is not None, "note": "; ".join(notes) or None}


def json_finite(value: Any) -> Any:
    """``value`` with NaN / infinities (which JSON cannot hold) written as strings, in place."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    stack: list[Any] = [value]
    while stack:
        node = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, child in list(items):
            if isinstance(child, float) and not math.isfinite(child):
                node[key] = str(child)
            elif isinstance(child, (dict, list)):
                stack.append(child)
    return value


def pack_chunks(items: Iterable[Any], size: int = CHUNK_SAMPLES) -> list[str]:
    """JSON values, ``size`` a chunk: each chunk is the JSON list of its items (ASCII: lone surrogates stay escaped;
    NaN written as a string), zlib-compressed (the page's ``DecompressionStream("deflate")`` reads it) and
    base64-encoded, so the page holds them in a fraction of their size and decodes a chunk when it needs one."""
    chunks, batch = [], []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            chunks.append(_pack(batch))
            batch = []
    if batch:
        chunks.append(_pack(batch))
    return chunks


def _pack(batch: list[Any]) -> str:
    try:
        text = json.dumps(batch, ensure_ascii=True, allow_nan=False)
    except ValueError:
        text = json.dumps(json_finite(batch), ensure_ascii=True, allow_nan=False)
    return base64.b64encode(zlib.compress(text.encode("ascii"), 6)).decode("ascii")


def unpack_chunk(chunk: str) -> list[Any]:
    """A chunk of ``pack_chunks`` back as its items (what the page's script does when it needs one)."""
    return json.loads(zlib.decompress(base64.b64decode(chunk)).decode("ascii"))


def page_samples(run: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The samples of a run's page data (``view_data``) whole again: each with its ``DETAIL_KEYS`` and its
    ``prompt`` and ``answer`` (tests and tools read them here)."""
    details = [unpack_chunk(c) for c in run.get("details", [])]
    texts = [unpack_chunk(c) for c in run.get("texts", [])]
    out = []
    for sample in run.get("samples", []):
        chunk, index = sample["at"]
        prompt, answer = texts[chunk][index]
        out.append({**sample, **details[chunk][index], "prompt": prompt, "answer": answer})
    return out
