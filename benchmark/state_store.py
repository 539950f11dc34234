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

import functools
import gzip
import hashlib
import json
from pathlib import Path
from typing import Any, Iterator, Mapping

import jsonpatch

from envsim.delta import canonical_json, pointer_parts
from envsim.envs.base import json_copy

REF_PREFIX = "sha256:"
RESOLVED_FIELDS = ("state", "next_state", "final_state", "tools")


class StateRefError(ValueError):
    """A reference that does not resolve: a missing or corrupt blob, a patch that does not apply."""


def blob_name(digest: str) -> str:
    """File name of a blob: ``<hex>.json.gz``."""
    return f"{digest}.json.gz"


def write_blob(value: Any, folder: Path) -> str:
    """Store ``value`` once under its content hash (gzip with a fixed mtime: rebuilt byte for byte); returns its ref."""
    text = canonical_json(value).encode()
    digest = hashlib.sha256(text).hexdigest()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / blob_name(digest)
    if not path.is_file():
        path.write_bytes(gzip.compress(text, compresslevel=9, mtime=0))
    return REF_PREFIX + digest


@functools.lru_cache(maxsize=8)
def load_blob(folder: str, ref: str) -> Any:
    """The value of a blob (cached and shared: read-only); checks that its content matches its hash."""
    if not isinstance(ref, str) or not ref.startswith(REF_PREFIX):
        raise StateRefError(f"not a content reference: {ref!r:.80}")
    digest = ref[len(REF_PREFIX):]
    path = Path(folder) / blob_name(digest)
    try:
        text = gzip.decompress(path.read_bytes())
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise StateRefError(f"{path}: cannot read state blob ({exc})") from None
    if hashlib.sha256(text).hexdigest() != digest:
        raise StateRefError(f"{path}: content does not match its hash")
    return json.loads(text)


def apply_shared(base: Any, patch: list[dict[str, Any]]) -> Any:
    """``patch`` applied to ``base`` without touching it: only containers on the patched paths are copied."""
    if not patch:
        return base
    root = base.copy() if isinstance(base, (dict, list)) else base
    copied = {id(root)}
    for op in patch:
        for field in ("path", "from"):
            parts = pointer_parts(op.get(field, "")) if isinstance(op.get(field), str) else []
            node = root
            for part in parts[:-1]:
                key: Any = int(part) if isinstance(node, list) and part.isdigit() else part
                try:
                    child = node[key]
                except (KeyError, IndexError, TypeError):
                    break
                if isinstance(child, (dict, list)) and id(child) not in copied:
                    child = child.copy()
                    node[key] = child
                    copied.add(id(child))
                node = child
        step = dict(op)
        if "value" in step:
            step["value"] = json_copy(step["value"])
        try:
            root = jsonpatch.apply_patch(root, [step], in_place=True)
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, KeyError, IndexError, TypeError) as exc:
            raise StateRefError(f"stored patch does not apply: {exc}") from None
    return root


class StoredRecord(dict):
    """A record whose ``state``, ``next_state``, ``final_state`` and ``tools`` are resolved from refs on each read."""

    folder: str = ""

    def _resolve(self, key: str) -> Any:
        ref = dict.get(self, "state_ref")
        if key == "tools":
            return load_blob(self.folder, dict.__getitem__(self, "tools_ref"))
        if not isinstance(ref, Mapping):
            raise KeyError(key)
        state = apply_shared(load_blob(self.folder, ref.get("base")), ref.get("patch") or [])
        if key == "state":
            return state
        if key == "next_state" and "patch" in self:
            return apply_shared(state, dict.__getitem__(self, "patch"))
        if key == "final_state" and "steps" in self:
            for step in dict.__getitem__(self, "steps"):
                state = apply_shared(state, step.get("patch") or [])
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
