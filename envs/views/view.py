"""The ``View`` type: a partial state with full-state paths, what it leaves out, and its rendering."""

from __future__ import annotations

import copy
import functools
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from envsim.envs.views.analysis import FilterNote, Path, ReadNeeds, analyse_reads, pointer
from envsim.envs.views.partial_lists import is_record_list, list_note

#: A key-set note lists at most this many keys (more: the key set is not answered).
MAX_LISTED_KEYS = 200
#: Omitted record fields are named when there are at most this many.
MAX_NAMED_FIELDS = 12
#: Widenings construction may choose when a view fails verification, narrowest first (``widen_needs``).
WIDENINGS = ("records", "collections", "state")
_WIDENING_TEXT = {"records": "whole records (every record it touches shown whole)",
                  "collections": "whole top-level collections (every collection it touches shown whole)",
                  "state": "the whole state"}


@dataclass
class View:
    """A partial state shown instead of the whole state (see the package docstring for the contract)."""
    state: Any                                   # the partial state; every path in it is a full-state path
    full: set = field(default_factory=set)       # paths shown as whole subtrees
    shown: set = field(default_factory=set)      # every path present in ``state`` (containers and leaves)
    absent: set = field(default_factory=set)     # (container path, key): the key is known not to exist
    key_lists: dict = field(default_factory=dict)  # container path -> its complete key list (a note)
    filters: list = field(default_factory=list)  # FilterNote
    omissions: list = field(default_factory=list)  # text lines: what the view leaves out
    widened: list = field(default_factory=list)  # where the analysis had to widen
    complete: set = field(default_factory=set)   # partly shown containers whose every key is shown
    widening: str | None = None  # the widening construction's verification chose (one of ``WIDENINGS``)
    sizes: dict = field(default_factory=dict)  # partly shown dict -> its number of entries, which the call reads
    # (``len``); the omission notes give it (``N of M records not shown``)
    lists: dict = field(default_factory=dict)  # top-level list shown in part (an object keyed by index) -> its length

    def notes(self) -> list[str]:
        """Every note of the view, in the order the prompt shows them (widenings first)."""
        lines = [f"- the analysis widened this view: {reason}" for reason in self.widened]
        if self.widening:
            lines.append(f"- verification widened this view to {_WIDENING_TEXT[self.widening]}: the call run on the "
                         f"narrower view did not give the same result as on the full state")
        lines += [f"- {line}" for line in self.omissions]
        lines += [f"- {list_note(p, length, len(self.state.get(p[0]) or {}))}"  # object models only (partial_lists)
                  for p, length in self.lists.items()]
        lines += [f"- {pointer(p)} has no key {json.dumps(k, ensure_ascii=False)}"
                  for p, k in sorted(self.absent, key=lambda pk: (pointer(pk[0]), str(pk[1])))]
        lines += [f"- {pointer(p)} has exactly the keys {json.dumps(keys, ensure_ascii=False)}"
                  for p, keys in sorted(self.key_lists.items(), key=lambda kv: pointer(kv[0]))]
        lines += [f"- {note.text()}" for note in self.filters]
        lines += [f"- {pointer(p)} has {count} entries in all (the call counts them)"
                  for p, count in self.sizes.items()]  # object models only: built-in views have no sizes
        return lines

    def render(self, compact: bool = True) -> str:
        """The view as prompt text: the partial state as JSON, then its notes."""
        sep = (",", ":") if compact else (", ", ": ")
        text = json.dumps(self.state, ensure_ascii=False, sort_keys=True, separators=sep)
        notes = self.notes()
        if notes:
            text += "\nWhat the view leaves out or answers:\n" + "\n".join(notes)
        return text

    # -- coverage (construction-time measurement) ----------------------------------------------------
    def _inside_full(self, path: Path) -> bool:
        return any(path[:i] in self.full for i in range(len(path) + 1))

    def _reached(self) -> set:
        """Containers the view answers questions about, and their ancestors (reading them is traversal)."""
        roots = [p for p, _ in self.absent] + list(self.key_lists) + [n.collection for n in self.filters]
        return {p[:i] for p in roots for i in range(len(p) + 1)}

    def _filtered(self, path: Path) -> bool:
        for note in self.filters:
            n = len(note.collection)
            if path[:n] == note.collection and len(path) > n:
                rest = path[n + 1:]
                if rest == note.field[:len(rest)]:
                    return True
        return False

    def covers(self, kind: str, path: Path, key: Any = None) -> bool:
        """Whether the view answers one traced read: ``get`` (a value at ``path``), ``absent``
        (``key`` missing from the container at ``path``) or ``keys`` (the key set of ``path``)."""
        if self._inside_full(path):
            return True
        if kind == "get":
            return path in self.shown or path in self._reached() or self._filtered(path)
        if kind == "absent":
            return (path, key) in self.absent or self._filtered(path + (key,))
        if kind == "keys":
            return (path in self.key_lists or path in self.complete or any(note.collection == path for note in self.filters)
                    or self._filtered(path))
        return False


