"""States stored once: content-addressed blobs that records of large-state environments refer to.

A record of a large-state track (τ-bench) carries no ``state`` / ``next_state`` of its own. Instead:

* ``state_ref: {"base": "sha256:<hex>", "patch": [RFC 6902 ops]}``: the state is the blob ``<hex>`` (a
  gzipped canonical-JSON file ``<folder>/<hex>.json.gz``; ``<hex>`` is the sha256 of that canonical JSON)
  with ``patch`` applied; ``next_state`` is the state with the record's own ``patch`` applied; a chained
  episode's ``final_state`` is the state with every step's patch applied in order;
* ``tools_ref: "sha256:<hex>"``: the environment's tool schemas, stored once the same way.

``resolve(row, folder)`` returns a ``StoredRecord``: a dict that materialises those fields when read
(``record["state"]``, ``record.get("state")``) and keeps nothing: resolving shares every record the patch
does not touch with the cached blob, so it costs the copied paths only. Treat resolved states as read-only
(the executor and the scorers copy what they change).
"""

from __future__ import annotations

import collections
import gzip
import hashlib
import os
import re
import stat
import threading
import zlib
from pathlib import Path
from typing import Any, Iterator, Mapping

import jsonpatch

from envsim.delta import canonical_json, pointer_parts
from envsim.envs.base import json_copy
from envsim.jsonsafe import MAX_DEPTH, loads
from envsim.patch_bounds import MAX_GROWTH_CHARS, MAX_PATCH_OPS, CopyBudget, PatchBoundError, nesting_problem

REF_PREFIX = "sha256:"
#: A ref is exactly this (checked before the digest becomes a file name: no path can hide in it).
REF_PATTERN = re.compile(r"sha256:[0-9a-f]{64}")
#: Largest blob read, compressed or decompressed (the shipped τ-bench states are 3.1 MB at most).
MAX_BLOB_BYTES = 32 * 2**20
RESOLVED_FIELDS = ("state", "next_state", "final_state", "tools")


class StateRefError(ValueError):
    """A reference that does not resolve: a malformed ref, a missing, oversized or corrupt blob, a stored patch
    that does not apply or exceeds a bound (``envsim.patch_bounds``). The message names the record's field;
    validation adds ``file:line``."""


def blob_name(digest: str) -> str:
    """File name of a blob: ``<hex>.json.gz``."""
    return f"{digest}.json.gz"


def write_blob(value: Any, folder: Path) -> str:
    """Store ``value`` once under its content hash (gzip with a fixed mtime: rebuilt byte for byte); returns its ref."""
    text = canonical_json(value).encode()
    digest = hashlib.sha256(text).hexdigest()
    path = folder / blob_name(digest)
    if folder.is_symlink():  # a folder EnvSim names (OUT_states): a link planted there is refused, not followed
        from envsim.safe_files import RunFileRefused

        raise RunFileRefused(f"{folder} is a symbolic link; EnvSim does not write state blobs through it")
    if not path.is_file() or path.is_symlink():
        from envsim.safe_files import write_bytes

        # never through a planted link, at the blob's name or at the folder (opened O_NOFOLLOW)
        write_bytes(path, gzip.compress(text, compresslevel=9, mtime=0), follow_folder=False)
    return REF_PREFIX + digest


def ref_digest(ref: Any, field: str = "state_ref.base") -> str:
    """The hex digest of ``ref`` when it is exactly ``sha256:`` + 64 lowercase hex digits, else ``StateRefError``
    (raised before any file is touched: the digest becomes a file name)."""
    if not isinstance(ref, str) or REF_PATTERN.fullmatch(ref) is None:
        raise StateRefError(f"{field} must be 'sha256:' + 64 lowercase hex digits, got {ref!r:.80}")
    return ref[len(REF_PREFIX):]


