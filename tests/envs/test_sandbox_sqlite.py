"""The sandbox runs shown code that imports sqlite3 (issue 53, item 2) on in-memory databases only: a foreign key,
a transaction that rolls back and the authorizer-free queries work; a file, a URI, ATTACH, VACUUM INTO and
extension loading are refused (reported as violations or as errors of the call), so importing sqlite3 opens no
path out of the sandbox."""

from __future__ import annotations

import pytest

from envsim.envs.sandbox import SandboxError, run_request

SOURCE = '''import sqlite3


class Store:
    def orders_of(self, customer: str) -> dict:
        """Build the store in memory, insert, roll a bad transaction back, read with a join."""
        db = sqlite3.connect(":memory:")
        db.execute("PRAGMA foreign_keys = ON")
        db.execute("CREATE TABLE customers (id TEXT PRIMARY KEY, name TEXT)")
        db.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT REFERENCES customers(id), total REAL)")
        db.executemany("INSERT INTO customers VALUES (?, ?)", [(k, v["name"]) for k, v in self.customers.items()])
        db.executemany("INSERT INTO orders (customer, total) VALUES (?, ?)",
                       [(o["customer"], o["total"]) for o in self.orders])
        db.commit()
        try:
            with db:
                db.execute("INSERT INTO orders (customer, total) VALUES ('nobody', 1)")
        except sqlite3.IntegrityError as exc:
            refused = str(exc)
        rows = db.execute("SELECT c.name, COUNT(*), SUM(o.total) FROM orders o JOIN customers c ON c.id = o.customer "
                          "WHERE c.id = ? GROUP BY c.id", (customer,)).fetchall()
        return {"rows": [list(r) for r in rows], "refused": refused,
                "count": db.execute("SELECT COUNT(*) FROM orders").fetchone()[0]}

    def attack(self, how: str) -> str:
        """Try to reach a file through SQLite."""
        if how == "connect_file":
            sqlite3.connect("/etc/passwd").execute("SELECT 1")
        elif how == "connect_uri":
            sqlite3.connect("file:/etc/passwd?mode=ro", uri=True).execute("SELECT 1")
        elif how == "raw_connect":
            sqlite3.Connection("/etc/passwd").execute("SELECT 1")
        elif how == "attach":
            sqlite3.connect(":memory:").execute("ATTACH DATABASE '/etc/passwd' AS leak")
        elif how == "attach_unguarded":
            db = sqlite3.connect(":memory:")
            db.set_authorizer(None)
            db.execute("ATTACH DATABASE '/etc/passwd' AS leak")
            return str(db.execute("SELECT name FROM leak.sqlite_master").fetchall())
        elif how == "vacuum_into":
            db = sqlite3.connect(":memory:")
            db.set_authorizer(None)
            db.execute("CREATE TABLE t (x)")
            db.execute("VACUUM INTO '/tmp/envsim-sqlite-escape.db'")
        elif how == "load_extension":
            db = sqlite3.connect(":memory:")
            db.enable_load_extension(True)
            db.load_extension("/usr/lib/x86_64-linux-gnu/libsqlite3.so.0")
        elif how == "sql_load_extension":
            sqlite3.connect(":memory:").execute("SELECT load_extension('/usr/lib/libc.so.6')")
        return "reached"
'''
STATE = {"customers": {"c1": {"name": "Ada"}, "c2": {"name": "Bo"}},
         "orders": [{"customer": "c1", "total": 10.5}, {"customer": "c1", "total": 2.0},
                    {"customer": "c2", "total": 7.0}]}


def _request(tool: str, arguments: dict, packages: list[str] | None = None) -> dict:
    request = {"source": SOURCE, "class_name": "Store", "load": "attrs", "tools": [tool], "state": STATE,
               "action": {"name": tool, "arguments": arguments}}
    if packages is not None:
        request["packages"] = packages
    return request


def test_sqlite_runs_in_memory_with_foreign_keys_and_rollback():
    answer = run_request(_request("orders_of", {"customer": "c1"}, ["sqlite3"]))
    assert answer["observation"] == {"rows": [["Ada", 2, 12.5]], "refused": "FOREIGN KEY constraint failed",
                                     "count": 3}
    assert answer["next_state"] == STATE


def test_sqlite_is_not_loaded_unless_asked():
    with pytest.raises(SandboxError, match="module 'sqlite3' is not available in the sandbox"):
        run_request(_request("orders_of", {"customer": "c1"}))


@pytest.mark.parametrize("how", ["connect_file", "connect_uri", "raw_connect", "attach", "attach_unguarded",
                                 "vacuum_into", "load_extension", "sql_load_extension"])
def test_sqlite_reaches_no_file(how):
    try:
        answer = run_request(_request("attack", {"how": how}, ["sqlite3"]))
    except SandboxError as exc:  # a violation the tripwire or seccomp reported
        assert "forbidden operation" in str(exc) or "SQLite" in str(exc), str(exc)
        return
    observation = answer["observation"]
    assert isinstance(observation, dict) and observation.get("success") is False, observation
    assert "reached" not in str(observation) and "root" not in str(observation)