def _at(state: Any, path: Path) -> Any:
    value = state
    for key in path:
        value = value[key]
    return value


def _exists(state: Any, path: Path) -> bool:
    try:
        _at(state, path)
        return True
    except (KeyError, IndexError, TypeError):
        return False


def _whole_lists(state: Any, paths: set, partial: frozenset = frozenset()) -> set:
    """``paths`` with every path that passes through a list cut at that list (lists are shown whole), except the
    records of the top-level lists in ``partial`` (shown in part)."""
    out = set()
    for p in paths:
        value, cut = state, p
        for i, key in enumerate(p):
            if isinstance(value, list) and not (i == 1 and p[:1] in partial):
                cut = p[:i]
                break
            try:
                value = value[key]
            except (KeyError, IndexError, TypeError):
                break
        out.add(cut)
    return out


def _minimal(paths: set) -> set:
    """Drop paths that lie inside another path of the set."""
    ordered = sorted(paths, key=len)
    kept: set = set()
    for p in ordered:
        if not any(p[:i] in kept for i in range(len(p) + 1)):
            kept.add(p)
    return kept


def _scan_closure(state: Any, needs: ReadNeeds, wanted: set) -> set:
    """The fields a scan tests, on every record of the scanned collection that the view shows: the tool run
    on the view visits those records and tests them as on the full state."""
    extra: set = set()
    present = wanted | needs.reach
    lengths = {len(collection) for collection, _ in needs.scan_fields}
    under: dict[Path, set] = {}  # collection -> keys of it that present paths pass through (one pass, not one a scan)
    for p in present:
        for n in lengths:
            if len(p) > n:
                under.setdefault(p[:n], set()).add(p[n])
    for collection, fields in needs.scan_fields:
        for key in under.get(collection, ()):
            if _exists(state, collection + (key,) + fields):
                extra.add(collection + (key,) + fields)
    return extra


def _reached_containers(state: Any, needs: ReadNeeds, full: set) -> set:
    """Dict containers the needs reach (not inside a full subtree) whose every ancestor is a dict."""
    roots = {p for p, _ in needs.absent} | set(needs.keys) | {n.collection for n in needs.filters} | needs.reach
    out = set()
    for p in roots:
        if not p or any(p[:i] in full for i in range(len(p) + 1)):
            continue
        value, through_dicts = state, True  # one walk down the path: it exists and every container on it is a dict
        for key in p:
            if not isinstance(value, dict) or key not in value:
                through_dicts = False
                break
            value = value[key]
        if through_dicts and isinstance(value, dict):
            out.add(p)
    return out


def _in_state_order(partial: Any, state: Any, full: set, path: Path = ()) -> Any:
    """``partial`` with the keys of its partly shown dicts in the full state's order (code that dumps or
    iterates a record sees the same order as on the full state)."""
    if path in full or not isinstance(partial, dict) or not isinstance(state, dict):
        return partial
    return {k: _in_state_order(partial[k], state[k], full, path + (k,)) for k in state if k in partial}


@functools.lru_cache(maxsize=65536)
def key_shape(key: Any) -> str:
    """A key's shape: digits as 9, words as ``<word>`` (``#W2378156`` -> ``#W9999999``)."""
    return re.sub(r"[A-Za-z]{3,}", "<word>", re.sub(r"\d", "9", str(key)))


