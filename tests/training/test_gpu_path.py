"""benchmarks/gpu_path_check.py: the GPU path at tiny scale on a real CUDA device, and its bookkeeping anywhere."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.training.conftest import BENCHMARKS, load_benchmark


@pytest.fixture
def check(monkeypatch, tmp_path):
    """The script as a module, with its five steps replaced by recorders (no training runs)."""
    module = load_benchmark("gpu_path_check")
    calls: list[str] = []

    def step(name: str, raises: bool = False, ok: bool = True):
        def run(work: Path, quick: bool) -> dict:
            calls.append(name)
            if raises:
                raise RuntimeError(f"{name} broke")
            return {"ok": ok}
        return run

    def install(**behaviour) -> None:
        steps = {name: (step(name, **behaviour.get(name, {})), needs) for name, (_, needs) in module.STEPS.items()}
        monkeypatch.setattr(module, "STEPS", steps)

    monkeypatch.setattr(module, "device_facts", lambda: {"torch": "x", "cuda": False, "device": None})
    return module, install, calls


def run_main(module, monkeypatch, tmp_path, *extra: str) -> tuple[int, dict]:
    monkeypatch.setattr(sys, "argv", ["gpu_path_check.py", "--work", str(tmp_path / "w"), *extra])
    code = module.main()
    return code, json.loads((tmp_path / "w" / "gpu_path_check.json").read_text())


def test_a_failed_step_does_not_stop_the_others_and_sets_the_exit_code(check, monkeypatch, tmp_path):
    module, install, calls = check
    install(**{"zero3": {"ok": False}})
    code, results = run_main(module, monkeypatch, tmp_path)
    assert code == 1 and calls == ["learning", "cli-sft", "zero3", "rl", "serve-eval"]
    assert [name for name in module.STEPS if results[name]["ok"]] == ["learning", "cli-sft", "rl", "serve-eval"]


def test_a_step_that_raised_skips_the_steps_that_need_its_output(check, monkeypatch, tmp_path):
    module, install, calls = check
    install(**{"rl": {"raises": True}})
    code, results = run_main(module, monkeypatch, tmp_path)
    assert code == 1 and "serve-eval" not in calls
    assert results["rl"]["error"] == "RuntimeError: rl broke"
    assert results["serve-eval"] == {"ok": False, "skipped": "needs rl"}


def test_a_chosen_subset_runs_alone_and_passes_when_its_steps_pass(check, monkeypatch, tmp_path):
    module, install, calls = check
    install()
    code, results = run_main(module, monkeypatch, tmp_path, "--steps", "serve-eval")
    assert code == 0 and calls == ["serve-eval"] and set(results) == {"torch", "cuda", "device", "serve-eval"}


@pytest.mark.gpu
@pytest.mark.train
def test_every_step_of_the_gpu_path_passes_on_a_cuda_device(tmp_path):
    torch = pytest.importorskip("torch")
    pytest.importorskip("llamafactory", reason="needs the [train] extra")
    pytest.importorskip("deepspeed", reason="needs the [distributed] extra")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    out = tmp_path / "figures.json"
    done = subprocess.run([sys.executable, str(BENCHMARKS / "gpu_path_check.py"), "--work", str(tmp_path / "w"),
                           "--json", str(out)], capture_output=True, text=True, timeout=1200)
    results = json.loads(out.read_text())
    assert done.returncode == 0, done.stdout[-3000:]
    assert all(results[name]["on_gpu"] for name in ("learning", "cli-sft", "zero3")), results
    assert results["learning"]["after"]["parse_valid"] >= results["learning"]["before"]["parse_valid"] + 0.25
    assert results["rl"]["steps_logged"] == 2 and results["serve-eval"]["infra_failures"] == 0
