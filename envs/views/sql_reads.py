"""Views of calls that read the state through SQLite: the rows the call's SQL reads, traced at the database.

A service that loads the state's tables (top-level lists of rows) into an SQLite database and answers with SQL
hides its reads from the static analysis: the wrapper reads every row to load them, so the analysed view is the
whole database. At construction (never at eval) the call is run once more with ``sqlite3.connect`` handing out
connections that report to EnvSim: ``set_trace_callback`` gives every statement as executed (bound values
written in) and ``set_authorizer`` the tables and columns each one reads. The rows shown are:

* the rows of a table a ``SELECT``/``UPDATE``/``DELETE`` reads whose columns equal the values its ``WHERE`` (or a
  join's ``ON``) names, the conditions on one table read as ANDed: ``WHERE email = 'user12@example.com'``,
  ``WHERE a.doctor_id = 'D007' AND a.day = '2026-04-26'``, ``WHERE order_id IN (3, 4)``; a join
  (``ON a.id = i.appointment_id``) narrows each side to the rows matching the other side's;
* the row whose key a call's ``INSERT`` gives, if there is one (its PRIMARY KEY check reads it: the insert fails);
* the rows the call's arguments name, whatever path it took: an argument equal to a cell of an id column
  (``id``, ``customer_id``) or of a column whose values are all different (``email``, ``sku``), numbers only
  for id parameters; so a call that stops early shows the rows a call that goes on would name too;
* the rows those rows reference by a foreign key (``REFERENCES customers(id)`` in the traced ``CREATE TABLE``),
  and the parents an ``INSERT`` names (a foreign key checked at insert time);
* the row with the highest id of a table the call inserts into (SQLite numbers a new row after it);
* of a table the call counts whole (``SELECT COUNT(*) FROM t``), its first row, and the view says how many rows
  the table has: the call runs with stand-ins up to that number, copies of a shown row under keys no real row has
  (``View.sizes``, as for an object model's counted dict).

A statement that reads a table with no such condition (the wrapper's dump, an aggregate over the whole table)
adds no rows: verification (``verify.py``) runs the call on the view alone, and a view that does not reproduce
the record is widened (the analysed view, then whole records, collections, the state). The rows are stored on
the record (``view.rows``: table -> list indices) so eval renders the same view; tables are shown in part as
top-level lists (``partial_lists``), whole rows (a row is one record: its columns are not projected).
"""

from __future__ import annotations

import contextlib
import copy
import re
import sqlite3
from typing import Any, Iterator

_WHERE = re.compile(r"\b(?:WHERE|ON)\b(.*)$", re.IGNORECASE | re.DOTALL)
_LITERAL = r"(?:'(?:[^']|'')*'|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|NULL\b)"
_EQUALS = re.compile(rf"(?:(\w+)\.)?(\w+)\s*(?:==?|\bIN\b)\s*(\(\s*{_LITERAL}(?:\s*,\s*{_LITERAL})*\s*\)|{_LITERAL})",
                     re.IGNORECASE)
_ONE = re.compile(_LITERAL)
_ALIAS = re.compile(r"\b(?:FROM|JOIN|UPDATE|INTO)\s+(\w+)(?:\s+(?:AS\s+)?(\w+))?", re.IGNORECASE)
_INSERT = re.compile(r"^\s*INSERT\s+(?:OR\s+\w+\s+)?INTO\s+(\w+)\s*\(([^)]*)\)\s*VALUES\s*\((.*)\)\s*$",
                     re.IGNORECASE | re.DOTALL)
_INSERT_ALL = re.compile(r"^\s*INSERT\s+(?:OR\s+\w+\s+)?INTO\s+(\w+)\s+VALUES\s*\((.*)\)\s*$", re.IGNORECASE | re.DOTALL)
_COUNT_ALL = re.compile(r"^\s*SELECT\s+COUNT\(\s*\*\s*\)\s+FROM\s+(\w+)\s*;?\s*$", re.IGNORECASE)
_CREATE = re.compile(r"CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)\s*\((.*)\)", re.IGNORECASE | re.DOTALL)
_REFERENCES = re.compile(r"(\w+)\s+\w+[^,]*?\bREFERENCES\s+(\w+)\s*\(\s*(\w+)\s*\)", re.IGNORECASE)
_KEYWORDS = {"select", "from", "where", "and", "or", "not", "on", "join", "set", "values", "into", "update", "as"}


