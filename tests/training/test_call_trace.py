"""What a call reads by key and writes, in order (``training.call_trace``), and the SFT targets that test the reads
first (``replace_tests: shown+read-keys`` / ``shown+reads``) and follow the writes' order (``patch_op_order:
writes``, ``training.patch_form``)."""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import pytest

from envsim.delta import compute_delta, same_json
from envsim.envs import Environment, ToolError, tool
from envsim.envs.registry import get_env
from envsim.records import Action
from envsim.training.call_trace import call_reads, call_writes
from envsim.training.patch_form import check_op_order, in_write_order, target_patch, without_repeated_tests


class Lending(Environment):
    """A small library: members borrow books; each branch counts its loans by genre."""

    name = "lending_fixture"

    @classmethod
    def sample_state(cls, seed: int) -> dict[str, Any]:
        return {"today": "2026-01-05", "loans_made": 7,
                "members": {"M1": {"branch": "north", "favourite": "poetry", "books": ["B1", "B2"]},
                            "M2": {"branch": "south", "favourite": "crime", "books": []}},
                "branches": {"north": {"by_genre": {"poetry": 3, "crime": 1}},
                             "south": {"by_genre": {"poetry": 0, "crime": 2}}},
                "books": {"B1": {"title": "Odes", "due": "2026-01-10"}, "B2": {"title": "Elegies", "due": None}},
                "shelf": [["B1", None], [None, "B2"]]}

    @tool(write=True)
    def borrow(self, member_id: str) -> dict[str, Any]:
        """Count a loan of the member's favourite genre at the member's branch.

        Args:
            member_id: Borrowing member.
        """
        member = self.members[member_id]
        self.branches[member["branch"]]["by_genre"][member["favourite"]] += 1
        self.loans_made += 1
        return {"success": True, "loans": self.loans_made}

    @tool(write=True)
    def renew_all(self, member_id: str) -> dict[str, Any]:
        """Renew every book the member holds until the 20th.

        Args:
            member_id: Member renewing.
        """
        for book_id in self.members[member_id]["books"]:
            self.books[book_id]["due"] = "2026-01-20"
        return {"success": True}

    @tool(write=True)
    def move_then_check(self, member_id: str, branch: str) -> dict[str, Any]:
        """Move a member to another branch, then report it (a value written before it is read).

        Args:
            member_id: Member moving.
            branch: New branch.
        """
        self.members[member_id]["branch"] = branch
        return {"success": True, "branch": self.members[member_id]["branch"]}

    @tool
    def crime_fans(self) -> dict[str, Any]:
        """Members whose favourite genre is crime (a scan of every member, and of the shelf's rows)."""
        fans = [m for m, rec in self.members.items() if rec["favourite"] == "crime"]
        shelved = [cell for row in self.shelf for cell in row if cell]
        return {"success": True, "fans": fans, "shelved": shelved}

    @tool(write=True)
    def close_member(self, member_id: str) -> dict[str, Any]:
        """Close a member's account; north branch accounts close at the desk only.

        Args:
            member_id: Member closing.
        """
        if self.members[member_id]["branch"] == "north":
            raise ToolError("North branch accounts close at the desk")
        del self.members[member_id]
        return {"success": True}


STATE = Lending.sample_state(0)


def test_the_values_a_call_looks_up_and_uses_as_keys_are_its_hops() -> None:
    call = {"name": "borrow", "arguments": {"member_id": "M1"}}
    assert call_reads(Lending, STATE, call, keys_only=True) == [("/members/M1/branch", "north"),
                                                                ("/members/M1/favourite", "poetry")]
    assert call_reads(Lending, STATE, call) == [("/members/M1/branch", "north"), ("/members/M1/favourite", "poetry"),
                                                ("/branches/north/by_genre/poetry", 3), ("/loans_made", 7)]
    assert STATE == Lending.sample_state(0)  # traced on a copy


def test_a_loop_over_a_list_reached_by_key_reads_its_items() -> None:
    call = {"name": "renew_all", "arguments": {"member_id": "M1"}}
    assert call_reads(Lending, STATE, call, keys_only=True) == [("/members/M1/books/0", "B1"),
                                                                ("/members/M1/books/1", "B2")]


