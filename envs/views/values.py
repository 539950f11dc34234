"""The abstract values of the read analysis (state nodes, known values, containers) and the needs it reports."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Iterable


Path = tuple  # a full-state path: str keys for dicts, int indices for lists

#: Most candidate values kept for one known value before it widens to UNKNOWN.
MAX_KNOWN = 64
#: Deepest helper-call nesting analysed.
MAX_CALL_DEPTH = 6
#: Most statements interpreted for one call (the budget of the fixpoint).
MAX_STEPS = 20000
#: Most units of work for one call: a state path visited, held or written (a read of a loop variable over 100,000
#: records is 100,000 units), or 256 characters of candidate values compared. Spent: the view widens to the whole
#: state. It bounds time (about a microsecond a unit) and memory (what the analysis holds it has paid for) alike;
#: the largest real call measured needs far less (``docs/threat-model.md``).
MAX_WORK = 1_000_000
#: Wall-clock seconds one call's analysis may take (a backstop: the work budget ends it long before on this
#: machine); past it the view widens to the whole state, with a note saying so.
MAX_ANALYSIS_SECONDS = 30.0
#: Longest text, list or number (in characters, elements or digits) a pure fold may make or start from: ``s * 10**9``,
#: ``f"{x:>999999999}"`` or ``s + s`` repeated are not folded (their value is unknown instead).
MAX_FOLD_SIZE = 100_000


class _Unknown:
    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Any = _Unknown()


def _path_key(path: Path) -> tuple:
    return tuple((0, key, "") if isinstance(key, int) else (1, 0, str(key)) for key in path)


class PathSet(frozenset):
    """A frozenset of paths that iterates in one fixed order (list indices numerically, keys by text), so what
    the analysis derives from iterating it (known values, filter notes, rendered views) is the same in every
    process: a plain frozenset of strings iterates in hash order, which ``PYTHONHASHSEED`` changes."""

    def __iter__(self):  # type: ignore[override]
        ordered = self.__dict__.get("_ordered")
        if ordered is None:
            ordered = self.__dict__["_ordered"] = tuple(sorted(frozenset.__iter__(self), key=_path_key))
        return iter(ordered)

    def __or__(self, other: Any) -> "PathSet":  # type: ignore[override]
        return PathSet(frozenset.__or__(self, other))


@dataclass(frozen=True)
class Node:
    """The state value at one of ``paths`` (iterated in a fixed order)."""
    paths: frozenset

    def __post_init__(self) -> None:
        if not isinstance(self.paths, PathSet):
            object.__setattr__(self, "paths", PathSet(self.paths))


@dataclass(frozen=True)
class Known:
    """One of the concrete ``values`` (a tuple, deduplicated)."""
    values: tuple


@dataclass(frozen=True)
class Seq:
    """A sequence built by the code whose elements are ``elem``."""
    elem: Any


@dataclass(frozen=True)
class DictV:
    """A dict literal built by the code: ``items`` maps known keys to abstract values."""
    items: tuple


@dataclass(frozen=True)
class TupleV:
    """A tuple of abstract values (for unpacking)."""
    items: tuple


@dataclass(frozen=True)
class ItemsOf:
    """``node.items()`` (pairs of key and child)."""
    node: Node


@dataclass
class FilterNote:
    """A scan of ``collection`` kept only the records whose ``field`` compares equal to ``values``."""
    collection: Path
    field: tuple
    values: tuple
    casefold: bool
    matched: list

    def text(self) -> str:
        """The note as the view shows it."""
        target = _short(list(self.values)) if len(self.values) != 1 else _short(self.values[0])
        how = " (ignoring case and surrounding spaces)" if self.casefold else ""
        shown = ", ".join(_short(k) for k in self.matched) if self.matched else "none"
        return (f"{pointer(self.collection)}: records whose {'.'.join(map(str, self.field))} equals {target}{how}: "
                f"{shown}; no other record matches.")


@dataclass
class ReadNeeds:
    """What a call can read, as full-state paths."""
    full: set = field(default_factory=set)        # subtrees needed whole
    keys: set = field(default_factory=set)        # containers whose key set is needed
    absent: set = field(default_factory=set)      # (container path, key) pairs that do not exist
    filters: list = field(default_factory=list)   # FilterNote
    reach: set = field(default_factory=set)       # containers written to: present in the view, maybe empty
    scan_fields: set = field(default_factory=set)  # (collection, field) a scan tests on each record it visits
    sizes: set = field(default_factory=set)       # dicts whose number of entries is read (``len``), not their keys
    lists: set = field(default_factory=set)       # top-level lists of records only scanned (object models only):
    # shown in part (``partial_lists``)
    widened: list = field(default_factory=list)   # reasons the analysis had to widen
    whole_records: bool = False  # the code reaches the state through an object model (``self.db.orders``):
    # records are rebuilt whole from the dump, so every record shown is shown whole and every top-level key is there

    def add_filter(self, note: FilterNote) -> None:
        """Record ``note``, merging with an equal filter seen before."""
        for old in self.filters:
            if (old.collection, old.field, old.values, old.casefold) == (note.collection, note.field, note.values,
                                                                       note.casefold):
                old.matched = sorted(set(old.matched) | set(note.matched), key=str)
                return
        self.filters.append(note)


def pointer(path: Iterable[Any]) -> str:
    """The JSON pointer of a path (``/orders/#W1/status``; the root is ``/``)."""
    parts = [str(p).replace("~", "~0").replace("/", "~1") for p in path]
    return "/" + "/".join(parts) if parts else "/"


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= 120 else text[:117] + "..."


def _dedupe(values: Iterable[Any], most: int | None = None) -> tuple:
    """``values`` without repeats (compared as canonical JSON), in first-seen order; with ``most``, it stops once
    more than ``most`` distinct values are found. Each comparison is charged (``charge``) by its length."""
    seen: dict[Any, Any] = {}
    for v in values:
        if isinstance(v, (str, int, bool)) or v is None:  # scalars: typed keys, no text made (as JSON tells them
            key: Any = (type(v).__name__, v)               # apart: 1, 1.0 and true are three values)
        elif isinstance(v, float):
            key = ("float", repr(v))  # -0.0 and 0.0 apart, as their JSON texts are
            charge(1 + (len(v) >> 8 if isinstance(v, str) else 0))
        elif isinstance(v, float):
            charge(1)
        else:
            try:
                key = json.dumps(v, sort_keys=True, default=repr)
            except (TypeError, ValueError, RecursionError):
                key = f"<{type(v).__name__} {id(v)}>"  # not JSON (or too big to say): kept apart
            charge(1 + (len(key) >> 8))
        seen.setdefault(key, v)
        if most is not None and len(seen) > most:
            break
    return tuple(seen.values())


def known(*values: Any) -> Any:
    """A ``Known`` of ``values`` (UNKNOWN when there are too many)."""
    vals = _dedupe(values, MAX_KNOWN)
    return Known(vals) if len(vals) <= MAX_KNOWN else UNKNOWN


def _union(a: Any, b: Any) -> Any:
    if a is None:
        return b
    if b is None or a == b:
        return a
    if isinstance(a, Node) and isinstance(b, Node):
        charge(len(a.paths) + len(b.paths))
        return Node(a.paths | b.paths)
    if isinstance(a, Known) and isinstance(b, Known):
        return known(*a.values, *b.values)
    if isinstance(a, Seq) and isinstance(b, Seq):
        return Seq(_union(a.elem, b.elem))
    return UNKNOWN if not (isinstance(a, Node) or isinstance(b, Node)) else _Mixed.of(a, b)


class _Mixed:
    """A union that holds state nodes and something else: used values still mark the nodes."""

    @staticmethod
    def of(a: Any, b: Any) -> Any:
        nodes = [x for x in (a, b) if isinstance(x, Node)]
        charge(sum(len(n.paths) for n in nodes))
        return Node(frozenset().union(*(n.paths for n in nodes)))


class _Return(Exception):
    pass


class _Budget(BaseException):
    """The analysis budget (steps, work or time) is spent: a ``BaseException``, so that no ``except Exception``
    between the charge and ``ReadAnalyzer.analyse`` can swallow it."""

    def __init__(self, reason: str = "") -> None:
        super().__init__(reason)
        self.reason = reason


class Work:
    """The work budget of one analysis (``MAX_WORK`` units, ``MAX_ANALYSIS_SECONDS``): ``charge`` raises
    ``_Budget`` once either is spent. The clock is read every 4,096 units."""

    def __init__(self, limit: int | None = None, seconds: float | None = None) -> None:
        self.limit = MAX_WORK if limit is None else limit
        self.seconds = MAX_ANALYSIS_SECONDS if seconds is None else seconds
        self.spent = 0
        self._next_clock = 4096
        self.deadline = time.monotonic() + self.seconds

    def charge(self, units: int) -> None:
        """Count ``units`` of work; ``_Budget`` when the work or the time is spent."""
        self.spent += units
        if self.spent > self.limit:
            raise _Budget(f"analysis work budget ({self.limit:,} units: state paths visited or held) spent: "
                          "whole state")
        if self.spent >= self._next_clock:
            self._next_clock = self.spent + 4096
            self.check_clock()

    def check_clock(self) -> None:
        """``_Budget`` when the analysis has run past ``seconds``."""
        if time.monotonic() > self.deadline:
            raise _Budget(f"analysis time limit ({self.seconds:g} s) spent: whole state")


_CURRENT = threading.local()  # the Work of the analysis running in this thread (``charge`` outside one: free)


def current_work() -> Work | None:
    """The work budget of the analysis running in this thread, if any."""
    return getattr(_CURRENT, "work", None)


def set_work(work: Work | None) -> Work | None:
    """Make ``work`` this thread's budget; returns the one it replaces (restore it when done)."""
    previous = current_work()
    _CURRENT.work = work
    return previous


def charge(units: int) -> None:
    """Charge this thread's analysis ``units`` of work (nothing outside an analysis)."""
    work = getattr(_CURRENT, "work", None)
    if work is not None:
        work.charge(units)


class _Raised(Exception):
    """A ``raise`` every path reaching it takes (no return seen, every enclosing test known true): the rest of
    the call is never run, so it reads nothing more."""


def truth(value: Any) -> bool | None:
    """Whether an abstract test is surely true (``True``), surely false (``False``) or unknown (``None``)."""
    if isinstance(value, Known) and value.values:
        verdicts = set()
        for v in value.values:
            try:
                verdicts.add(bool(v))
            except Exception:  # noqa: BLE001 - a value without a truth value: unknown
                return None
        return verdicts.pop() if len(verdicts) == 1 else None
    return None