class Trace:
    """Statements run on traced connections, each with the (table, column) pairs it read."""

    def __init__(self) -> None:
        self.statements: list[tuple[str, set]] = []
        self._pending: set = set()

    def authorize(self, action: int, first: Any, second: Any, *_: Any) -> int:
        """``set_authorizer`` hook: note reads, allow everything."""
        if action == sqlite3.SQLITE_READ and first:
            self._pending.add((first, second))
        return sqlite3.SQLITE_OK

    def statement(self, sql: str) -> None:
        """``set_trace_callback`` hook: the statement as executed, with the reads its preparation noted."""
        self.statements.append((sql, self._pending))
        self._pending = set()


@contextlib.contextmanager
def traced_sqlite(trace: Trace) -> Iterator[None]:
    """While open, ``sqlite3.connect`` gives connections that report to ``trace``."""
    original = sqlite3.connect

    def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn = original(*args, **kwargs)
        conn.set_authorizer(trace.authorize)
        conn.set_trace_callback(trace.statement)
        return conn

    sqlite3.connect = connect  # type: ignore[assignment]
    try:
        yield
    finally:
        sqlite3.connect = original  # type: ignore[assignment]


def _value(text: str) -> Any:
    if text.startswith("'"):
        return text[1:-1].replace("''", "'")
    if text.upper() == "NULL":
        return None
    return float(text) if any(c in text for c in ".eE") else int(text)


def _norm(value: Any) -> str:
    """A value as SQLite would store it, for comparing a traced literal with a state value (1 and 1.0 alike)."""
    if isinstance(value, bool):
        return repr(float(value))
    if isinstance(value, (int, float)):
        return repr(float(value))
    return "NULL" if value is None else str(value)


def _same(a: Any, b: Any) -> bool:
    return _norm(a) == _norm(b)


def _aliases(sql: str) -> dict[str, str]:
    """Each table a statement names, and each alias it gives one, mapped to the table."""
    aliases = {}
    for table, alias in _ALIAS.findall(sql):
        aliases[table] = table
        if alias and alias.lower() not in _KEYWORDS:
            aliases[alias] = table
    return aliases


def _conditions(sql: str, reads: set, columns: dict[str, set] | None = None) -> list[tuple[str, str, list[Any]]]:
    """``(table, column, values)`` of the equalities a statement's WHERE/ON names, each resolved to its table: by
    alias, else the named tables with that column (``columns``: the state's tables' columns) or the (table, column)
    pairs the authorizer saw read (a statement SQLite runs again from its cache is not authorized again)."""
    columns = columns or {}
    found = _WHERE.search(sql)
    if not found:
        return []
    aliases = _aliases(sql)
    named = sorted(set(aliases.values()))
    out = []
    for alias, column, literal in _EQUALS.findall(found[1]):
        values = [_value(v) for v in _ONE.findall(literal)]
        if alias:
            owners = [aliases[alias]] if alias in aliases else []
        else:  # the tables the statement names that have the column (or that the authorizer saw it read)
            owners = sorted({t for t in named if column in columns.get(t, ())} | {t for t, c in reads if c == column})
        out += [(table, column, values) for table in owners]
    return out


_JOIN = re.compile(r"\b(\w+)\.(\w+)\s*=\s*(\w+)\.(\w+)")


def _joins(sql: str) -> list[tuple[str, str, str, str]]:
    """``(table, column, table, column)`` of the column equalities a statement's ON/WHERE names (aliases resolved)."""
    found = _WHERE.search(sql)
    if not found:
        return []
    aliases = _aliases(sql)
    return [(aliases[a], ca, aliases[b], cb) for a, ca, b, cb in _JOIN.findall(found[1])
            if a in aliases and b in aliases]


def _foreign_keys(statements: list[tuple[str, set]]) -> dict[str, list[tuple[str, str, str]]]:
    """table -> (column, parent table, parent column), from the traced ``CREATE TABLE`` statements."""
    keys: dict[str, list[tuple[str, str, str]]] = {}
    for sql, _ in statements:
        for match in _CREATE.finditer(sql):
            keys[match[1]] = _REFERENCES.findall(match[2])
    return keys


