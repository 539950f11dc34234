"""Trust round three (issue 45), attack 3: stored patches whose ops each stay under the depth limit composed a state
2,100 levels deep; ``--model executor`` then crashed in ``executor_misses`` -> ``json_copy`` (``RecursionError``,
exit 1, no summary) and a re-run crashed the same way, while elsewhere the same file was an infrastructure failure
retried forever. Now the composed depth is bounded where the patch is applied: a named bad record at validation."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from envsim.benchmark import BENCHMARK_DIR, load
from envsim.benchmark.state_store import StateRefError, resolve
from envsim.benchmark.validation import BenchmarkFileError
from envsim.cli import main
from envsim.evaluation.baselines import executor_misses
from envsim.evaluation.scoring.scoring import apply_prediction
from envsim.patch_bounds import MAX_STATE_DEPTH, nesting_problem

V2 = BENCHMARK_DIR / "v2"
TAU_ROW = json.loads((V2 / "tau.jsonl").open(encoding="utf-8").readline())


def nested(levels: int) -> dict:
    value: dict = {}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


def stacked_ops(ops: int = 11, levels: int = 190) -> list[dict]:
    """The audit's patch: each op adds a ``levels``-deep value at the end of the last one (11 x 190 ≈ 2,100)."""
    out, path = [], "/deep"
    for _ in range(ops):
        out.append({"op": "add", "path": path, "value": nested(levels)})
        path += "/a" * (levels - 1)
    return out


def _bench(tmp_path: Path, rows: list[dict]) -> Path:
    folder = tmp_path / "tau_states"
    folder.mkdir(exist_ok=True)
    for ref in (TAU_ROW["state_ref"]["base"], TAU_ROW["tools_ref"]):
        name = ref.removeprefix("sha256:") + ".json.gz"
        shutil.copyfile(V2 / "tau_states" / name, folder / name)
    path = tmp_path / "tau_x.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _deep_row() -> dict:
    return {**TAU_ROW, "id": "deep", "state_ref": {"base": TAU_ROW["state_ref"]["base"], "patch": stacked_ops()}}


@pytest.mark.parametrize("mode", ["mdp", "mdp-view"])
def test_a_composed_state_past_the_depth_limit_is_a_bad_record_named_at_its_line(tmp_path, mode):
    path = _bench(tmp_path, [TAU_ROW, _deep_row()])
    args = ["eval", "--model", "executor", "--benchmark", str(path), "--prompt-mode", mode, "--no-progress",
            "--runs-root", str(tmp_path / "runs")]
    for _ in range(2):  # a re-run says the same: nothing crashes, nothing is retried
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 1, result.output
        assert (f"{path}:2: state_ref.patch op 1 (add /deep/a/a" in result.output
                and f"nests the state deeper than {MAX_STATE_DEPTH} levels" in result.output), result.output
        assert "RecursionError" not in result.output and not (tmp_path / "runs").exists()


def test_each_op_is_checked_before_it_applies():
    row = _deep_row()
    with pytest.raises(StateRefError, match=r"^state_ref.patch op 1 \(add /deep/a/a.*deeper than 200 levels"):
        resolve(row, V2 / "tau_states")["state"]
    shallow = {**TAU_ROW, "state_ref": {"base": TAU_ROW["state_ref"]["base"], "patch": stacked_ops(1, 190)}}
    assert len(json.dumps(resolve(shallow, V2 / "tau_states")["state"]["deep"])) > 190 * 5  # one op: within the limit
    copy_deep = [{"op": "add", "path": "/deep", "value": nested(150)},
                 {"op": "copy", "from": "/deep", "path": "/deep" + "/a" * 100 + "/b"}]  # copy stacks levels too
    with pytest.raises(StateRefError, match=r"op 1 \(copy .*deeper than 200 levels"):
        resolve({**TAU_ROW, "state_ref": {"base": TAU_ROW["state_ref"]["base"], "patch": copy_deep}},
                V2 / "tau_states")["state"]


def test_a_chained_step_patch_is_bounded_the_same_way(tmp_path):
    episode = json.loads((V2 / "tau_chained.jsonl").open(encoding="utf-8").readline())
    episode["steps"][0]["patch"] = stacked_ops()
    path = tmp_path / "tau_chained_x.jsonl"
    _bench(tmp_path, [])
    path.write_text(json.dumps(episode) + "\n")
    from envsim.construction.chained import load_episodes

    with pytest.raises(ValueError, match=rf"^{path}:1: steps\[0\]\.patch op 1 .*deeper than 200 levels"):
        load_episodes(str(path))


def test_an_answer_that_stacks_depth_is_a_scored_failure_not_a_crash():
    with pytest.raises(ValueError, match="patch op 1 .*deeper than 200 levels"):
        apply_prediction({"x": 1}, stacked_ops(3, 150))
    assert nesting_problem({"op": "add", "path": "/a/b", "value": nested(198)}, {}) is None
    assert nesting_problem({"op": "add", "path": "/a/b", "value": nested(199)}, {}) is not None
    assert nesting_problem({"op": "remove", "path": "/a" * 300}, {}) is None  # removing never deepens


def test_loading_names_the_deep_row_with_the_others_untouched(tmp_path):
    path = _bench(tmp_path, [TAU_ROW, _deep_row()])
    with pytest.raises(BenchmarkFileError, match=rf"^{path}:2: state_ref.patch op 1"):
        load(str(path))


def test_a_recursion_error_while_classifying_one_miss_names_it_and_classifies_the_others(monkeypatch):
    """The crash site of the audit (``executor_misses`` -> ``json_copy``) is closed by the bound above; should any
    record still be too deep for our code there, it is one ``bad_record`` entry and the run goes on."""
    records = [{"id": f"r{i}", "env": "e", "action": {"name": "t"}, "stratum": "simple"} for i in range(3)]
    rows = {r["id"]: {"status": "scored", "fm": False, "cm": False} for r in records}
    monkeypatch.setattr("envsim.evaluation.prompting.prompts.build_messages", lambda record, *a, **k: [record["id"]])

    def entry(record, row, messages):
        if record["id"] == "r1":
            raise RecursionError("maximum recursion depth exceeded")
        return {"id": record["id"], "cause": "outside_prompt"}

    monkeypatch.setattr(executor_misses, "miss_entry", entry)
    misses = executor_misses.single_misses(records, rows, "mdp", "2")
    assert [m["cause"] for m in misses] == ["outside_prompt", "bad_record", "outside_prompt"]
    assert misses[1]["id"] == "r1" and misses[1]["detail"].startswith("RecursionError")