def _describe_omitted(path: Path, container: dict, shown_keys: set) -> str:
    missing = [k for k in container if k not in shown_keys]
    where = pointer(path)
    if all(isinstance(container[k], dict) for k in container) and len(container) > MAX_NAMED_FIELDS:
        shapes = Counter(key_shape(k) for k in missing).most_common(2)
        examples = ", ".join(json.dumps(k, ensure_ascii=False) for k in missing[:3])
        look = " or ".join(s for s, _ in shapes)
        return (f"{where}: {len(missing)} of {len(container)} records not shown; their keys look like {look} "
                f"(e.g. {examples})")
    if len(missing) <= MAX_NAMED_FIELDS:
        return f"{where}: not shown: {', '.join(json.dumps(k, ensure_ascii=False) for k in missing)}"
    return f"{where}: {len(missing)} of {len(container)} keys not shown"


def _record(state: Any, path: Path) -> Path:
    """``path`` cut at its record: ``(collection, key)`` under a top-level dict collection (or list of records)."""
    return path[:2] if len(path) > 2 and (isinstance(state.get(path[0]), dict) or is_record_list(
        state.get(path[0]))) else path


def partial_lists(state: Any, needs: ReadNeeds) -> frozenset:
    """Top-level lists of records an object model's call does not need whole: shown in part (``partial_lists``)."""
    if not needs.whole_records or not isinstance(state, dict) or () in needs.full:
        return frozenset()
    return frozenset((k,) for k, v in state.items() if (k,) not in needs.full and is_record_list(v))


def _touched(needs: ReadNeeds) -> set:
    """Every path the needs name or reach (shown subtrees, containers, membership and scan collections)."""
    return (set(needs.full) | set(needs.reach) | set(needs.keys) | {p for p, _ in needs.absent}
            | {n.collection for n in needs.filters} | {c for c, _ in needs.scan_fields} | set(needs.sizes))


def _records_whole(state: Any, needs: ReadNeeds) -> ReadNeeds:
    """``needs`` with every record it reaches needed whole and every top-level key present (an object model is
    rebuilt from the whole dump: a partial record or a missing collection would not load)."""
    if not isinstance(state, dict):
        return needs
    out = copy.copy(needs)
    out.full = {_record(state, p) for p in needs.full}
    out.full |= {_record(state, p) for p in needs.reach if len(p) >= 2}
    out.full |= {n.collection + (k,) for n in needs.filters for k in n.matched if len(n.collection) == 1}
    out.reach = {p for p in needs.reach if len(p) < 2} | {(k,) for k, v in state.items() if isinstance(v, dict)}
    out.full |= {(k,) for k, v in state.items() if not isinstance(v, dict) and not (
        needs.whole_records and is_record_list(v))}  # an object model's lists of records: shown in part
    out.scan_fields = {(c, f) for c, f in needs.scan_fields if len(c) != 1}  # matched records are whole
    return out


def widen_needs(state: Any, needs: ReadNeeds, level: str) -> ReadNeeds:
    """``needs`` widened to ``level`` (one of ``WIDENINGS``): every record it touches whole, every top-level
    collection it touches whole, or the whole state."""
    if level not in WIDENINGS:
        raise ValueError(f"unknown view widening {level!r}; choose from {', '.join(WIDENINGS)}")
    out = copy.copy(needs)
    out.widened = list(needs.widened)
    if level == "state" or not isinstance(state, dict):
        out.full = {()}
        return out
    if level == "records":
        widened = _records_whole(state, needs)
        widened.widened = out.widened
        widened.full = widened.full | {_record(state, p) for p in _touched(needs) if len(p) >= 2}
        return widened
    out.full = {p[:1] for p in _touched(needs) if p} | {(k,) for k, v in state.items() if not isinstance(v, dict)}
    out.reach = set(needs.reach) | {(k,) for k, v in state.items() if isinstance(v, dict)}  # present, maybe empty
    return out


