"""Helpers of the CPU training tests: put the venv's launchers on PATH, serve a checkpoint and evaluate it."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import pytest
from click.testing import CliRunner

from envsim.cli import main

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def load_benchmark(name: str):
    """A script of ``benchmarks/`` imported as a module (its functions tested without running it)."""
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


RUN_FILES = ("config.json", "results.jsonl", "summary.json", "report.md", "cm_by_delta.png")


@pytest.fixture
def venv_on_path(monkeypatch) -> Path:
    """The running interpreter's bin directory first on PATH (llamafactory-cli, envsim, transformers)."""
    bin_dir = Path(sys.executable).parent
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    return bin_dir


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def serve_and_evaluate(venv_on_path) -> Callable[[Path, Path], dict]:
    """``f(checkpoint, run_dir)``: envsim serve (transformers) -> envsim eval --limit 20 -> Ctrl-C; returns summary."""

    def run(checkpoint: Path, run_dir: Path) -> dict:
        port = _free_port()
        serve = subprocess.Popen([str(venv_on_path / "envsim"), "serve", "--model", str(checkpoint), "--backend",
                                  "transformers", "--port", str(port), "--ready-timeout", "240"],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            first = serve.stdout.readline()
            assert first.startswith(f"serving {checkpoint} at http://127.0.0.1:{port}/v1"), first
            evaluated = CliRunner().invoke(main, ["eval", "--model", str(checkpoint), "--base-url",
                                                  f"http://127.0.0.1:{port}/v1", "--limit", "20", "--max-tokens",
                                                  "64", "--run-dir", str(run_dir)])
            assert evaluated.exit_code == 0, evaluated.output
        finally:
            serve.send_signal(signal.SIGINT)
            serve.wait(60)
        for name in RUN_FILES:
            assert (run_dir / name).exists(), name
        time.sleep(0.5)
        with socket.socket() as probe:                     # the server is gone after Ctrl-C
            assert probe.connect_ex(("127.0.0.1", port)) != 0
        return json.loads((run_dir / "summary.json").read_text())

    return run
