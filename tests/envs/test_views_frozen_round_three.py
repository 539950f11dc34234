"""The view rules of issue 53 leave shipped views alone: no record of v1, v1.1, v2 or v2.1 has object-model code
over a state with top-level lists of records (lists shown in part) or the module-shaped code of one's own
environment (every top-level dict present), and none has traced SQL rows, so every shipped view is as before."""

from __future__ import annotations

import glob
import os

import pytest

from envsim.benchmark import load
from envsim.envs.views.analysis import ReadAnalyzer
from envsim.envs.views.partial_lists import is_record_list
from envsim.envs.views.view import _ENTRY


@pytest.mark.parametrize("version", ["v1", "v1.1", "v2", "v2.1"])
def test_no_shipped_record_meets_the_new_view_rules(version):
    checked = 0
    for path in sorted(glob.glob(f"benchmark/{version}/*.jsonl")):
        split = os.path.basename(path)[:-len(".jsonl")]
        if "chained" in split:  # episodes, not records: their steps are records of the same environments
            continue
        for record in load(version, split):
            state, code = record.get("state"), record.get("code")
            if not isinstance(state, dict) or not isinstance(code, str):
                continue
            checked += 1
            assert not _ENTRY.search(code) and "rows" not in (record.get("view") or {})
            if any(is_record_list(v) for v in state.values()):
                assert not ReadAnalyzer(state, code).handles, (path, record["id"])
    assert checked > 100
