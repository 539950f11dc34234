"""Serve a model behind an OpenAI-compatible endpoint: ``vllm serve`` on GPU machines, llama.cpp
(llama-cpp-python's server, on a GGUF file converted from the checkpoint) or ``transformers serve`` on CPU.
``start_server`` starts the server, waits until it answers a chat completion, and returns the base URL to
pass to ``envsim eval --base-url``."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

Backend = Literal["auto", "vllm", "llama.cpp", "transformers"]
BACKENDS: tuple[str, ...] = ("auto", "vllm", "llama.cpp", "transformers")
#: llama.cpp's context length unless ``ctx`` says otherwise (prompt + answer tokens of one request).
DEFAULT_CTX = 4096


def cuda_available() -> bool:
    """Whether a CUDA device is visible (torch when importable, else ``nvidia-smi``)."""
    try:
        import torch

        return bool(torch.cuda.is_available())
    except ImportError:
        return shutil.which("nvidia-smi") is not None


def llama_cpp_available() -> bool:
    """Whether llama-cpp-python is importable here (without importing it: that loads the native library)."""
    return importlib.util.find_spec("llama_cpp") is not None


def resolve_backend(backend: str) -> str:
    """``auto``: vLLM when it and a GPU are there, else llama.cpp when llama-cpp-python is installed, else
    transformers; any other backend as it is."""
    if backend != "auto":
        return backend
    if shutil.which("vllm") and cuda_available():
        return "vllm"
    return "llama.cpp" if llama_cpp_available() else "transformers"


def default_threads(cpus: int | None = None) -> int:
    """llama.cpp threads: 1 on machines with at most 2 CPUs (a second thread there made decoding 4-10x slower,
    measured on a loaded 2-core machine), else half the CPUs (about the physical cores), at most 16."""
    cpus = cpus if cpus is not None else (os.cpu_count() or 1)
    return 1 if cpus <= 2 else min(cpus // 2, 16)


def llama_cpp_command(gguf: str, host: str, port: int, name: str, *, threads: int | None = None,
                      ctx: int = DEFAULT_CTX) -> list[str]:
    """llama-cpp-python's OpenAI-compatible server on ``gguf``, answering as ``name``, with a prompt cache
    (run through ``llama_cpp_server``, which also takes OpenAI's ``json_schema`` response format)."""
    threads = threads or default_threads()
    return [sys.executable, "-m", "envsim.training.llama_cpp_server", "--model", gguf, "--model_alias", name, "--host", host,
            "--port", str(port), "--n_threads", str(threads), "--n_threads_batch", str(threads), "--n_ctx", str(ctx),
            "--cache", "true", "--logits_all", "false"]


def serve_command(model: str, backend: Backend, host: str, port: int, name: str | None = None, *,
                  threads: int | None = None, ctx: int = DEFAULT_CTX) -> list[str]:
    """The server command line for ``backend`` (``auto``: see ``resolve_backend``). For llama.cpp ``model`` is the
    GGUF file to load (``gguf_convert.gguf_for`` makes one from a checkpoint) and ``name`` the model name it
    answers as; the other backends take the checkpoint itself."""
    backend = resolve_backend(backend)  # type: ignore[assignment]
    if backend == "vllm":
        return ["vllm", "serve", model, "--host", host, "--port", str(port), "--served-model-name", name or model]
    if backend == "llama.cpp":
        return llama_cpp_command(model, host, port, name or model, threads=threads, ctx=ctx)
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
                 ready_timeout: float = 600.0, log_path: str | None = None, *, threads: int | None = None,
                 quantize: str = "f16", ctx: int = DEFAULT_CTX,
                 progress: Callable[[str], None] | None = None) -> RunningServer:
    """Start the server and wait until it answers; raises ``RuntimeError`` with the log tail if it does not.

    llama.cpp only: a checkpoint directory is converted to a GGUF file of type ``quantize`` first (cached; a
    ``.gguf`` file is served as it is), served with ``threads`` threads (``default_threads``) and a context of
    ``ctx`` tokens; ``progress`` receives the conversion's progress lines. The server answers to any model
    name, ``model`` as given included (what ``envsim eval --model`` sends)."""
    backend = resolve_backend(backend)  # type: ignore[assignment]
    if backend == "llama.cpp":
        if not llama_cpp_available():
            from envsim.training.gguf_convert import INSTALL_LINE

            raise RuntimeError(f"--backend llama.cpp needs llama-cpp-python: {INSTALL_LINE}")
        from envsim.training.gguf_convert import GgufUnavailable, gguf_for

        try:
            gguf = gguf_for(model, quantize, progress=progress)
        except GgufUnavailable as exc:
            raise RuntimeError(str(exc)) from None
        command = serve_command(str(gguf), backend, host, port, model, threads=threads, ctx=ctx)
    else:
        command = serve_command(model, backend, host, port)
        executable = find_executable(command[0])
        if executable is None:
            raise RuntimeError(f"{command[0]!r} not found: install vLLM (GPU) or the [train] extra "
                               "(transformers serve)")
        command[0] = executable
    from envsim.safe_files import open_fresh

    log = open_fresh(log_path) if log_path else subprocess.DEVNULL  # owned by the process; never through a link
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