def test_a_scan_names_no_record_and_rows_of_a_grid_are_not_reached_by_key() -> None:
    assert call_reads(Lending, STATE, {"name": "crime_fans", "arguments": {}}) == []


def test_a_value_the_call_wrote_before_reading_it_is_not_a_read() -> None:
    reads = call_reads(Lending, STATE, {"name": "move_then_check", "arguments": {"member_id": "M1",
                                                                                  "branch": "south"}})
    assert ("/members/M1/branch", "south") not in reads and all(path != "/members/M1/branch" for path, _ in reads)


def test_a_failing_call_reports_what_it_read_before_failing() -> None:
    failing = {"name": "close_member", "arguments": {"member_id": "M1"}}
    assert call_reads(Lending, STATE, failing) == [("/members/M1/branch", "north")]
    assert call_reads(Lending, STATE, {"name": "close_member", "arguments": {"member_id": "M2"}}) == [
        ("/members/M2/branch", "south")]


def test_a_class_whose_calls_run_elsewhere_or_a_bad_call_yields_no_reads() -> None:
    class Elsewhere(Lending):
        name = "lending_elsewhere_fixture"

        @classmethod
        def run_call(cls, state: dict[str, Any], action: Any) -> tuple[Any, dict[str, Any]]:
            return {"success": True}, state

    assert call_reads(Elsewhere, STATE, {"name": "borrow", "arguments": {"member_id": "M1"}}) == []
    assert call_reads(Lending, STATE, {"name": "borrow", "arguments": {"member_id": "M9"}}) == []  # KeyError
    assert call_reads(Lending, STATE, {"name": "nope", "arguments": {}}) == []
    assert call_reads(dict, STATE, {"name": "borrow", "arguments": {}}) == []


def _voter_record() -> dict[str, Any]:
    """A real ``update_registration`` of voter_registration-v1 that moves an active voter's precinct and party."""
    env = get_env("voter_registration-v1")
    state = env.sample_state(3)
    voter_id, voter = next((v, r) for v, r in state["voters"].items() if r["status"] == "active")
    precinct = next(p for p in state["precincts"] if p != voter["precinct_id"])
    party = next(p for p in ("DEM", "REP", "IND", "GRN", "NPA") if p != voter["party"])
    action = {"name": "update_registration", "arguments": {"voter_id": voter_id, "precinct_id": precinct,
                                                           "party": party}}
    observation, after = env.run_call(copy.deepcopy(state), Action.from_json(action))
    assert observation["success"] is True
    return {"env": "voter_registration-v1", "state": state, "action": action, "next_state": after,
            "patch": compute_delta(state, after).patch, "voter": voter_id, "old": voter}


def test_read_key_targets_test_the_voters_old_precinct_and_party_first_and_give_the_same_state() -> None:
    record = _voter_record()
    voter, old = record["voter"], record["old"]
    patch = target_patch(record, "dash", "op-first", "shown+read-keys")
    assert patch[:2] == [{"op": "test", "path": f"/voters/{voter}/precinct_id", "value": old["precinct_id"]},
                         {"op": "test", "path": f"/voters/{voter}/party", "value": old["party"]}]
    assert same_json(jsonpatch.apply_patch(record["state"], patch), record["next_state"])
    tested = [(op["path"], op["value"]) for op in patch if op["op"] == "test"]
    assert len(tested) == len(set(tested))  # the later replace tests of the same values are left out
    shown_only = target_patch(record, "dash", "op-first", "shown")
    assert [op for op in patch if op["op"] != "test"] == [op for op in shown_only if op["op"] != "test"]
    everything = target_patch(record, "dash", "op-first", "shown+reads")
    assert {"op": "test", "path": f"/voters/{voter}/status", "value": "active"} in everything
    assert same_json(jsonpatch.apply_patch(record["state"], everything), record["next_state"])


def test_a_value_the_prompt_does_not_show_is_not_tested() -> None:
    record = _voter_record()
    voter = record["voter"]
    shown = copy.deepcopy(record["state"])
    del shown["voters"][voter]["party"]
    patch = target_patch(record, "dash", "op-first", "shown+read-keys", shown)
    assert all(op["path"] != f"/voters/{voter}/party" for op in patch if op["op"] == "test")
    assert patch[0] == {"op": "test", "path": f"/voters/{voter}/precinct_id", "value": record["old"]["precinct_id"]}


