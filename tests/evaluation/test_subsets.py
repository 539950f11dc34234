"""Fixed id-list subsets (``envsim eval --ids``): reading, selecting, the stratified choice, the shipped list."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from envsim.benchmark import load
from envsim.cli import main
from envsim.evaluation.running.subsets import (SubsetError, ids_sha256, read_ids, select_records, stratified_fitting_ids,
                                       subset_path)

SHIPPED = "v1_test_smollm2_2048"


def records(counts: dict[str, int]) -> list[dict]:
    """Records ordered by stratum, ids ``<stratum>-<i>``, a ``size`` field for the fit predicate."""
    return [{"id": f"{s}-{i}", "stratum": s, "size": i} for s, n in counts.items() for i in range(n)]


def test_read_ids_skips_comments_and_blank_lines_and_refuses_repeats_or_nothing(tmp_path):
    path = tmp_path / "ids.txt"
    path.write_text("# a header\n\na1\n  b2  # why b2\n")
    assert read_ids(path) == ["a1", "b2"]
    path.write_text("a1\na1\n")
    with pytest.raises(SubsetError, match="more than once: a1"):
        read_ids(path)
    path.write_text("# only a comment\n")
    with pytest.raises(SubsetError, match="no ids"):
        read_ids(path)
    with pytest.raises(SubsetError, match="no shipped subset of that name"):
        read_ids("no-such-subset")


def test_select_records_keeps_split_order_and_names_ids_the_split_lacks():
    pool = records({"failure": 3, "simple": 3})
    assert [r["id"] for r in select_records(pool, ["simple-1", "failure-2"])] == ["failure-2", "simple-1"]
    with pytest.raises(SubsetError, match="1 id\\(s\\) are not in this split, e.g. nope"):
        select_records(pool, ["failure-0", "nope"])


def test_ids_hash_ignores_order():
    assert ids_sha256(["b", "a"]) == ids_sha256(["a", "b"]) != ids_sha256(["a", "c"])


def test_stratified_choice_is_proportional_respects_the_predicate_and_is_deterministic():
    pool = records({"failure": 20, "no_change": 80, "simple": 50, "medium": 200, "difficult": 50})
    fits = lambda r: r["size"] % 3 != 0  # noqa: E731 - about two thirds of each stratum fit
    ids = stratified_fitting_ids(pool, fits, 120)
    assert ids == stratified_fitting_ids(pool, fits, 120) and len(set(ids)) == 120
    chosen = [r for r in pool if r["id"] in set(ids)]
    assert all(fits(r) for r in chosen)
    assert Counter(r["stratum"] for r in chosen) == {"failure": 6, "no_change": 24, "simple": 15, "medium": 60,
                                                     "difficult": 15}


def test_stratified_choice_fills_from_other_strata_when_one_has_too_few_that_fit():
    pool = records({"failure": 50, "medium": 50})
    ids = stratified_fitting_ids(pool, lambda r: r["stratum"] == "medium" or r["size"] < 3, 40)
    assert Counter(i.split("-")[0] for i in ids) == {"failure": 3, "medium": 37}
    with pytest.raises(SubsetError, match="only 53 records fit; 60 asked for"):
        stratified_fitting_ids(pool, lambda r: r["stratum"] == "medium" or r["size"] < 3, 60)


def test_shipped_smollm2_subset_is_120_v1_test_ids_in_v1_test_proportions():
    ids = read_ids(SHIPPED)
    test = {str(r["id"]): r for r in load("v1", "test")}
    assert len(ids) == 120 and set(ids) <= set(test)
    assert Counter(test[i]["stratum"] for i in ids) == {"failure": 6, "no_change": 24, "simple": 15, "medium": 60,
                                                         "difficult": 15}
    assert subset_path(SHIPPED).parent.name == "subsets"


def test_eval_ids_scores_exactly_the_listed_samples_and_records_the_list(tmp_path):
    chosen = read_ids(SHIPPED)[::30]
    id_file = tmp_path / "four.txt"
    id_file.write_text("\n".join(chosen) + "\n")
    run = tmp_path / "run"
    result = CliRunner().invoke(main, ["eval", "--model", "oracle", "--ids", str(id_file), "--run-dir", str(run),
                                       "--prompt-mode", "mdp-view", "--prompt-version", "3"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    assert sorted(r["id"] for r in rows) == sorted(chosen)
    assert json.loads((run / "config.json").read_text())["ids_sha256"] == ids_sha256(chosen)
    limited = CliRunner().invoke(main, ["eval", "--model", "null", "--ids", SHIPPED, "--limit", "5",
                                        "--runs-root", str(tmp_path / "runs")])
    assert limited.exit_code == 0, limited.output
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert run_dir.name.endswith(f"-{SHIPPED}-n5")
    assert json.loads((run_dir / "summary.json").read_text())["samples"] == 5


def test_eval_ids_naming_a_sample_outside_the_split_stops_before_the_run(tmp_path):
    id_file = tmp_path / "bad.txt"
    id_file.write_text("not-a-sample-id\n")
    result = CliRunner().invoke(main, ["eval", "--model", "null", "--ids", str(id_file), "--runs-root",
                                       str(tmp_path / "runs")])
    assert result.exit_code == 1
    assert "not in this split, e.g. not-a-sample-id" in result.output
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_unchanged_runs_keep_their_config_hash_without_ids():
    from envsim.evaluation.running.runner import EvalConfig

    assert EvalConfig(model="m").digest() == EvalConfig(model="m", ids_sha256=None).digest()
    assert EvalConfig(model="m").digest() != EvalConfig(model="m", ids_sha256="abc").digest()
