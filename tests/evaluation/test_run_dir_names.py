"""Default run-directory names never lose a setting: a long name is shortened by hashing its tail, never cut
(issue 55, item 2)."""

from __future__ import annotations

from click.testing import CliRunner

from envsim.cli import main
from envsim.evaluation.running.single_run import SLUG_MAX, slug
from envsim.evaluation.running.subsets import read_ids


def test_short_names_are_kept_and_long_ones_end_in_a_hash_of_the_whole_text():
    assert slug("null-v1-test-mdp-n2") == "null-v1-test-mdp-n2"
    assert slug("org/model name") == "org-model-name"
    head = "m" * 70 + "-v1-test-mdp-view-p3-json-schema-v1_test_smollm2_2048"
    names = {slug(head + tail) for tail in ("-n10", "-n1", "-n2", "-n10-rollout", "")}
    assert len(names) == 5 and all(len(n) <= SLUG_MAX and n.startswith("m" * 60) for n in names)
    assert slug(head + "-n10") == slug(head + "-n10")      # the same settings: the same directory (a re-run resumes)


def test_runs_differing_only_in_limit_get_different_default_directories(tmp_path):
    ids = tmp_path / ("a_subset_with_a_rather_long_descriptive_name_" * 2 + ".txt")
    ids.write_text("\n".join(read_ids("v1_test_smollm2_2048")[:20]) + "\n")
    root = tmp_path / "runs"
    for limit in ("10", "1", "10"):
        result = CliRunner().invoke(main, ["eval", "--model", "null", "--ids", str(ids), "--limit", limit,
                                           "--runs-root", str(root), "--no-progress"])
        assert result.exit_code == 0, result.output     # the second --limit 10 resumes its own directory
    names = sorted(p.name for p in root.iterdir())
    assert len(names) == 2 and all(len(n) <= SLUG_MAX for n in names), names
