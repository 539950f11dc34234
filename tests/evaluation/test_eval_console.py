"""The eval console's headline names the prompt, the answer format and parse-valid (count and %); a misspelt
built-in model gets a "did you mean" (issue 55, item 6)."""

from __future__ import annotations

from click.testing import CliRunner

from envsim.cli import main
from envsim.evaluation.reporting.console import format_summary


def test_headline_names_the_answer_format_and_parse_valid(tmp_path):
    group = {"n": 20, "fm": 0.0, "cm": 0.1, "cm_lenient": 0.1, "cm_original": 0.1, "parse_failure_rate": 0.15,
             "ci": {r: [0.0, 0.2] for r in ("fm", "cm", "cm_lenient", "cm_original")}}
    summary = {"model": "sft", "benchmark": "v1", "split": "test", "prompt_mode": "mdp-view", "prompt_version": "3",
               "response_format": "json-schema", "scored": 20, "infra_failures": 0, "overall": group,
               "by_stratum": {}}
    headline = format_summary(summary, tmp_path).splitlines()[0]
    assert headline == ("sft on v1/test (mdp-view v3, answers json-schema): 20 scored, parse-valid 17 (85.0%), "
                        "0 infrastructure failures")


def test_eval_prints_the_headline_and_suggests_close_built_in_names(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    ok = CliRunner().invoke(main, ["eval", "--model", "null", "--limit", "3", "--runs-root", str(tmp_path),
                                   "--no-progress"])
    assert ok.exit_code == 0, ok.output
    assert "null on v1/test (mdp v1, answers free): 3 scored, parse-valid 3 (100.0%), 0 infrastructure" in ok.output
    for typo, meant in (("nul", "null"), ("Oracle", "oracle"), ("executr", "executor")):
        result = CliRunner().invoke(main, ["eval", "--model", typo, "--limit", "1", "--runs-root", str(tmp_path)])
        assert result.exit_code == 1 and f"did you mean {meant!r}" in result.output, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null-v1-test-mdp-n3"]   # nothing made for a typo