def build_view(state: Any, needs: ReadNeeds) -> View:
    """The :class:`View` of ``state`` that holds what ``needs`` names."""
    if needs.whole_records:
        needs = _records_whole(state, needs)
    wanted = {p for p in needs.full if _exists(state, p)}
    wanted |= _scan_closure(state, needs, wanted)
    in_part = partial_lists(state, needs)
    for p in needs.keys:  # a container whose key set is read: lists and small scalar dicts whole
        if _exists(state, p) and isinstance(_at(state, p), list) and p not in in_part:
            wanted.add(p)
    full = _minimal(_whole_lists(state, wanted, in_part))
    in_part = frozenset(p for p in in_part if p not in full)
    partial: Any = {} if isinstance(state, dict) else None
    shown: set = set()
    if () in full:
        partial = copy.deepcopy(state)
    else:
        for p in sorted(full, key=lambda q: [str(x) for x in q]):
            node = partial
            for i, key in enumerate(p):
                shown.add(p[:i])
                if i == len(p) - 1:
                    node[key] = copy.deepcopy(_at(state, p))
                else:
                    node = node.setdefault(key, {})
            shown.add(p)
        # containers the code reaches (membership, key sets, scans) are present, possibly empty, so that the
        # tool runs on the view alone as on the full state
        for p in _reached_containers(state, needs, full):
            node = partial
            for i, key in enumerate(p):
                shown.add(p[:i + 1])
                node = node.setdefault(key, {})
        for p in in_part:  # present, maybe with no record shown: the object model needs the key
            partial.setdefault(p[0], {})
            shown.add(p)
        partial = _in_state_order(partial, state, full)
        for p in in_part:  # the shown records in index order
            partial[p[0]] = {i: partial[p[0]][i] for i in sorted(partial[p[0]])}
    view = View(state=partial, full=full, shown=shown, widened=list(needs.widened))
    view.lists = {p: len(state[p[0]]) for p in sorted(in_part) if len(partial[p[0]]) < len(state[p[0]])}
    for p in in_part:
        if p not in view.lists:  # every record shown: the list itself
            partial[p[0]] = copy.deepcopy(state[p[0]])
            view.full.add(p)
    # what is left out: every partly shown dict (sibling records missing the same fields share a line)
    grouped: dict[tuple, list] = {}
    for p in sorted(shown, key=lambda q: (len(q), [str(x) for x in q])):
        if p in full or any(p[:i] in full for i in range(len(p))):
            continue
        container = _at(state, p)
        if not isinstance(container, dict):
            continue
        node = _at(partial, p)
        if len(node) < len(container):
            line = _describe_omitted(p, container, set(node))
            grouped.setdefault((p[:-1], line[len(pointer(p)):]), []).append(p)
    for (parent, rest), members in grouped.items():
        if len(members) == 1:
            view.omissions.append(pointer(members[0]) + rest)
        else:
            view.omissions.append(f"{pointer(parent)}/<each of {len(members)} shown records>{rest}")
    filtered = {note.collection for note in needs.filters}
    for p in sorted(needs.keys, key=lambda q: [str(x) for x in q]):
        if p in filtered or view._inside_full(p) or not _exists(state, p):
            continue
        container = _at(state, p)
        if isinstance(container, dict):
            node = _at(partial, p) if p in shown else {}
            if len(node) == len(container):
                view.complete.add(p)  # every key is shown (a projection): the key set is answered
                continue
            if len(container) <= MAX_LISTED_KEYS:
                view.key_lists[p] = list(container)
    view.absent = {(p, k) for p, k in needs.absent if not view._inside_full(p)}
    view.sizes = {p: len(_at(state, p)) for p in sorted(needs.sizes, key=lambda q: [str(x) for x in q])
                  if p in shown and not view._inside_full(p) and isinstance(_at(state, p), dict)
                  and len(_at(partial, p)) < len(_at(state, p))}
    view.filters = [FilterNote(n.collection, n.field, n.values, n.casefold, list(n.matched)) for n in needs.filters
                    if not view._inside_full(n.collection)]
    return view


#: The last line of your own environment's shown code (``envs.shown.code.ENTRY_LINE``).
_ENTRY = re.compile(r"^# The call runs \w+\.\w+ on an object whose public attributes are the state\.$", re.MULTILINE)