def _primary_keys(statements: list[tuple[str, set]]) -> dict[str, str]:
    """table -> its primary-key column, from the traced ``CREATE TABLE`` statements."""
    keys: dict[str, str] = {}
    for sql, _ in statements:
        for match in _CREATE.finditer(sql):
            found = re.search(r"(\w+)\s+\w+[^,]*?\bPRIMARY\s+KEY\b", match[2], re.IGNORECASE)
            if found:
                keys[match[1]] = found[1]
    return keys


def _argument_values(action: dict[str, Any]) -> list[tuple[str, Any]]:
    """``(parameter, value)`` for each scalar argument of the call (list items one by one)."""
    out = []
    for name, value in ((action or {}).get("arguments") or {}).items():
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, (str, int)) and not isinstance(item, bool):
                out.append((name, item))
    return out


def _create_columns(statements: list[tuple[str, set]]) -> dict[str, list[str]]:
    """table -> its columns in ``CREATE TABLE`` order (an ``INSERT`` without a column list gives values so)."""
    out: dict[str, list[str]] = {}
    for sql, _ in statements:
        for match in _CREATE.finditer(sql):
            parts, depth, current = [], 0, ""
            for char in match[2]:
                depth += (char == "(") - (char == ")")
                if char == "," and depth == 0:
                    parts.append(current)
                    current = ""
                else:
                    current += char
            parts.append(current)
            names = [p.split()[0].strip('"`[]') for p in parts if p.split()]
            out[match[1]] = [n for n in names if n.upper() not in ("PRIMARY", "FOREIGN", "UNIQUE", "CHECK",
                                                                   "CONSTRAINT")]
    return out


def _tables(state: dict[str, Any], primary: dict[str, str]) -> dict[str, list[tuple[Any, dict[str, Any]]]]:
    """The state's tables as ``(handle, row)`` pairs: a list of rows (handle: its index) or a dict of rows keyed by
    primary key (handle: the key; the row gets the key under its primary-key column)."""
    out: dict[str, list[tuple[Any, dict[str, Any]]]] = {}
    for name, value in state.items():
        if isinstance(value, list) and value and all(isinstance(r, dict) for r in value):
            out[name] = list(enumerate(value))
        elif isinstance(value, dict) and value and all(isinstance(r, dict) for r in value.values()):
            column = primary.get(name, "id")
            out[name] = [(key, {column: key, **row}) for key, row in value.items()]
    return out


