"""``envsim envs check MODULE:CLASS`` on a user's own class (issue 53, item 6): one line per finding, defects first,
exit status 1 on a defect, never a traceback."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from envsim.cli import main
from envsim.envs.check import main as check_main


class Receipt:
    """A plain object: no JSON rule turns it into a value."""


class Shelf:
    """Books on a shelf; one tool returns a plain object (not JSON), one is fine."""

    def __init__(self) -> None:
        self.books = {"b1": {"title": "Dune", "tags": ["sf"]}, "b2": {"title": "Emma", "tags": ["classic"]}}

    def get_book(self, book_id: str) -> dict:
        """Look up a book.

        Args:
            book_id: The book's id, such as 'b1'.
        """
        return self.books[book_id]

    def lend(self, book_id: str) -> Receipt:
        """Lend a book; answers a receipt object.

        Args:
            book_id: The book's id.
        """
        self.books[book_id]["lent"] = True
        return Receipt()


@pytest.mark.slow
def test_a_uuid4_tool_is_named_as_a_defect_and_sets_the_exit_status():
    result = CliRunner().invoke(main, ["envs", "check", "tests.fixtures.flights.holds:HoldingAirlineEnv",
                                       "--steps", "6", "--episodes", "1", "--per-tool", "3"])
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("DEFECT  determinism hold_seat: two runs on the same state differ at observation "
                               "/hold_id")
    assert any(line.startswith("OK      executor") for line in lines)
    assert lines[-1].endswith("1 defect(s), 0 warning(s)")


@pytest.mark.slow
def test_a_clean_class_passes_and_a_non_json_return_is_a_defect(capsys):
    result = CliRunner().invoke(main, ["envs", "check", "tests.fixtures.telecom.wrapper:TelecomEnv", "--steps", "6",
                                       "--episodes", "1", "--per-tool", "3"])
    assert result.exit_code == 0 and "no defect" in result.output, result.output
    assert any(line.startswith("OK      views       mdp-view prompt tokens") for line in result.output.splitlines())
    assert check_main([f"{__name__}:Shelf"]) == 1
    printed = capsys.readouterr().out
    assert "DEFECT  json        lend(" in printed and "non-JSON" in printed
    assert check_main(["no_such_module_x:Cls"]) == 1
    assert "DEFECT  load        could not run: ModuleNotFoundError" in capsys.readouterr().out
