"""Sandbox working directories left behind by a killed EnvSim (kill -9) are removed at the next start (issue 45):
only this user's, only those whose EnvSim process is gone."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from envsim.envs.sandbox import runner as sandbox
from envsim.envs.sandbox import WORKDIR_PREFIX, sweep_stale_workdirs


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_the_sweep_removes_only_directories_of_processes_that_are_gone(tmp_path):
    dead = tmp_path / f"{WORKDIR_PREFIX}{_dead_pid()}-abc123"
    dead.mkdir(mode=0o555)
    alive = tmp_path / f"{WORKDIR_PREFIX}{os.getpid()}-def456"
    alive.mkdir()
    legacy = tmp_path / f"{WORKDIR_PREFIX}xyz789"  # written before the pid was in the name: left alone
    legacy.mkdir()
    target = tmp_path / "precious"
    target.mkdir()
    link = tmp_path / f"{WORKDIR_PREFIX}{_dead_pid()}-link"
    link.symlink_to(target)
    removed = sweep_stale_workdirs(str(tmp_path), force=True)
    assert removed == [str(dead)]
    assert not dead.exists() and alive.is_dir() and legacy.is_dir() and link.is_symlink() and target.is_dir()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox runs on Linux only")
def test_a_worker_directory_left_by_kill_9_is_removed_when_the_next_worker_starts(tmp_path, monkeypatch):
    script = textwrap.dedent("""
        import os, sys, tempfile, time
        tempfile.tempdir = sys.argv[1]
        from envsim.envs.sandbox import confine as sandbox_confine
        from envsim.envs.sandbox.runner import Limits, _Worker, _setup
        source = "class Probe:\\n    def ping(self):\\n        return 1\\n"
        worker = _Worker(_setup({"source": source, "class_name": "Probe", "load": "attrs", "tools": ["ping"]},
                                Limits(), tripwire=True, confine=sandbox_confine.LAYERS))
        print(worker._workdir, flush=True)
        time.sleep(60)
    """)
    killed = subprocess.Popen([sys.executable, "-c", script, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    workdir = Path(killed.stdout.readline().strip())
    killed.kill()  # SIGKILL: nothing of EnvSim runs after it
    killed.wait()
    assert workdir.is_dir() and workdir.name.startswith(f"{WORKDIR_PREFIX}{killed.pid}-")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and sandbox.pid_alive(killed.pid):
        time.sleep(0.05)
    monkeypatch.setattr(sandbox, "_SWEPT", [])
    monkeypatch.setattr(sandbox.tempfile, "tempdir", str(tmp_path))
    assert sweep_stale_workdirs() == [str(workdir)] and not workdir.exists()