def traced_rows(env_class: type, state: dict[str, Any], action: dict[str, Any]) -> dict[str, Any] | None:
    """What the call's SQL reads (module docstring): ``{"tables": {table: handles}, "counted": [tables]}`` where
    a handle is a list index (a table stored as a list of rows) or a key (a table stored as rows by primary key),
    and a counted table is one whose rows the call counts whole (``SELECT COUNT(*) FROM t``: shown with its number
    of rows); ``None`` when the call opened no SQLite connection (nothing was traced)."""
    from envsim.records import Action

    trace = Trace()
    with traced_sqlite(trace):
        try:
            env_class.run_call(copy.deepcopy(state), Action.from_json(action))
        except Exception:  # noqa: BLE001 - a call that fails is traced as far as it ran
            pass
    if not trace.statements:
        return None
    primary = _primary_keys(trace.statements)
    order = _create_columns(trace.statements)
    tables = _tables(state, primary)
    keep: dict[str, set] = {t: set() for t in tables}
    columns = {t: set(rows[0][1]) for t, rows in tables.items()}
    counted: set = set()

    def matching(table: str, column: str, values: list[Any]) -> set:
        return {handle for handle, row in tables.get(table, ())
                if column in row and any(_same(row[column], v) for v in values)}

    def take(table: str, column: str, values: list[Any]) -> None:
        keep[table] |= matching(table, column, values)

    loaded: dict[tuple, set] = {}

    def loads_a_row(table: str, names: list[str], values: list[str]) -> bool:
        """An INSERT of a row the state already holds: the wrapper loading the table, not the call writing."""
        if table not in tables or len(names) != len(values):
            return False
        key = (table, tuple(names))
        if key not in loaded:
            loaded[key] = {tuple(_norm(r.get(c)) for c in names) for _, r in tables[table]}
        return tuple(_norm(_value(v)) for v in values) in loaded[key]

    inserts = []  # (table, {column: literal}) of the rows the call inserts
    for sql, _ in trace.statements:
        inserted = _INSERT.match(sql)
        if inserted:
            names = [c.strip() for c in inserted[2].split(",")]
            values = _ONE.findall(inserted[3])
            if not loads_a_row(inserted[1], names, values):
                inserts.append((inserted[1], dict(zip(names, values)) if len(values) == len(names) else {}))
        elif _INSERT_ALL.match(sql):  # no column list: the columns in CREATE TABLE order
            whole = _INSERT_ALL.match(sql)
            names = order.get(whole[1], [])
            values = _ONE.findall(whole[2])
            if not loads_a_row(whole[1], names, values):
                inserts.append((whole[1], dict(zip(names, values)) if len(values) == len(names) else {}))
    for sql, reads in trace.statements:
        head = sql.lstrip().split(None, 1)[0].upper() if sql.strip() else ""
        if head in ("SELECT", "UPDATE", "DELETE", "WITH"):
            found: dict[str, set] = {}  # the conditions of one statement are read as ANDed, per table
            for table, column, values in _conditions(sql, reads, columns):
                rows = matching(table, column, values)
                found[table] = found[table] & rows if table in found else rows
            for _ in range(2):  # a join narrows each side to the rows matching the other side's
                for left, left_column, right, right_column in _joins(sql):
                    for (a, ca), (b, cb) in (((left, left_column), (right, right_column)),
                                             ((right, right_column), (left, left_column))):
                        if a in found and a in tables:
                            rows_a = dict(tables[a])
                            values = [rows_a[h][ca] for h in found[a] if ca in rows_a[h]]
                            joined = matching(b, cb, values)
                            found[b] = found[b] & joined if b in found else joined
            for table, rows in found.items():
                keep[table] |= rows
            whole = _COUNT_ALL.match(sql)
            if whole and whole[1] in tables:  # counted whole: one real row shown (stand-ins copy it)
                counted.add(whole[1])
                keep[whole[1]].add(tables[whole[1]][0][0])
    for table, _ in inserts:  # the row SQLite numbers a new one after
        rows = [r for _, r in tables.get(table, ())]
        ids = [k for k, v in rows[0].items() if isinstance(v, int) and not isinstance(v, bool)] if rows else []
        if ids and isinstance(tables[table][0][0], int):
            keep[table].add(max(range(len(rows)), key=lambda i: rows[i][ids[0]]))
    foreign = _foreign_keys(trace.statements)
    arguments = _argument_values(action)
    for table, rows in tables.items() if arguments else ():  # rows the arguments name, whatever path the call took
        keyed = [c for c in columns[table] if c.lower().endswith("id") or c == primary.get(table)
                 or len({_norm(r.get(c)) for _, r in rows}) == len(rows)]  # id columns and columns of unique values
        for name, value in arguments:
            for column in keyed:
                if isinstance(value, int) and not name.lower().endswith(("id", "ids")):
                    continue
                keep[table] |= matching(table, column, [value]) if (isinstance(value, int) or len(value) >= 2) else set()
    for table, named in inserts:  # a row with the key an INSERT gives is read (a UNIQUE/PRIMARY KEY check)
        column = primary.get(table, "id")
        if column in named:
            take(table, column, [_value(named[column])])
    for table, named in inserts:  # parents an INSERT names must exist (foreign keys checked)
        for column, parent, parent_column in foreign.get(table, ()):
            if column in named:
                take(parent, parent_column, [_value(named[column])])
    changed = True
    while changed:  # the rows kept rows reference by a foreign key
        changed = False
        for table, refs in foreign.items():
            rows = dict(tables.get(table, ()))
            for column, parent, parent_column in refs:
                if parent not in keep:
                    continue
                wanted = [rows[h][column] for h in keep.get(table, ()) if column in rows.get(h, {})]
                before = len(keep[parent])
                if wanted:
                    take(parent, parent_column, wanted)
                changed |= len(keep[parent]) > before
    order = {t: {h: i for i, (h, _) in enumerate(rows)} for t, rows in tables.items()}
    return {"tables": {t: sorted(handles, key=order[t].__getitem__) for t, handles in keep.items()},
            "counted": sorted(counted)}


def uses_sqlite(env_class: type) -> bool:
    """Whether the module defining ``env_class`` (or a module its tools come from) imports ``sqlite3``."""
    import sys

    names = {env_class.__module__} | {getattr(getattr(env_class, n, None), "__module__", "") for n in dir(env_class)
                                      if not n.startswith("__")}
    for name in names:
        module = sys.modules.get(name or "")
        if module is not None and any(v is sqlite3 for v in vars(module).values()):
            return True
    return False
