"""Strict, bounded JSON decoding for untrusted text (model answers, benchmark files).

JSON has no NaN or Infinity, Python refuses to read integers longer than
``sys.get_int_max_str_digits()`` digits, and deep nesting makes recursive code (ours, deepdiff,
jsonpatch) raise ``RecursionError``. Each of these becomes a ``JSONLimitError`` (a ``ValueError``)
with a precise reason here, before any recursive code sees the value. Depth is measured without
recursion.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
from itertools import accumulate
from typing import Any, Iterable

try:  # a core dependency; without it (an older environment) json decodes everything, to the same values
    import orjson as _orjson
except ImportError:  # pragma: no cover - exercised by monkeypatching _orjson to None
    _orjson = None

MAX_DEPTH = 200


class JSONLimitError(ValueError):
    """Valid-looking JSON that EnvSim refuses: NaN/Infinity, an over-long integer, too deep nesting.

    ``end`` is where the refused value ended when it was decoded whole (too deep), else ``None``."""

    end: int | None = None


def _constant(name: str) -> Any:
    raise JSONLimitError(f"{name} is not valid JSON (JSON has no NaN or Infinity)")


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise JSONLimitError(f"number {text[:24]}{'...' if len(text) > 24 else ''} overflows to infinity")
    return value


def int_digit_limit() -> int:
    """The longest integer literal Python reads (``sys.get_int_max_str_digits``; 0 = unlimited)."""
    getter = getattr(sys, "get_int_max_str_digits", None)
    return int(getter()) if getter else 0


def _int(text: str) -> int:
    digits = len(text) - text.startswith("-")
    limit = int_digit_limit()
    if limit and digits > limit:
        raise JSONLimitError(f"integer literal of {digits} digits exceeds Python's limit of {limit} digits "
                             "(sys.set_int_max_str_digits)")
    return int(text)


DECODER = json.JSONDecoder(parse_float=_float, parse_int=_int, parse_constant=_constant)
#: ``DECODER`` with integers read by the C scanner itself (no Python call per integer): an integer past Python's
#: digit limit makes it raise a plain ``ValueError``, and ``loads`` then decodes again with ``DECODER`` for the reason.
_FAST_DECODER = json.JSONDecoder(parse_float=_float, parse_constant=_constant)
#: Every byte but the four brackets and the quote (``text_depth`` deletes them).
_NOT_BRACKETS_OR_QUOTES = bytes(c for c in range(256) if c not in b'[]{}"')
#: An escape in a JSON string: a backslash and the byte after it (``text_depth`` drops them, reading left to right,
#: so an escaped quote never ends a string and an escaped backslash before a quote does).
_ESCAPE = re.compile(rb"\\.", re.DOTALL)
#: A bracket's step in nesting depth, by byte value.
_BRACKET_STEP = [0] * 256
for _byte, _step in ((ord("["), 1), (ord("{"), 1), (ord("]"), -1), (ord("}"), -1)):
    _BRACKET_STEP[_byte] = _step


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether ``value`` nests containers more than ``limit`` levels deep (iterative, stops early)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        if depth + 1 > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list, tuple)))
    return False


def text_depth(text: str | bytes) -> int:
    """How deep the containers of a *valid* JSON text (or its UTF-8 bytes) nest, read off its brackets outside its
    strings, at C speed: a fraction of ``too_deep``'s walk over the decoded value. Every escape (a backslash and the
    byte after it, read left to right) is dropped; then every byte but brackets and quotes (a UTF-8 text's other
    characters never share a byte with them); then pairs of adjacent quotes, which leaves every other byte's side of
    the quotes as it was; what is left between quotes is the brackets inside strings."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    if b"\\" in data:
        data = _ESCAPE.sub(b"", data)
    kept = data.translate(None, _NOT_BRACKETS_OR_QUOTES).replace(b'""', b"")
    if b'"' in kept:
        kept = b"".join(kept.split(b'"')[0::2])
    return max(accumulate(map(_BRACKET_STEP.__getitem__, kept)), default=0)


