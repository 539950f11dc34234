"""The CPU install: the [cpu] extra's torch pin (a CPU build on Linux x86_64, never beside [train]'s), the CPU
loops' commands naming that install when torch is missing, and ``envsim train fetch-converter`` (the GGUF
converter fetched at install time, not in the middle of the first ``serve``; its progress on stderr, a second run
served from the cache, failures that say what to do)."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from click.testing import CliRunner
from envsim.training import gguf_convert

from envsim.cli import main
from envsim.cli.launch_options import CPU_INSTALL
from tests.training.test_llama_cpp_serve import sdist

ROOT = Path(__file__).resolve().parents[2]
RECIPE = {"name": "tiny-sft", "prompt_mode": "mdp-view", "prompt_version": "3", "envs": ["spa_appointments-v1"],
          "rollout": {"seed": 13, "episodes": 2, "steps": 20}, "cells": [{"stratum": "failure", "n": 3}]}


def extras() -> dict[str, list[str]]:
    """pyproject.toml's optional dependencies."""
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]


def torch_pins(requirements: list[str]) -> list[str]:
    """The torch requirements among ``requirements`` (markers included)."""
    return [r for r in requirements if re.match(r"torch\b(?![-_a-z])", r)]


def test_the_cpu_extra_is_the_cpu_path_with_a_cpu_only_torch_on_linux_x86_64():
    cpu = extras()["cpu"]
    assert "envsim[pretrained,cpu-serve]" in cpu
    assert torch_pins(cpu) == ["torch==2.13.0+cpu; sys_platform == 'linux' and platform_machine == 'x86_64'"]
    assert torch_pins(extras()["train"]) == ["torch==2.11.0"]      # the GPU path's pin: the two never resolve together
    assert 'torch==2.13.0+cpu' in CPU_INSTALL and '".[cpu]"' in CPU_INSTALL  # the message installs what the extra pins


@pytest.fixture(scope="module")
def sft_data(tmp_path_factory) -> Path:
    """SFT data of one environment (3 failure samples)."""
    root = tmp_path_factory.mktemp("cpu-install")
    (root / "recipe.json").write_text(json.dumps(RECIPE))
    result = CliRunner().invoke(main, ["train", "data", "--recipe", str(root / "recipe.json"), "--out",
                                       str(root / "data"), "--cutoff", "8192"])
    assert result.exit_code == 0, result.output
    return root / "data"


@pytest.fixture
def no_torch(monkeypatch):
    """torch looks uninstalled (as in a core install)."""
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))


@pytest.mark.parametrize("command", [["train", "sft", "--device", "cpu", "--finetuning", "freeze"],
                                     ["train", "fit-check"]])
def test_the_cpu_loops_without_torch_stop_with_the_cpu_install_line(command, sft_data, no_torch, tmp_path):
    result = CliRunner().invoke(main, [*command, "--model", str(tmp_path / "model"), "--data", str(sft_data),
                                       "--out", str(tmp_path / "run")])
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)     # no traceback
    assert "needs torch" in result.stderr and CPU_INSTALL in " ".join(result.stderr.split())
    assert not (tmp_path / "run").exists()


def test_fetch_converter_extracts_the_converter_once_and_then_finds_it_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("ENVSIM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(gguf_convert, "llama_cpp_version", lambda: "0.3.36")
    monkeypatch.delenv("ENVSIM_LLAMA_CPP_SDIST", raising=False)
    downloads = []

    def fake_pip(command, **kwargs):
        downloads.append(command)
        sdist(tmp_path / "cache" / "llama-cpp" / "0.3.36" / "sdist" / "llama_cpp_python-0.3.36.tar.gz")
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(gguf_convert.subprocess, "run", fake_pip)
    first = CliRunner().invoke(main, ["train", "fetch-converter"])
    folder = tmp_path / "cache" / "llama-cpp" / "0.3.36" / "converter"
    assert first.exit_code == 0, first.output
    assert (folder / "convert_hf_to_gguf.py").is_file() and len(downloads) == 1
    assert "downloading the llama-cpp-python 0.3.36 sdist" in first.stderr
    assert first.stdout.startswith(f"GGUF converter of llama-cpp-python 0.3.36: {folder} (fetched in ")
    again = CliRunner().invoke(main, ["train", "fetch-converter"])
    assert again.exit_code == 0 and len(downloads) == 1 and again.stderr == ""
    assert again.stdout == f"GGUF converter of llama-cpp-python 0.3.36: {folder} (already in the cache)\n"


def test_fetch_converter_without_llama_cpp_python_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setenv("ENVSIM_CACHE", str(tmp_path / "cache"))

    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", missing)
    result = CliRunner().invoke(main, ["train", "fetch-converter"])
    assert result.exit_code == 1 and '[cpu-serve]' in result.output
    assert not (tmp_path / "cache").exists()


def test_a_failed_download_exits_1_and_says_how_to_give_the_sdist(tmp_path, monkeypatch):
    monkeypatch.setenv("ENVSIM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(gguf_convert, "llama_cpp_version", lambda: "0.3.36")
    monkeypatch.delenv("ENVSIM_LLAMA_CPP_SDIST", raising=False)
    monkeypatch.setattr(gguf_convert.subprocess, "run",
                        lambda command, **kwargs: subprocess.CompletedProcess(command, 1, "", "No route to host"))
    result = CliRunner().invoke(main, ["train", "fetch-converter"])
    assert result.exit_code == 1
    assert "ENVSIM_LLAMA_CPP_SDIST" in result.stderr and "No route to host" in result.stderr
    assert "GGUF converter of" not in result.stdout