def _read_limited(path: Path) -> bytes:
    """The bytes of the regular file ``path`` (never through a symbolic link, never blocking on a FIFO), at most
    ``MAX_BLOB_BYTES``."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise OSError("not a regular file")
        data = handle.read(MAX_BLOB_BYTES + 1)
    if len(data) > MAX_BLOB_BYTES:
        raise OSError(f"larger than {MAX_BLOB_BYTES} bytes (MAX_BLOB_BYTES)")
    return data


def _gunzip_limited(data: bytes) -> bytes:
    """One gzip member decompressed, refused past ``MAX_BLOB_BYTES`` (a decompression bomb stops there)."""
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    text = inflater.decompress(data, MAX_BLOB_BYTES + 1)
    if len(text) > MAX_BLOB_BYTES:
        raise ValueError(f"decompresses to more than {MAX_BLOB_BYTES} bytes (MAX_BLOB_BYTES)")
    if not inflater.eof or inflater.unused_data:
        raise ValueError("not one complete gzip stream")
    return text


#: Most JSON values a blob may hold, counted on its text before it is parsed (an upper bound: every ``{``, ``[`` and
#: ``,``): what ``envs.executor`` accepts of a state. A parsed value costs up to ~75 bytes (32 MiB of ``{}``
#: parsed to ~790 MB), so this bounds one blob's memory; the shipped τ states hold 162,430 at most.
MAX_BLOB_VALUES = 2_000_000
#: Most values (as counted above) the blob cache holds over all its blobs, and most blobs: 8 blobs of
#: 32 MiB of ``{}`` peaked at 6.3 GB in a plain 8-entry cache; two maximal blobs fit, the shipped ones all do.
MAX_CACHED_VALUES = 2 * MAX_BLOB_VALUES
MAX_CACHED_BLOBS = 8


def _value_count(text: bytes) -> int:
    """An upper bound on the JSON values of ``text``, read without parsing it."""
    return text.count(b"{") + text.count(b"[") + text.count(b",") + 1


class _BlobCache:
    """Parsed blobs by (folder, digest), least recently used dropped first, bounded by ``MAX_CACHED_BLOBS`` blobs
    and ``MAX_CACHED_VALUES`` values together (thread-safe: prompts are built in worker threads)."""

    def __init__(self) -> None:
        self._entries: collections.OrderedDict[tuple[str, str], tuple[Any, int, int]] = collections.OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str]) -> tuple[Any, int, int] | None:
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
            return found

    def put(self, key: tuple[str, str], entry: tuple[Any, int, int]) -> None:
        with self._lock:
            self._entries[key] = entry
            self._entries.move_to_end(key)
            while len(self._entries) > 1 and (len(self._entries) > MAX_CACHED_BLOBS or
                                              sum(e[2] for e in self._entries.values()) > MAX_CACHED_VALUES):
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


_BLOBS = _BlobCache()


def _blob(folder: str, digest: str) -> tuple[Any, int]:
    """A blob's value and its canonical-JSON length in characters (cached and shared: read-only)."""
    found = _BLOBS.get((folder, digest))
    if found is not None:
        return found[0], found[1]
    path = Path(folder) / blob_name(digest)
    try:
        text = _gunzip_limited(_read_limited(path))
    except (OSError, ValueError, zlib.error) as exc:
        raise StateRefError(f"cannot read state blob {path} ({getattr(exc, 'strerror', None) or exc})") from None
    if hashlib.sha256(text).hexdigest() != digest:
        raise StateRefError(f"state blob {path}: content does not match its hash")
    values = _value_count(text)
    if values > MAX_BLOB_VALUES:
        raise StateRefError(f"state blob {path}: holds up to {values:,} JSON values, over the {MAX_BLOB_VALUES:,} "
                            "a state may have (MAX_BLOB_VALUES); not parsed")
    try:
        decoded = text.decode("utf-8")
        del text
        entry = (loads(decoded, max_depth=MAX_DEPTH), len(decoded), values)
    except ValueError as exc:  # UnicodeDecodeError, JSON errors and limits
        raise StateRefError(f"state blob {path}: not JSON ({str(exc)[:120]})") from None
    _BLOBS.put((folder, digest), entry)
    return entry[0], entry[1]