def count_values(value: Any, limit: int) -> int:
    """Number of JSON values in ``value`` (containers and scalars), counted without recursion; stops at
    ``limit + 1``, so the cost is bounded by the limit, not by the value."""
    count = 0
    stack: list[Any] = [value]
    while stack and count <= limit:
        item = stack.pop()
        count += 1
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return count


#: ``nests_deeper``'s default: no decoded value given.
NOT_GIVEN = object()


def _depth_error(limit: int) -> JSONLimitError:
    return JSONLimitError(f"JSON nested deeper than {limit} levels")


def raw_decode(text: str, position: int = 0, *, max_depth: int = MAX_DEPTH) -> tuple[Any, int]:
    """``json.JSONDecoder.raw_decode`` with the strict rules; raises ``JSONLimitError`` or ``JSONDecodeError``."""
    try:
        value, end = DECODER.raw_decode(text, position)
    except RecursionError:
        raise _depth_error(max_depth) from None
    if too_deep(value, max_depth):
        error = _depth_error(max_depth)
        error.end = end
        raise error
    return value, end


def loads(text: str, *, max_depth: int = MAX_DEPTH) -> Any:
    """``json.loads`` with the strict rules (whole text, surrounding white space allowed)."""
    try:
        try:
            value = _FAST_DECODER.decode(text)
        except JSONLimitError:
            raise
        except ValueError:  # not JSON, or an integer past the digit limit: the strict decoder says which
            value = DECODER.decode(text)
    except RecursionError:
        raise _depth_error(max_depth) from None
    if nests_deeper(text, max_depth):
        raise _depth_error(max_depth)
    return value


def nests_deeper(text: str | bytes, limit: int, value: Any = NOT_GIVEN) -> bool:
    """Whether a *valid* JSON text (or its UTF-8 bytes) nests deeper than ``limit``: a value cannot nest deeper than
    the text has opening brackets, so the depth is measured only when those are many; given the text's decoded
    ``value`` (as orjson decodes it), ``_written_within`` may show it within the limit before ``text_depth`` is read."""
    opening = ("[", "{") if isinstance(text, str) else (b"[", b"{")
    return text.count(opening[0]) + text.count(opening[1]) > limit \
        and not (value is not NOT_GIVEN and _written_within(value, limit)) and text_depth(text) > limit


#: What ``decoded_by_orjson`` returns when orjson did not decode the text (the caller decodes it as before).
NOT_DECODED = object()
#: Byte classes for ``decoded_by_orjson``: a digit reads "0", every other byte "x".
_DIGIT_CLASSES = bytes(48 if 48 <= byte <= 57 else 120 for byte in range(256))
#: 19 digits in a row: the shortest integer literal orjson may turn into a float (it keeps -2**63 .. 2**64 - 1).
_LONG_DIGIT_RUN = b"0" * 19


def decoded_by_orjson(data: bytes) -> Any:
    """The value ``json.loads`` gives for the UTF-8 JSON text ``data``, decoded by orjson (about twice as fast), or
    ``NOT_DECODED`` where orjson refuses the text or could give another value. It refuses NaN and Infinity, numbers
    that overflow to infinity, lone surrogates, invalid UTF-8, nesting past 1,024 levels and invalid JSON; it reads
    integers outside 64 bits as floats, so a text with 19 digits in a row (anywhere) is left to json. Otherwise it
    gives json's values: the same types, key order, floats (both round correctly) and last of duplicate keys (the
    tests compare the two on generated and hand-picked texts)."""
    if _orjson is None or _LONG_DIGIT_RUN in data.translate(_DIGIT_CLASSES):
        return NOT_DECODED
    try:
        return _orjson.loads(data)
    except _orjson.JSONDecodeError:
        return NOT_DECODED


