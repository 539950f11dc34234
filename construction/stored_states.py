"""Large states stored once: records of a big-state environment refer to content-addressed blobs.

Every record carries its ``state`` and ``next_state``; for a production database (1–3 MB) that is
two copies per record, so 1,000 records would take gigabytes. ``store_large_states`` rewrites the
records of every environment whose state passes ``STORE_MIN_CHARS`` (or, for an environment of one's own, whose
records would weigh ``POOL_MIN_CHARS`` inline) into the form the τ track uses
(``benchmark.state_store``): ``state_ref = {"base": <blob>, "patch": <ops from the base to the state>}``
and ``tools_ref`` instead of ``state`` / ``next_state`` / ``tools``. A base is a whole state written once
(its content hash names it); each record's state is the base closest to it plus a small patch
(``state_patch``), a new base only when no stored one is close. Records of small-state environments are returned
unchanged; the built-ins and the namespaced tracks are decided by the state length alone, as before, so their
shipped files stay byte-identical.

Readers resolve the refs on read (``state_store.resolve``; ``benchmark.load`` and ``envsim eval`` do it
for ``<stem>_states`` beside the file); ``envsim export`` writes whole states again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Sequence

from envsim.delta import pointer

#: A state whose JSON text is at least this long is stored once (1–3 MB databases); the largest built-in
#: states (long-state tier: about 105,000 characters) stay inline, so shipped files are unchanged.
STORE_MIN_CHARS = 262_144
#: An environment of one's own (``pool_rule_applies``) also has its states stored once when its records would
#: weigh at least this much inline (state and next state of each: ``2 x state length x records``) and its state
#: is at least ``POOL_STATE_MIN_CHARS`` long: 60 records of a 160,000-character state would weigh 19 MB inline.
POOL_MIN_CHARS = 1_048_576
#: Below this a state stays inline whatever the pool weighs (a blob and patches would save little and every
#: record could no longer be read alone).
POOL_STATE_MIN_CHARS = 16_384
#: A record's state gets its own base when its patch from every stored base is longer than this share of
#: the state's text (an episode started from another initial state).
NEW_BASE_SHARE = 0.125
#: Bases compared per record (the most recent ones of its environment).
BASES_COMPARED = 8


def state_patch(base: Any, state: Any) -> list[dict[str, Any]]:
    """An RFC 6902 patch taking ``base`` to ``state``: dictionaries are compared key by key (so an untouched
    record costs one equality test), lists of equal length item by item; anything else that differs is
    replaced whole. ``jsonpatch.apply_patch(base, patch) == state`` exactly."""
    ops: list[dict[str, Any]] = []
    _diff(base, state, [], ops)
    return ops


def _diff(old: Any, new: Any, parts: list[Any], ops: list[dict[str, Any]]) -> None:
    if old is new or (type(old) is type(new) and old == new):
        return
    if isinstance(old, dict) and isinstance(new, dict):
        for key in old:
            if key not in new:
                ops.append({"op": "remove", "path": pointer([*parts, key])})
        for key, value in new.items():
            if key in old:
                if old[key] is not value:  # states of one episode share their unchanged records
                    _diff(old[key], value, [*parts, key], ops)
            else:
                ops.append({"op": "add", "path": pointer([*parts, key]), "value": value})
    elif isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for index, (before, after) in enumerate(zip(old, new)):
            _diff(before, after, [*parts, index], ops)
    else:
        ops.append({"op": "replace", "path": pointer(parts), "value": new})


def state_chars(state: Any) -> int:
    """Length of a state's JSON text (the measure ``STORE_MIN_CHARS`` applies to)."""
    return len(json.dumps(state, ensure_ascii=False, separators=(",", ":")))


class _EnvBases:
    """The stored bases of one environment: whole states written once, with their refs."""

    def __init__(self, folder: Path, size: int) -> None:
        self.folder, self.size = folder, size
        self.bases: list[tuple[Any, str]] = []

    def ref_for(self, state: Any) -> dict[str, Any]:
        """``{"base", "patch"}`` for ``state``: the closest stored base, or ``state`` itself as a new base."""
        from envsim.benchmark.state_store import write_blob

        best: tuple[int, str, list[dict[str, Any]]] | None = None
        for base, ref in self.bases[-BASES_COMPARED:]:
            patch = state_patch(base, state)
            length = len(json.dumps(patch, ensure_ascii=False))
            if best is None or length < best[0]:
                best = (length, ref, patch)
        if best is not None and best[0] <= self.size * NEW_BASE_SHARE:
            return {"base": best[1], "patch": best[2]}
        ref = write_blob(state, self.folder)
        self.bases.append((state, ref))
        return {"base": ref, "patch": []}


