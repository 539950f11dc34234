"""The construct / simulate / train-data examples of docs/python-api.md run and return what the files on
disk hold (the evaluate example on that page is run by tests/evaluation/test_api.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.docs import DOCS, python_block

PYTHON_API_PAGE = DOCS / "python-api.md"


def run_block(call: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Execute the block in ``tmp_path`` (progress off); its namespace."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ENVSIM_PROGRESS", "off")
    namespace: dict[str, Any] = {}
    exec(compile(python_block(PYTHON_API_PAGE, call), str(PYTHON_API_PAGE), "exec"), namespace)  # noqa: S102 - our docs
    return namespace


def test_documented_construct_example(tmp_path, monkeypatch, capsys):
    built = run_block("envsim.construct(", tmp_path, monkeypatch)["built"]
    lines = (tmp_path / "mini" / "test.jsonl").read_text().splitlines()
    assert built.written == len(lines) == 20 and built.pool >= 20
    assert {json.loads(line)["env"] for line in lines} == {"online_store-v1"}
    assert built.stats == json.loads(built.stats_json.read_text())
    assert sum(built.by_stratum.values()) == 20 and all(p.exists() for p in built.paths)
    assert f"20 records -> {built.out}" in capsys.readouterr().out


def test_documented_simulate_example(tmp_path, monkeypatch):
    run = run_block("envsim.simulate(", tmp_path, monkeypatch)["run"]
    assert len(run.episodes) == 2 and run.fallbacks["fallback_steps"] == 0
    assert run.drift["cm_at_k"] == {"1": 1.0, "2": 1.0, "3": 1.0}   # the oracle simulator never drifts
    assert len((tmp_path / "sims" / "oracle" / "trajectories.jsonl").read_text().splitlines()) == 2
    assert json.loads((tmp_path / "sims" / "oracle" / "stats.json").read_text())["steps"] == run.stats["steps"]


@pytest.mark.slow
def test_documented_train_data_example(tmp_path, monkeypatch):
    data = run_block("envsim.train_data(", tmp_path, monkeypatch)["data"]
    assert data.samples == 64 == len(data.sft_file.read_text().splitlines())
    assert data.stats == json.loads(data.stats_json.read_text())
    assert set(json.loads(data.dataset_info.read_text())) == {data.name}
    assert len(data.records_file.read_text().splitlines()) == 64
