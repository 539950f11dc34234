"""``envsim.evaluate`` (the Python API under ``envsim eval``): the documented example (docs/python-api.md)
runs, stop reasons are typed, every input check goes through the real command, a tier's missing extra stops
the run before any tier, small groups are marked, and the eval modules import without cycles."""

from __future__ import annotations

import ast
import importlib.util
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import envsim
from envsim.cli import main
from envsim.evaluation.reporting.console import SMALL_N_NOTE, format_summary
from envsim.evaluation.errors import BenchmarkUnavailable, EvalStopped, InvalidOption, MissingRequirement
from tests.fixtures.docs import DOCS, python_block

PYTHON_API_PAGE = DOCS / "python-api.md"


def documented_evaluate_example() -> str:
    """The ```python block of docs/python-api.md that calls ``envsim.evaluate``."""
    return python_block(PYTHON_API_PAGE, "envsim.evaluate(")


def test_documented_example_scores_from_python(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ENVSIM_PROGRESS", "off")
    namespace: dict = {}
    exec(compile(documented_evaluate_example(), str(PYTHON_API_PAGE), "exec"), namespace)  # noqa: S102 - our own docs
    summary = namespace["summary"]
    on_disk = json.loads((summary.run_dir / "summary.json").read_text())
    assert summary.data == on_disk
    assert (summary.scored, summary.total) == (40, 40) and summary.kind == "single"
    assert summary.overall.cm == on_disk["overall"]["cm"] and summary.overall.n == 40
    assert set(summary.by_stratum) == set(on_disk["by_stratum"])
    assert f"CM {on_disk['overall']['cm']:.3f}" in capsys.readouterr().out


def test_typed_stop_reasons(tmp_path):
    with pytest.raises(InvalidOption) as exc:
        envsim.evaluate("null", limit=0, runs_root=tmp_path)
    assert exc.value.option == "--limit"
    with pytest.raises(BenchmarkUnavailable):
        envsim.evaluate("null", benchmark=str(tmp_path / "missing.jsonl"), runs_root=tmp_path)
    with pytest.raises(InvalidOption, match="unknown tier"):
        envsim.evaluate("null", benchmark="v2", tier="nope", runs_root=tmp_path)
    assert issubclass(MissingRequirement, EvalStopped)
    assert not any(tmp_path.iterdir())  # nothing was created


@pytest.mark.parametrize("args, option", [
    (["--limit", "0"], "--limit"), (["--limit", "-5"], "--limit"), (["--concurrency", "0"], "--concurrency"),
    (["--temperature", "-3"], "--temperature"), (["--max-tokens", "-1"], "--max-tokens"),
])
def test_cli_refuses_values_no_run_can_use(tmp_path, args, option):
    result = CliRunner().invoke(main, ["eval", "--model", "null", "--runs-root", str(tmp_path), *args])
    assert result.exit_code == 2, result.output
    assert option in result.output and "range" in result.output
    assert not any(tmp_path.iterdir())


def test_missing_tier_extra_stops_before_any_tier_when_all_tiers_are_asked_for(tmp_path, monkeypatch):
    from envsim.evaluation.running import tiers

    monkeypatch.setattr(tiers, "module_available", lambda name: name != "bfcl_eval")
    result = CliRunner().invoke(main, ["eval", "--model", "oracle", "--benchmark", "v2", "--tier", "all",
                                       "--runs-root", str(tmp_path)])
    assert result.exit_code == 1, result.output
    assert "tier bfcl needs bfcl_eval" in result.output and "bfcl-eval==" in result.output
    assert "--tier core" in result.output
    assert not any(tmp_path.iterdir())  # no tier ran
    # a model behind an endpoint in mdp mode reads only the records: nothing is required of it
    options = tiers.EvalOptions(model="my-sim")
    tiers.check_requirements(["core", "bfcl"], options)
    with pytest.raises(MissingRequirement) as exc:
        tiers.check_requirements(["bfcl"], tiers.EvalOptions(model="my-sim", prompt_mode="full-class"))
    assert set(exc.value.missing) == {"bfcl"}


def test_small_groups_are_marked(tmp_path):
    group = {"n": 1, "fm": 0.0, "cm": 0.0, "cm_lenient": 0.0, "cm_original": 0.0,
             "ci": {r: [0.0, 0.0] for r in ("fm", "cm", "cm_lenient", "cm_original")}}
    big = {**group, "n": 40}
    summary = {"model": "m", "benchmark": "b", "split": "s", "prompt_mode": "mdp", "scored": 41,
               "infra_failures": 0, "overall": big, "by_stratum": {"failure": group, "medium": big}}
    lines = format_summary(summary, tmp_path).splitlines()
    assert lines[3].startswith("failure         1*") and lines[4].startswith("medium         40 ")
    assert SMALL_N_NOTE in lines
    result = CliRunner().invoke(main, ["eval", "--model", "null", "--limit", "5", "--runs-root", str(tmp_path),
                                       "--no-progress"])
    assert result.exit_code == 0, result.output
    assert SMALL_N_NOTE in result.output
    report = next(tmp_path.glob("*/report.md")).read_text()   # report.md marks the same groups the same way
    assert "| all | 5\\* |" in report and "\n\\" + SMALL_N_NOTE + "\n" in report
    summary = json.loads(next(tmp_path.glob("*/summary.json")).read_text())
    for name, group in summary["by_stratum"].items():
        if group["n"]:
            assert f"| {name} | {group['n']}\\* |" in report


def _module_files(package: str) -> dict[str, Path]:
    """Module name -> file of every module under ``package`` (the installed layout maps top-level folders)."""
    spec = importlib.util.find_spec(package)
    root = Path(spec.origin).parent
    return {".".join([package, *p.relative_to(root).with_suffix("").parts]).removesuffix(".__init__"): p
            for p in root.rglob("*.py")}


def _top_level_imports(path: Path) -> set[str]:
    """``envsim...`` modules imported at module level (not inside functions) by the file at ``path``."""
    found = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("envsim"):
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("envsim")}
    return found


