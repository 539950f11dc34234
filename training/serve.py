"""Serve a model behind an OpenAI-compatible endpoint: ``vllm serve`` on GPU machines, ``transformers
serve`` on CPU. ``serve`` starts the server, waits until it answers a chat completion, and returns
the base URL to pass to ``envsim eval --base-url``."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Literal

Backend = Literal["auto", "vllm", "transformers"]


def cuda_available() -> bool:
    """Whether a CUDA device is visible (torch when importable, else ``nvidia-smi``)."""
    try:
        import torch

        return bool(torch.cuda.is_available())
    except ImportError:
        return shutil.which("nvidia-smi") is not None


def serve_command(model: str, backend: Backend, host: str, port: int, name: str | None = None) -> list[str]:
    """The server command line for ``backend`` (``auto``: vLLM when it and a GPU are there)."""
    if backend == "auto":
        backend = "vllm" if shutil.which("vllm") and cuda_available() else "transformers"
    if backend == "vllm":
        return ["vllm", "serve", model, "--host", host, "--port", str(port), "--served-model-name", name or model]
    return ["transformers", "serve", model, "--host", host, "--port", str(port), "--device",
            "auto" if cuda_available() else "cpu"]


def find_executable(name: str) -> str | None:
    """``name`` on PATH, else next to this Python (a virtual environment used without activating it)."""
    found = shutil.which(name)
    if found:
        return found
    sibling = os.path.join(os.path.dirname(sys.executable), name)
    return sibling if os.access(sibling, os.X_OK) else None


@dataclass
class RunningServer:
    """A started server process and its base URL."""

    process: subprocess.Popen
    base_url: str
    model: str

    def stop(self, timeout: float = 20.0) -> None:
        """Stop the server: SIGINT first (clean shutdown), SIGKILL after ``timeout`` seconds."""
        if self.process.poll() is not None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGINT)
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        except ProcessLookupError:
            pass


def answers(base_url: str, model: str, timeout: float = 10.0) -> bool:
    """Whether the endpoint answers a one-token chat completion."""
    body = json.dumps({"model": model, "messages": [{"role": "user", "content": "ping"}], "max_tokens": 1}).encode()
    request = urllib.request.Request(f"{base_url}/chat/completions", data=body,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status == 200 and "choices" in json.loads(response.read() or b"{}")
    except (urllib.error.URLError, OSError, ValueError):
        return False


def start_server(model: str, backend: Backend = "auto", host: str = "127.0.0.1", port: int = 8000,
                 ready_timeout: float = 600.0, log_path: str | None = None) -> RunningServer:
    """Start the server and wait until it answers; raises ``RuntimeError`` with the log tail if it does not."""
    command = serve_command(model, backend, host, port)
    executable = find_executable(command[0])
    if executable is None:
        raise RuntimeError(f"{command[0]!r} not found: install vLLM (GPU) or the [train] extra (transformers serve)")
    command[0] = executable
    log = open(log_path, "w") if log_path else subprocess.DEVNULL  # noqa: SIM115 - owned by the process
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    server = RunningServer(process, f"http://{host}:{port}/v1", model)
    deadline = time.monotonic() + ready_timeout
    try:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                tail = open(log_path).read()[-2000:] if log_path else ""
                raise RuntimeError(f"server exited with code {process.returncode} before answering\n{tail}")
            if answers(server.base_url, model):
                return server
            time.sleep(1.0)
    except KeyboardInterrupt:  # Ctrl-C while it loads: the server (in its own session) goes too
        server.stop()
        raise
    server.stop()
    raise RuntimeError(f"server did not answer within {ready_timeout:.0f} s")