_blob.cache_clear = _BLOBS.clear  # type: ignore[attr-defined]  (as the lru_cache it replaces was cleared)


def load_blob(folder: str, ref: str, field: str = "state_ref.base") -> Any:
    """The value of a blob (cached and shared: read-only). The ref is checked first (``ref_digest``), then the
    file: a regular file of at most ``MAX_BLOB_BYTES`` compressed and decompressed, whose content matches its
    hash; ``StateRefError`` names ``field`` otherwise."""
    digest = ref_digest(ref, field)
    try:
        return _blob(str(folder), digest)[0]
    except StateRefError as exc:
        raise StateRefError(f"{field} {ref[:19]}…: {exc}") from None


def _blob_chars(folder: str, ref: str) -> int:
    return _blob(str(folder), ref_digest(ref))[1]


def apply_shared(base: Any, patch: Any, budget: CopyBudget | None = None, field: str = "patch") -> Any:
    """``patch`` applied to ``base`` without touching it: only containers on the patched paths are copied.

    Bounded as answers are (``envsim.patch_bounds``): at most ``MAX_PATCH_OPS`` operations, and ``copy`` may
    add at most the starting state's size plus ``MAX_GROWTH_CHARS`` characters (``budget``: shared by a chain
    of patches resolved from one stored state), and no op may nest the state deeper than ``MAX_STATE_DEPTH``.
``StateRefError`` names ``field``, the op and the bound."""
    if not isinstance(patch, list):
        raise StateRefError(f"{field} must be a list of RFC 6902 operations (got {type(patch).__name__})")
    if len(patch) > MAX_PATCH_OPS:
        raise StateRefError(f"{field} has {len(patch)} operations (limit MAX_PATCH_OPS = {MAX_PATCH_OPS})")
    if not patch:
        return base
    budget = budget or CopyBudget.for_state(base)
    root = base.copy() if isinstance(base, (dict, list)) else base
    copied = {id(root)}
    for i, op in enumerate(patch):
        if not isinstance(op, dict) or not isinstance(op.get("path"), str):
            raise StateRefError(f"{field} op {i} is not an operation {{op, path, ...}}")
        deep = nesting_problem(op, root)  # each op's value is shallow, but paths stack: checked before it applies
        if deep:
            raise StateRefError(f"{field} op {i} ({str(op.get('op'))[:10]} {str(op['path'])[:40]}…): {deep}")
        for key in ("path", "from"):
            parts = pointer_parts(op.get(key, "")) if isinstance(op.get(key), str) else []
            node = root
            for part in parts[:-1]:
                index: Any = int(part) if isinstance(node, list) and part.isdigit() else part
                try:
                    child = node[index]
                except (KeyError, IndexError, TypeError):
                    break
                if isinstance(child, (dict, list)) and id(child) not in copied:
                    child = child.copy()
                    node[index] = child
                    copied.add(id(child))
                node = child
        step = dict(op)
        if "value" in step:
            step["value"] = json_copy(step["value"])
        try:
            if op.get("op") == "copy":  # the only op that amplifies: its size is counted before it is made
                budget.charge_value(jsonpatch.JsonPointer(op.get("from", "")).resolve(root))
            root = jsonpatch.apply_patch(root, [step], in_place=True)
        except PatchBoundError as exc:
            raise StateRefError(
                f"{field} op {i} (copy {str(op.get('from'))[:40]} -> {str(op.get('path'))[:40]}): copies grow the "
                f"state beyond {exc.limit} characters (limit: 2 x the starting state's {budget.state_chars()} "
                f"characters + MAX_GROWTH_CHARS {MAX_GROWTH_CHARS}); stopped before copying") from None
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, KeyError, IndexError, TypeError,
                ValueError, AttributeError, RecursionError) as exc:
            raise StateRefError(f"{field} op {i} does not apply: {str(exc)[:120]}") from None
    return root