def _top_level_present(state: dict[str, Any], needs: ReadNeeds) -> ReadNeeds:
    """``needs`` with every top-level dict of the state present (maybe empty) and every top-level scalar shown: the
    code of one's own environment runs on an object whose public attributes are the state, and a wrapper may hand
    every attribute to a toolkit (``LedgerToolkit(self.accounts, self.rates, self.transfers)``) through code the
    analysis does not follow (a tool looked up by name). Lists keep the analysis's reading."""
    out = copy.copy(needs)
    out.reach = set(needs.reach) | {(k,) for k, v in state.items() if isinstance(v, dict)}
    out.full = set(needs.full) | {(k,) for k, v in state.items() if not isinstance(v, (dict, list))}
    return out


def rows_view(state: Any, traced: dict[str, Any]) -> View:
    """The view of the table rows a call's SQL reads, traced at the database at construction (``sql_reads``):
    ``traced["tables"]`` names, per top-level table, the rows shown (list indices of a table stored as a list,
    shown in part as ``partial_lists`` describes; keys of one stored by primary key); a table in
    ``traced["counted"]`` (the call counts its rows) says how many rows it has. Every other top-level value is
    shown whole."""
    handles = traced.get("tables") or {}
    partial: dict[str, Any] = {}
    full: set = set()
    omissions = []
    for key, value in state.items():
        wanted = handles.get(key)
        if wanted is not None and isinstance(value, list) and len(wanted) < len(value):
            partial[key] = {i: copy.deepcopy(value[i]) for i in wanted}
            full |= {(key, i) for i in wanted}
        elif wanted is not None and isinstance(value, dict) and len(wanted) < len(value):
            chosen = set(wanted)
            partial[key] = {k: copy.deepcopy(v) for k, v in value.items() if k in chosen}
            full |= {(key, k) for k in partial[key]}
            omissions.append(f"{pointer((key,))}: {len(value) - len(partial[key])} of {len(value)} rows not shown")
        else:
            partial[key] = copy.deepcopy(value)
            full.add((key,))
    view = View(state=partial, full=full, shown=full | {(k,) for k in partial})
    view.lists = {(k,): len(state[k]) for k in partial if (k,) not in full and isinstance(state[k], list)}
    view.omissions = ["rows traced at the database: each table shows the rows the call's SQL reads (with the rows "
                      "they reference and the last row of a table it inserts into)", *omissions]
    view.sizes = {(k,): len(state[k]) for k in traced.get("counted") or () if k in partial and (k,) not in full
                  and isinstance(state[k], dict)}
    return view


def compute_view(state: Any, tool_name: str, arguments: dict[str, Any], tool_source: str,
                 schema: dict[str, Any] | None = None, widening: str | None = None,
                 rows: dict[str, Any] | None = None) -> View:
    """The view of ``state`` for the call ``tool_name(**arguments)``, from the tool's code and schema only.

    Never executes the call and never looks at a label: the tool's source is analysed statically and the
    state is only read to follow references and filter scans. ``schema`` (the OpenAI function schema) fills
    in arguments the call leaves out with their schema defaults. ``widening`` (one of ``WIDENINGS``, stored on
    a record as ``view_widening`` by construction's verification) widens the analysed view so that a record
    renders exactly the view construction verified. ``rows`` (stored as ``view.rows`` by the verification of a call
    whose SQL was traced, ``sql_reads``) gives the view of those table rows instead of the analysed one.
    """
    if rows is not None and not widening and isinstance(state, dict):
        return rows_view(state, rows)
    arguments = dict(arguments or {})
    params = ((schema or {}).get("function", schema or {}) or {}).get("parameters", {}) or {}
    for name, spec in (params.get("properties") or {}).items():
        if name not in arguments and isinstance(spec, dict) and "default" in spec:
            arguments[name] = spec["default"]
    needs = analyse_reads(state, tool_name, arguments, tool_source)
    if widening:  # a widening keeps every top-level key present itself
        needs = widen_needs(state, needs, widening)
    elif isinstance(state, dict) and _ENTRY.search(tool_source or ""):
        needs = _top_level_present(state, needs)
    view = build_view(state, needs)
    view.widening = widening or None
    return view