def pool_rule_applies(env_id: str) -> bool:
    """Whether the pool-weight rule (``POOL_MIN_CHARS``) decides for ``env_id``: every environment but the built-in
    library's and the namespaced tracks' (``bfcl/``, ``tau/``), whose shipped files keep the per-state rule alone
    and so stay byte-identical."""
    if "/" in env_id:
        return False
    if ":" in env_id:  # module:Class, the user's own
        return True
    from envsim.envs.registry import registry

    entry = registry().get(env_id)
    return not (entry is not None and entry.builtin)


def stored_sizes(records: Sequence[dict[str, Any]], min_chars: int = STORE_MIN_CHARS,
                 pool_min_chars: int = POOL_MIN_CHARS) -> dict[str, int]:
    """The environments of ``records`` whose states are stored once, with their first record's state length: a
    state of ``min_chars`` or more, or (``pool_rule_applies``) one of ``POOL_STATE_MIN_CHARS`` or more whose
    records would weigh ``pool_min_chars`` or more inline."""
    from envsim.benchmark.state_store import has_refs

    first: dict[str, int] = {}
    counts: dict[str, int] = {}
    for record in records:
        if has_refs(record) or not isinstance(record.get("state"), dict) or "next_state" not in record:
            continue
        env = str(record.get("env"))
        counts[env] = counts.get(env, 0) + 1
        if env not in first:
            first[env] = state_chars(record["state"])
    return {env: size for env, size in first.items()
            if size >= min_chars or (size >= POOL_STATE_MIN_CHARS and 2 * size * counts[env] >= pool_min_chars
                                     and pool_rule_applies(env))}


def store_large_states(records: Sequence[dict[str, Any]], folder: Path, min_chars: int = STORE_MIN_CHARS,
                       pool_min_chars: int = POOL_MIN_CHARS) -> list[dict[str, Any]]:
    """``records`` with the states of the environments ``stored_sizes`` names stored once under ``folder`` (see
    the module docstring); records that already refer to blobs, episodes and other records pass unchanged.
    The decision is per environment."""
    from envsim.benchmark.state_store import has_refs, write_blob

    large = {env: _EnvBases(folder, size) for env, size in stored_sizes(records, min_chars, pool_min_chars).items()}
    out: list[dict[str, Any]] = []
    for record in records:
        if has_refs(record) or not isinstance(record.get("state"), dict) or "next_state" not in record:
            out.append(record)
            continue
        bases = large.get(str(record.get("env")))
        if bases is None:
            out.append(record)
            continue
        row = {k: v for k, v in record.items() if k not in ("state", "next_state", "tools")}
        row["state_ref"] = bases.ref_for(record["state"])
        if "tools" in record:
            row["tools_ref"] = write_blob(record["tools"], folder)
        out.append(row)
    return out


def has_large_state(records: Iterable[dict[str, Any]], min_chars: int = STORE_MIN_CHARS) -> bool:
    """Whether some environment of ``records`` has states of at least ``min_chars`` (its first record's)."""
    seen: set[str] = set()
    for record in records:
        env = str(record.get("env"))
        if env in seen or not isinstance(record.get("state"), dict):
            continue
        seen.add(env)
        if state_chars(record["state"]) >= min_chars:
            return True
    return False


def stores_states(records: Iterable[dict[str, Any]]) -> bool:
    """Whether any of ``records`` refers to stored blobs."""
    from envsim.benchmark.state_store import has_refs

    return any(has_refs(r) for r in records)


def materialise(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Self-contained records: every referenced field filled in and the references dropped (for exports in
    other layouts)."""
    from envsim.benchmark.state_store import StoredRecord

    return [{k: v for k, v in r.materialised().items() if k not in ("state_ref", "tools_ref")}
            if isinstance(r, StoredRecord) else r for r in records]


def copy_blobs(records: Sequence[dict[str, Any]], out: Path) -> int:
    """Copy the blobs that resolved ``records`` refer to into the folder a reader of ``out`` looks in
    (``state_store.state_folder(out)``); returns how many were copied."""
    import shutil

    from envsim.benchmark.state_store import StoredRecord, blob_name, iter_refs, state_folder

    target = state_folder(out)
    copied = 0
    for record in records:
        if not isinstance(record, StoredRecord):
            continue
        for ref in iter_refs([record]):
            name = blob_name(ref.split(":", 1)[1])
            source, dest = Path(record.folder) / name, target / name
            if source != dest and not dest.exists():
                target.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, dest)
                copied += 1
    return copied
