"""Replaying a log in worker processes (``construct --policy replay --workers N``, issue 43): the same records and
files as one process, states sent as what changed and rebuilt sharing the records the call left alone."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from envsim.cli import main
from envsim.construction.replay_log import checked_lines, read_line
from envsim.construction.replay_workers import rebuilt_state, state_change

from envsim.envs.sandbox import trust_module

from tests.construction.test_replay_whole import SMALL_SHOP, _log

_VALUES = st.one_of(st.integers(-3, 3), st.floats(allow_nan=False, width=16), st.booleans(), st.none(), st.text(max_size=3))
_RECORDS = st.dictionaries(st.text("abc", max_size=2), _VALUES, max_size=3)
_STATES = st.dictionaries(st.sampled_from(["orders", "users", "count", "flag"]),
                          st.one_of(st.dictionaries(st.text("kxyz", min_size=1, max_size=2), _RECORDS, max_size=5),
                                    _VALUES), max_size=4)


@st.composite
def _steps(draw):
    """A state and a next state that shares some of its values and records (as the copy-on-write labeller's next
    state does), with records changed, added and removed, key orders moved and values replaced by equal ones of
    another type (``1`` for ``1.0``)."""
    state = draw(_STATES)
    next_state = {}
    for name, value in state.items():
        choice = draw(st.integers(0, 3))
        if choice == 0:
            continue                                    # removed
        if isinstance(value, dict) and choice == 1:     # records: kept (shared), replaced, dropped, added, reordered
            collection = {}
            for key, record in value.items():
                kind = draw(st.integers(0, 3))
                if kind == 0:
                    collection[key] = record
                elif kind == 1:
                    collection[key] = draw(_RECORDS)
                elif kind == 2:
                    collection[key] = {k: (int(v) if isinstance(v, float) and v.is_integer() else v)
                                       for k, v in record.items()}
            for key in draw(st.lists(st.text("mn", min_size=1, max_size=2), max_size=2)):
                collection[key] = draw(_RECORDS)
            if draw(st.booleans()):
                collection = dict(reversed(list(collection.items())))
            next_state[name] = collection
        elif choice == 2:
            next_state[name] = draw(st.one_of(_VALUES, _RECORDS))
        else:
            next_state[name] = value                    # shared
    for name in draw(st.lists(st.sampled_from(["added", "count"]), max_size=2)):
        next_state.setdefault(name, draw(_VALUES))
    if draw(st.booleans()):
        next_state = dict(reversed(list(next_state.items())))
    return state, next_state


def _exact(value):
    """The value as type-exact, order-exact text (``1`` and ``1.0`` apart, key order kept)."""
    return json.dumps(value) if not isinstance(value, dict) else \
        "{" + ",".join(json.dumps(k) + ":" + _exact(v) for k, v in value.items()) + "}"


@settings(max_examples=300, deadline=None)
@given(_steps())
def test_a_state_rebuilt_from_its_change_is_the_next_state_exactly_and_shares_what_the_call_left(step):
    state, next_state = step
    change = state_change(state, next_state)
    rebuilt = rebuilt_state(state, change)
    assert _exact(rebuilt) == _exact(next_state)
    for name, value in rebuilt.items():
        if name in state and next_state[name] is state[name]:
            assert value is state[name]                  # a value the call left is the previous state's object
        elif isinstance(value, dict) and isinstance(state.get(name), dict):
            for key, record in value.items():
                if key in state[name] and next_state[name][key] is state[name][key]:
                    assert record is state[name][key]


def _construct(log: Path, out: Path, workers: int) -> str:
    result = CliRunner().invoke(main, ["construct", "--split", "test", "--policy", "replay", "--replay-log", str(log),
                                       "--env-module", "tests.fixtures.shopdb.small", "--out", str(out),
                                       "--no-progress", "--workers", str(workers)])
    assert result.exit_code == 0, result.output
    return result.stderr


def _files(folder: Path) -> dict[str, bytes]:
    """Every file construct wrote under ``folder`` (records, stored states, statistics), the folder's name left out."""
    return {p.relative_to(folder).as_posix(): p.read_bytes().replace(folder.name.encode(), b"RUN")
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_workers_write_the_files_one_process_writes(tmp_path):
    log = tmp_path / "log.jsonl"
    _log(log, 3, 8)
    (tmp_path / "zq_serial_zq").mkdir()
    (tmp_path / "zq_workers_zq").mkdir()
    serial = _construct(log, tmp_path / "zq_serial_zq" / "replayed.jsonl", 1)
    parallel = _construct(log, tmp_path / "zq_workers_zq" / "replayed.jsonl", 2)
    one, two = _files(tmp_path / "zq_serial_zq"), _files(tmp_path / "zq_workers_zq")
    assert len(one) >= 3 and one == two                  # records, stored states and statistics, byte for byte
    assert "25 logged calls, 24 records (1 repeat" in serial and "25 logged calls, 24 records (1 repeat" in parallel


def test_workers_refuse_a_bad_line_before_any_call_runs(tmp_path):
    log = tmp_path / "log.jsonl"
    _log(log, 2, 3)
    log.write_text(log.read_text() + "{\"env\": \"" + SMALL_SHOP + "\", \"actions\": 7}\n")
    result = CliRunner().invoke(main, ["construct", "--split", "test", "--policy", "replay", "--replay-log", str(log),
                                       "--env-module", "tests.fixtures.shopdb.small", "--out",
                                       str(tmp_path / "out.jsonl"), "--no-progress", "--workers", "2"])
    assert result.exit_code != 0 and f"{log}:4: ValueError: 'actions' must be a list" in result.output
    assert not (tmp_path / "out.jsonl").exists()


def test_checked_lines_point_at_each_non_blank_line(tmp_path):
    trust_module("tests.fixtures.shopdb.small")
    log = tmp_path / "log.jsonl"
    entry = lambda mark: json.dumps({"env": SMALL_SHOP, "actions": [], "mark": mark}).encode()  # noqa: E731
    log.write_bytes(entry("a") + b"\n\n  \n" + entry("\u00e9").replace(b"\\u00e9", b"\xc3\xa9") + b"\r\n" + entry("c"))
    found = [(line.number, json.loads(read_line(log, line))["mark"]) for line in checked_lines(log)]
    assert found == [(1, "a"), (4, "\u00e9"), (5, "c")]
