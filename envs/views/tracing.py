"""Read tracing, for measuring views at construction time only (never used to build a view).

``traced(state)`` deep-wraps a JSON state in dict/list subclasses that log every read as
``(kind, path, key)``: ``get`` (a value at ``path`` was read), ``absent`` (``key`` was looked up in the
container at ``path`` and is missing) and ``keys`` (the key set or length of ``path`` was read); writes
are logged as ``set`` so that reading back what the call wrote is not counted as a read of the state.
Writes keep working (new values are wrapped too), so a traced state can be carried from call to call.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

Read = tuple  # (kind, path, key)


class ReadLog:
    """Where the proxies of one traced state write their reads (``active`` switches logging)."""

    def __init__(self) -> None:
        self.reads: list[Read] = []
        self.active = False

    def add(self, kind: str, path: tuple, key: Any = None) -> None:
        """Log one read while active."""
        if self.active:
            self.reads.append((kind, path, key))

    def take(self) -> list[Read]:
        """The reads logged so far (the log is emptied)."""
        reads, self.reads = self.reads, []
        return reads


def _wrap(value: Any, path: tuple, log: ReadLog) -> Any:
    if isinstance(value, (TracedDict, TracedList)):
        value = unwrap(value)
    if isinstance(value, dict):
        return TracedDict({k: _wrap(v, path + (k,), log) for k, v in value.items()}, path, log)
    if isinstance(value, list):
        return TracedList([_wrap(v, path + (i,), log) for i, v in enumerate(value)], path, log)
    return value


class TracedDict(dict):
    """A dict that logs reads of its keys, values and key set."""

    def __init__(self, data: dict, path: tuple, log: ReadLog) -> None:
        super().__init__(data)
        self._path, self._log = path, log

    def __getitem__(self, key: Any) -> Any:
        if dict.__contains__(self, key):
            self._log.add("get", self._path + (key,))
        else:
            self._log.add("absent", self._path, key)
        return dict.__getitem__(self, key)

    def get(self, key: Any, default: Any = None) -> Any:
        """``dict.get``, logged."""
        return self[key] if dict.__contains__(self, key) else (self._log.add("absent", self._path, key) or default)

    def __contains__(self, key: Any) -> bool:
        found = dict.__contains__(self, key)
        self._log.add("get" if found else "absent", self._path + (key,) if found else self._path,
                      None if found else key)
        return found

    def _all(self) -> None:
        self._log.add("keys", self._path)

    def keys(self) -> Any:
        """``dict.keys``, logged as a key-set read."""
        self._all()
        return dict.keys(self)

    def __iter__(self) -> Iterator[Any]:
        self._all()
        return dict.__iter__(self)

    def __len__(self) -> int:
        self._all()
        return dict.__len__(self)

    def values(self) -> Any:
        """``dict.values``, logged as reads of every value."""
        self._all()
        for k in dict.keys(self):
            self._log.add("get", self._path + (k,))
        return dict.values(self)

    def items(self) -> Any:
        """``dict.items``, logged as reads of every value."""
        self._all()
        for k in dict.keys(self):
            self._log.add("get", self._path + (k,))
        return dict.items(self)

    def __setitem__(self, key: Any, value: Any) -> None:
        self._log.add("set", self._path + (key,))
        dict.__setitem__(self, key, _wrap(value, self._path + (key,), self._log))

    def setdefault(self, key: Any, default: Any = None) -> Any:
        """``dict.setdefault``, logged and wrapping the inserted value."""
        if key not in self:
            self[key] = default
        return dict.__getitem__(self, key)

    def update(self, *args: Any, **kwargs: Any) -> None:
        """``dict.update`` wrapping the new values."""
        for k, v in dict(*args, **kwargs).items():
            self[k] = v

    def __deepcopy__(self, memo: dict) -> dict:
        self._all()
        for k in dict.keys(self):
            self._log.add("get", self._path + (k,))
        return unwrap(self)


class TracedList(list):
    """A list that logs reads (lists are shown whole in views, so any read is a read of the list)."""

    def __init__(self, data: list, path: tuple, log: ReadLog) -> None:
        super().__init__(data)
        self._path, self._log = path, log

    def _read(self) -> None:
        self._log.add("get", self._path)

    def __getitem__(self, index: Any) -> Any:
        self._read()
        return list.__getitem__(self, index)

    def __iter__(self) -> Iterator[Any]:
        self._read()
        return list.__iter__(self)

    def __len__(self) -> int:
        self._read()
        return list.__len__(self)

    def __contains__(self, item: Any) -> bool:
        self._read()
        return list.__contains__(self, item)

    def count(self, item: Any) -> int:
        """``list.count``, logged."""
        self._read()
        return list.count(self, item)

    def index(self, *args: Any) -> int:
        """``list.index``, logged."""
        self._read()
        return list.index(self, *args)

    def append(self, value: Any) -> None:
        """``list.append`` wrapping the new value (not a read)."""
        self._log.add("set", self._path + (list.__len__(self),))
        list.append(self, _wrap(value, self._path + (list.__len__(self),), self._log))

    def extend(self, values: Any) -> None:
        """``list.extend`` wrapping the new values (not a read)."""
        for v in list(values):
            self.append(v)

    def __deepcopy__(self, memo: dict) -> list:
        self._read()
        return unwrap(self)


def unwrap(value: Any) -> Any:
    """A plain JSON copy of a (possibly traced) value; logs nothing."""
    if isinstance(value, dict):
        return {k: unwrap(v) for k, v in dict.items(value)}
    if isinstance(value, list):
        return [unwrap(v) for v in list.__iter__(value)]
    return value


def traced(state: Any) -> tuple[Any, ReadLog]:
    """``state`` wrapped in recording proxies, and the log they write to (inactive until switched on)."""
    log = ReadLog()
    return _wrap(state, (), log), log


def trace_call(state: Any, log: ReadLog, call: Callable[[Any], Any]) -> tuple[Any, list[Read]]:
    """Run ``call(state)`` on a traced ``state`` and return its result and the reads it made of the state
    (reading back a value the call itself wrote before is not a read of the state)."""
    log.take()
    log.active = True
    try:
        result = call(state)
    finally:
        log.active = False
    return result, state_reads(log.take())


def state_reads(events: list[Read]) -> list[Read]:
    """The reads among logged ``events``, without those at or under a path written earlier in the call."""
    written: set = set()
    reads = []
    for kind, path, key in events:
        if kind == "set":
            written.add(path)
        elif not any(path[:i] in written for i in range(1, len(path) + 1)) and (
                kind != "absent" or path + (key,) not in written):
            reads.append((kind, path, key))
    return reads


def traced_env(env_class: type, state: dict[str, Any], log: ReadLog) -> Any:
    """An instance of ``env_class`` whose public attributes are the (traced) values of ``state``.

    Reading an attribute that is state (``self.today``, ``self.next_id``) logs a ``get`` of its top-level
    path, so reads of top-level scalars are traced too (container attributes log their own reads).
    """
    names = frozenset(state)

    class _Traced(env_class):  # type: ignore[misc, valid-type]
        def __getattribute__(self, name: str) -> Any:
            if name in names:
                log.add("get", (name,))
            return object.__getattribute__(self, name)

        def __setattr__(self, name: str, value: Any) -> None:
            if name in names:
                log.add("set", (name,))
            object.__setattr__(self, name, value)

    _Traced.__name__ = _Traced.__qualname__ = env_class.__name__
    env = _Traced.__new__(_Traced)
    for key, value in state.items():
        object.__setattr__(env, key, value)
    return env