API_MODULES = {  # the construct / train-data API modules the CLI calls: checked for cycles with it
    "envsim.construction.api", "envsim.construction.construct_options", "envsim.construction.construct_outputs",
    "envsim.construction.errors", "envsim.construction.single_split", "envsim.construction.tier_splits",
    "envsim.construction.tracks", "envsim.training.api", "envsim.training.errors", "envsim.training.run_files"}


def test_eval_api_and_cli_have_no_import_cycle_and_stay_small():
    files = {**_module_files("envsim.evaluation"), **_module_files("envsim.cli"),
             **{name: path for name, path in _module_files("envsim.construction").items() if name in API_MODULES},
             **{name: path for name, path in _module_files("envsim.training").items() if name in API_MODULES}}
    graph = {name: {m for m in _top_level_imports(path) if m in files} for name, path in files.items()}

    def reaches(start: str, target: str, seen: set[str]) -> bool:
        return any(m == target or (m not in seen and not seen.add(m) and reaches(m, target, seen))
                   for m in graph.get(start, ()))

    cycles = sorted(name for name in graph if reaches(name, name, set()))
    assert not cycles, f"module-level import cycles through: {cycles}"
    cli_modules = [name for name in files if name.startswith("envsim.cli")]
    assert {"envsim.cli.construct_cmd", "envsim.cli.train_cmd", "envsim.cli.eval_cmd"} <= set(cli_modules)
    oversized = {name: n for name in cli_modules if (n := len(files[name].read_text().splitlines())) > 200}
    assert not oversized, f"CLI modules over 200 lines: {oversized}"
    for name in files:  # every evaluation and CLI module imports on its own
        if not name.endswith(("inspect_task", "openenv_env")):
            importlib.import_module(name)