def decoded_utf8(data: bytes, *, max_depth: int = MAX_DEPTH) -> Any:
    """The value of the UTF-8 JSON text ``data`` where ``decoded_by_orjson`` gives it, else ``NOT_DECODED`` (the
    caller decodes as before, for the value or the precise error); raises ``JSONLimitError`` when it nests deeper
    than ``max_depth``."""
    value = decoded_by_orjson(data)
    if value is not NOT_DECODED and nests_deeper(data, max_depth, value):
        raise _depth_error(max_depth)
    return value


def loads_utf8(data: bytes, *, max_depth: int = MAX_DEPTH) -> Any:
    """``loads(data.decode("utf-8"))``, with the same value and the same errors, through orjson where
    ``decoded_by_orjson`` can (``decoded_utf8``)."""
    value = decoded_utf8(data, max_depth=max_depth)
    if value is NOT_DECODED:
        return loads(data.decode("utf-8"), max_depth=max_depth)
    return value


#: The deepest nesting ``orjson.dumps`` writes (``_orjson_nesting_limit``), once probed; empty before.
_ORJSON_NESTING: list[int | None] = []
#: Nesting probed up to this depth: an orjson that writes deeper has no limit ``_written_within`` can use.
_NESTING_PROBE_CAP = 4096


def _nested(depth: int, kind: type) -> Any:
    """``depth`` containers of ``kind`` (list or dict), each inside the last, the innermost empty."""
    value: Any = kind()
    for _ in range(depth - 1):
        value = [value] if kind is list else {"k": value}
    return value


def _orjson_nesting_limit() -> int | None:
    """The deepest nesting of lists or of objects ``orjson.dumps`` writes (it refuses deeper values with
    ``JSONEncodeError``: 254 in orjson 3.x), found once by bisection on both kinds (the larger counts); ``None``
    without orjson or without a limit below ``_NESTING_PROBE_CAP``."""
    if not _ORJSON_NESTING:
        limit: int | None = None
        if _orjson is not None:
            limits = []
            for kind in (list, dict):
                low, high = 0, _NESTING_PROBE_CAP + 1  # writes ``low`` levels; refuses ``high`` (or above the cap)
                while high - low > 1:
                    middle = (low + high) // 2
                    try:
                        _orjson.dumps(_nested(middle, kind))
                        low = middle
                    except _orjson.JSONEncodeError:
                        high = middle
                limits.append(low)
            limit = max(limits) if max(limits) < _NESTING_PROBE_CAP else None
        _ORJSON_NESTING.append(limit)
    return _ORJSON_NESTING[0]


def _written_within(value: Any, limit: int) -> bool:
    """A sufficient test, at C speed, that a value of JSON types (as orjson decodes them) nests at most ``limit``
    deep: wrapped in as many lists as orjson's own nesting limit leaves above ``limit``, ``orjson.dumps`` writes it.
    ``False`` means "not shown" (deeper, or a value orjson refuses for another reason): the caller then measures."""
    nesting = _orjson_nesting_limit()
    if nesting is None or nesting < limit:
        return False
    for _ in range(nesting - limit):
        value = [value]
    try:
        _orjson.dumps(value)
    except _orjson.JSONEncodeError:
        return False
    return True


def dumps_line(value: Any, **options: Any) -> str:
    """``json.dumps`` (non-ASCII kept as is) that is always encodable as UTF-8.

    A lone surrogate (``"\\ud800"``: valid JSON, not encodable UTF-8) makes the whole line fall back to
    ``ensure_ascii=True``, which escapes it; a line without one is byte-identical to ``ensure_ascii=False``."""
    text = json.dumps(value, ensure_ascii=False, **options)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, ensure_ascii=True, **options)
    return text


def write_text_atomic(path: os.PathLike[str] | str, lines: Iterable[str]) -> int:
    """Write ``lines`` (each without its newline) to a temporary file beside ``path``, then rename it over
    ``path``: a failure part-way leaves the old file as it was, and a link planted at ``path`` (or at any temporary
    name) is never written through (``envsim.safe_files.write_lines``). Returns the number of lines."""
    from envsim.safe_files import write_lines

    return write_lines(path, lines)