def test_an_unknown_environment_keeps_the_shown_tests() -> None:
    record = {**_voter_record(), "env": "no_such_env-v1"}
    assert target_patch(record, "dash", "op-first", "shown+reads") == target_patch(record, "dash", "op-first", "shown")


def test_a_repeated_test_is_left_out_until_its_path_is_written() -> None:
    patch = [{"op": "test", "path": "/a", "value": 1}, {"op": "test", "path": "/a", "value": 1},
             {"op": "replace", "path": "/a", "value": 2}, {"op": "test", "path": "/a", "value": 2},
             {"op": "test", "path": "/b/c", "value": 0}, {"op": "remove", "path": "/b"},
             {"op": "test", "path": "/b/c", "value": 0}]
    assert without_repeated_tests(patch) == [patch[0], patch[2], patch[3], patch[4], patch[5], patch[6]]


def test_the_writes_of_a_call_come_in_the_order_it_made_them() -> None:
    assert call_writes(Lending, STATE, {"name": "borrow", "arguments": {"member_id": "M1"}}) == [
        "/branches/north/by_genre/poetry", "/loans_made"]
    assert call_writes(Lending, STATE, {"name": "close_member", "arguments": {"member_id": "M2"}}) == ["/members/M2"]
    assert call_writes(Lending, STATE, {"name": "borrow", "arguments": {"member_id": "M9"}}) == []


def test_write_order_targets_decrement_the_old_tally_then_the_voter_then_the_new_tally() -> None:
    record = _voter_record()
    voter, old = record["voter"], record["old"]
    new_precinct, new_party = record["action"]["arguments"]["precinct_id"], record["action"]["arguments"]["party"]
    ordered = in_write_order(record, record["patch"])
    assert [op["path"] for op in ordered] == [f"/precincts/{old['precinct_id']}/tally/{old['party']}",
                                              f"/voters/{voter}/precinct_id", f"/voters/{voter}/party",
                                              f"/precincts/{new_precinct}/tally/{new_party}"]
    assert sorted(ordered, key=lambda op: op["path"]) == sorted(record["patch"], key=lambda op: op["path"])
    target = target_patch(record, "dash", "op-first", "shown+read-keys", None, "writes")
    assert [op["op"] for op in target] == ["test", "test", "test", "replace", "replace", "replace", "test", "replace"]
    assert same_json(jsonpatch.apply_patch(record["state"], target), record["next_state"])
    assert target_patch(record, "dash", "op-first", "none", None, "writes") == ordered


def test_a_reorder_that_would_change_the_next_state_keeps_the_stored_order() -> None:
    record = {"env": "lending_fixture_unknown-v1", "state": STATE, "action": {"name": "borrow", "arguments": {}},
              "patch": [{"op": "replace", "path": "/loans_made", "value": 8},
                        {"op": "replace", "path": "/branches/north/by_genre/poetry", "value": 4}]}
    assert in_write_order(record, record["patch"]) == record["patch"]  # the environment is not known here
    appends = [{"op": "add", "path": "/shelf/2", "value": []}, {"op": "add", "path": "/shelf/3", "value": ["B9"]}]
    assert in_write_order({**record, "env": "voter_registration-v1"}, appends) == appends
    with pytest.raises(ValueError, match="patch_op_order must be one of stored, writes"):
        check_op_order("sorted")


def test_change_read_keys_leave_a_read_only_target_empty() -> None:
    record = _voter_record()
    tested = target_patch(record, "dash", "op-first", "shown+change-read-keys")
    assert tested == target_patch(record, "dash", "op-first", "shown+read-keys")
    env = get_env("issue_dependency_tracker-v1")
    state = env.sample_state(2)
    issue_id = next(i for i, rec in state["issues"].items() if rec["blocked_by"])
    read_only = {"env": "issue_dependency_tracker-v1", "state": state, "patch": [],
                 "action": {"name": "get_issue", "arguments": {"issue_id": issue_id}}}
    assert target_patch(read_only, "dash", "op-first", "shown+read-keys")[0]["op"] == "test"
    assert target_patch(read_only, "dash", "op-first", "shown+change-read-keys") == []
