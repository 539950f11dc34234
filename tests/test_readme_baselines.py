"""The README's baseline block is the real console output of `envsim eval --model null|oracle` on the
shipped v1 benchmark: a newcomer who runs the first README command sees the same table."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from envsim.cli import main
from tests.fixtures.docs import README, block_after


def _readme_baseline_tables() -> dict[str, list[str]]:
    """Map each baseline named in the README's output block to the lines of its table."""
    tables: dict[str, list[str]] = {}
    for chunk in block_after(README, "Output of the baselines on v1").strip().split("\n\n"):
        lines = chunk.splitlines()
        model = lines[0].split(" on ", 1)[0]
        tables[model] = lines
    return tables


@pytest.mark.parametrize("model", ["null", "oracle"])
def test_readme_block_is_the_console_output(model, tmp_path):
    tables = _readme_baseline_tables()
    assert model in tables, f"the README shows no table for {model}"
    result = CliRunner().invoke(main, ["eval", "--model", model, "--runs-root", str(tmp_path), "--no-progress"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    printed = result.stdout.splitlines()
    table_start = printed.index(tables[model][0])
    assert printed[table_start:table_start + len(tables[model])] == tables[model]