class StoredRecord(dict):
    """A record whose ``state``, ``next_state``, ``final_state`` and ``tools`` are resolved from refs on each read."""

    folder: str = ""

    def _resolve(self, key: str) -> Any:
        ref = dict.get(self, "state_ref")
        if key == "tools":
            return load_blob(self.folder, dict.__getitem__(self, "tools_ref"), "tools_ref")
        if not isinstance(ref, Mapping):
            raise StateRefError(f"state_ref must be an object {{base, patch}} (got {type(ref).__name__})")
        base = load_blob(self.folder, ref.get("base"), "state_ref.base")
        # one growth budget for the whole chain: the stored state's patch, then the record's or the steps'
        budget = CopyBudget(lambda: _blob_chars(self.folder, ref["base"]))
        state = apply_shared(base, [] if ref.get("patch") is None else ref["patch"], budget, "state_ref.patch")
        if key == "state":
            return state
        if key == "next_state" and "patch" in self:
            return apply_shared(state, dict.__getitem__(self, "patch"), budget, "patch")
        if key == "final_state" and "steps" in self:
            steps = dict.__getitem__(self, "steps")
            if not isinstance(steps, list):
                raise StateRefError(f"steps must be a list (got {type(steps).__name__})")
            for i, step in enumerate(steps):
                patch = step.get("patch", []) if isinstance(step, dict) else None
                state = apply_shared(state, patch, budget, f"steps[{i}].patch")
            return state
        raise KeyError(key)

    def _resolvable(self, key: str) -> bool:
        if key == "tools":
            return dict.__contains__(self, "tools_ref")
        if not dict.__contains__(self, "state_ref"):
            return False
        return key == "state" or (key == "next_state" and dict.__contains__(self, "patch")) or \
            (key == "final_state" and dict.__contains__(self, "steps"))

    def __missing__(self, key: str) -> Any:
        if key in RESOLVED_FIELDS and self._resolvable(key):
            return self._resolve(key)
        raise KeyError(key)

    def get(self, key: str, default: Any = None) -> Any:
        """``dict.get``, resolving referenced fields."""
        if dict.__contains__(self, key):
            return dict.__getitem__(self, key)
        if key in RESOLVED_FIELDS and self._resolvable(key):
            return self._resolve(key)
        return default

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, key) or (key in RESOLVED_FIELDS and self._resolvable(str(key)))

    def materialised(self) -> dict[str, Any]:
        """A plain dict with every referenced field filled in (for exports that need self-contained records)."""
        out = dict(self)
        for key in RESOLVED_FIELDS:
            if key not in out and self._resolvable(key):
                out[key] = json_copy(self._resolve(key))
        return out


def has_refs(row: Any) -> bool:
    """Whether a row refers to stored blobs."""
    return isinstance(row, dict) and ("state_ref" in row or "tools_ref" in row)


def resolve(row: dict[str, Any], folder: Path) -> StoredRecord:
    """A row whose refs resolve against ``folder`` (``<benchmark dir>/<split>_states`` or a shared one)."""
    record = StoredRecord(row)
    record.folder = str(folder)
    return record


def state_folder(benchmark_file: Path) -> Path:
    """Where the blobs of a benchmark file live: ``<dir>/tau_states`` for ``tau*.jsonl`` (``<stem>_states`` else)."""
    stem = benchmark_file.stem.split("_")[0] if benchmark_file.stem.startswith("tau") else benchmark_file.stem
    return benchmark_file.parent / f"{stem}_states"


def iter_refs(rows: list[dict[str, Any]]) -> Iterator[str]:
    """Every blob ref the rows name (for checks that a shipped track is complete)."""
    for row in rows:
        ref = row.get("state_ref") if isinstance(row, dict) else None
        if isinstance(ref, Mapping) and isinstance(ref.get("base"), str):
            yield ref["base"]
        if isinstance(row, dict) and isinstance(row.get("tools_ref"), str):
            yield row["tools_ref"]
