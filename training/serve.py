"""Serve a model behind an OpenAI-compatible endpoint: ``vllm serve`` on GPU machines, llama.cpp
(llama-cpp-python's server, on a GGUF file converted from the checkpoint) or ``transformers serve`` on CPU.
``start_server`` starts the server, waits until it answers a chat completion, and returns the base URL to
pass to ``envsim eval --base-url``.

What it guards against: a port another server already answers on is refused before anything starts (else that
server would pass the readiness check and be evaluated instead; the llama.cpp server also proves it is ours by a
nonce); a llama.cpp chat template that does not render an EnvSim-shaped conversation within time, memory and
output bounds is refused before the server starts (``chat_template_probe``); the server dies with the process
that started it, however that ends (``process_guard``: ``kill -9`` of ``envsim serve`` included); a server that
stops before answering is reported with the last lines it wrote (``LOG_TAIL_LINES``, control characters
escaped), with or without a log file; an API key (``api_key``) reaches llama.cpp and vLLM through their
environment, never their command line."""

from __future__ import annotations

import collections
import importlib.util
import ipaddress
import json
import os
from pathlib import Path
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, Any, Literal

Backend = Literal["auto", "vllm", "llama.cpp", "transformers"]
BACKENDS: tuple[str, ...] = ("auto", "vllm", "llama.cpp", "transformers")
#: llama.cpp's context length unless ``ctx`` says otherwise (prompt + answer tokens of one request).
DEFAULT_CTX = 4096
#: Lines of the server's output kept to show when it fails.
LOG_TAIL_LINES = 30


class ServerStartFailed(RuntimeError):
    """The server could not be started or did not answer (the message says why, with its last log lines)."""


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
                      ctx: int = DEFAULT_CTX, copy_tested_values: bool = False) -> list[str]:
    """llama-cpp-python's OpenAI-compatible server on ``gguf``, answering as ``name``, with a prompt cache
    (run through ``llama_cpp_server``, which also takes OpenAI's ``json_schema`` response format; with
    ``copy_tested_values`` tested old values are copied from the prompt: ``llama_cpp_copying``)."""
    threads = threads or default_threads()
    return [sys.executable, "-m", "envsim.training.llama_cpp_server", "--model", gguf, "--model_alias", name, "--host", host,
            "--port", str(port), "--n_threads", str(threads), "--n_threads_batch", str(threads), "--n_ctx", str(ctx),
            "--cache", "true", "--logits_all", "false", *(["--copy_tested_values"] if copy_tested_values else [])]


def serve_command(model: str, backend: Backend, host: str, port: int, name: str | None = None, *,
                  threads: int | None = None, ctx: int = DEFAULT_CTX, copy_tested_values: bool = False) -> list[str]:
    """The server command line for ``backend`` (``auto``: see ``resolve_backend``). For llama.cpp ``model`` is the
    GGUF file to load (``gguf_convert.gguf_for`` makes one from a checkpoint) and ``name`` the model name it
    answers as; the other backends take the checkpoint itself."""
    backend = resolve_backend(backend)  # type: ignore[assignment]
    if backend == "vllm":
        return ["vllm", "serve", model, "--host", host, "--port", str(port), "--served-model-name", name or model]
    if backend == "llama.cpp":
        return llama_cpp_command(model, host, port, name or model, threads=threads, ctx=ctx,
                                 copy_tested_values=copy_tested_values)
    return ["transformers", "serve", model, "--host", host, "--port", str(port), "--device",
            "auto" if cuda_available() else "cpu"]


def find_executable(name: str) -> str | None:
    """``name`` on PATH, else next to this Python (a virtual environment used without activating it)."""
    found = shutil.which(name)
    if found:
        return found
    sibling = os.path.join(os.path.dirname(sys.executable), name)
    return sibling if os.access(sibling, os.X_OK) else None


class LogTail:
    """Reads a server's output in a thread: each line goes to the log file (when there is one) and the last
    ``LOG_TAIL_LINES`` are kept to show on failure."""

    def __init__(self, stream: IO[bytes], log: IO[bytes] | None) -> None:
        self.lines: collections.deque[str] = collections.deque(maxlen=LOG_TAIL_LINES)
        self.log = log
        self.thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self.thread.start()

    def _read(self, stream: IO[bytes]) -> None:
        for raw in iter(stream.readline, b""):
            if self.log is not None:
                self.log.write(raw)
                self.log.flush()
            self.lines.append(raw.decode("utf-8", "replace").rstrip("\n")[:2000])
        stream.close()
        if self.log is not None:
            self.log.close()

    def text(self, wait: float = 2.0) -> str:
        """The kept lines, control characters escaped (after up to ``wait`` seconds for the output to end)."""
        from envsim.control_chars import escape_lines

        self.thread.join(wait)
        return escape_lines("\n".join(self.lines))


@dataclass
class RunningServer:
    """A started server process and its base URL (``tail``: its last output lines)."""

    process: subprocess.Popen
    base_url: str
    model: str
    tail: LogTail | None = field(default=None, repr=False)

    def exit_message(self) -> str:
        """``server exited with code N``, then its last output lines."""
        lines = self.tail.text() if self.tail is not None else ""
        return (f"server exited with code {self.process.returncode}"
                + (f"; its last lines:\n{lines}" if lines else " (it wrote nothing)"))

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


def answers(base_url: str, model: str, timeout: float = 10.0, api_key: str | None = None) -> bool:
    """Whether the endpoint answers a one-token chat completion."""
    body = json.dumps({"model": model, "messages": [{"role": "user", "content": "ping"}], "max_tokens": 1}).encode()
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {api_key}"} if api_key else {})}
    request = urllib.request.Request(f"{base_url}/chat/completions", data=body, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status == 200 and "choices" in json.loads(response.read() or b"{}")
    except (urllib.error.URLError, OSError, ValueError):
        return False


def shows_nonce(base_url: str, nonce: str, timeout: float = 5.0) -> bool:
    """Whether the server at ``base_url`` is the llama.cpp server started with ``nonce`` (``llama_cpp_server``)."""
    from envsim.training.llama_cpp_server import NONCE_PATH

    root = base_url[: -len("/v1")] if base_url.endswith("/v1") else base_url
    try:
        with urllib.request.urlopen(f"{root}{NONCE_PATH}", timeout=timeout) as response:
            return json.loads(response.read(4096) or b"{}").get("nonce") == nonce
    except (urllib.error.URLError, OSError, ValueError, AttributeError):
        return False


def is_loopback(host: str) -> bool:
    """Whether ``host`` is reachable from this machine only (``localhost``, 127.0.0.0/8, ``::1``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def probe_host(host: str) -> str:
    """The address to connect to for a server bound to ``host`` (the wildcard addresses: the loopback)."""
    return {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host.strip("[]"))


def port_answers(host: str, port: int, timeout: float = 1.0) -> bool:
    """Whether something already accepts connections on ``host``:``port``."""
    try:
        with socket.create_connection((probe_host(host), port), timeout=timeout):
            return True
    except OSError:
        return False


def refuse_taken_port(host: str, port: int) -> None:
    """``ServerStartFailed`` when ``host``:``port`` already answers: a server there (another model, an earlier
    ``envsim serve``) would pass the readiness check and be evaluated in place of this one."""
    if port_answers(host, port):
        raise ServerStartFailed(f"port {port} on {host} already answers (another server is there): refusing to start "
                                "a second one, whose readiness check that server would pass. Stop it, or choose "
                                "another --port")


def backend_environment(backend: str, api_key: str | None, nonce: str) -> dict[str, str]:
    """The server's environment: the API key where the backend reads one (llama.cpp: ``llama_cpp_server``; vLLM:
    ``VLLM_API_KEY``), the llama.cpp server's nonce."""
    env = dict(os.environ)
    env.pop("ENVSIM_SERVE_API_KEY", None)
    if backend == "llama.cpp":
        env["ENVSIM_SERVE_NONCE"] = nonce
        if api_key:
            env["ENVSIM_SERVE_API_KEY"] = api_key
    elif backend == "vllm" and api_key:
        env["VLLM_API_KEY"] = api_key
    return env


#: What a converted GGUF's chat template comes from: the checkpoint's tokenizer files that hold templates.
TEMPLATE_SOURCES = ("tokenizer_config.json", "chat_template.jinja", "chat_template.json")
#: Template-source digests whose GGUF passed the probe in this process (GRPO serves each weight sync anew).
_PASSED_TEMPLATE_SOURCES: set[str] = set()


def template_source_digest(model: str | os.PathLike[str]) -> str | None:
    """SHA-256 over the template-bearing tokenizer files of a checkpoint directory (names and bytes, links not
    followed), ``None`` for anything else (a ``.gguf`` given as it is, an unreadable file): the key under which a
    passed probe is remembered, since the converter writes the template from these files alone."""
    import hashlib

    folder = Path(model)
    if not folder.is_dir():
        return None
    digest = hashlib.sha256()
    files = [folder / name for name in TEMPLATE_SOURCES]
    extra = folder / "additional_chat_templates"
    if extra.is_dir() and not extra.is_symlink():
        files += sorted(extra.glob("*.jinja"))
    for path in files:
        if path.is_symlink():
            return None
        try:
            data = path.read_bytes() if path.is_file() else b""
        except OSError:
            return None
        digest.update(f"{path.relative_to(folder)}\0{len(data)}\0".encode() + data)
    return digest.hexdigest()


def refuse_hostile_template(gguf: str | os.PathLike[str], progress: Callable[[str], None] | None = None,
                            source_digest: str | None = None) -> None:
    """``ServerStartFailed`` naming the class (time, memory, raised, output, unreadable) when the GGUF's chat
    template does not render an EnvSim-shaped conversation within bounds (``chat_template_probe``): llama.cpp
    would render it on every request with no bound, so a hostile one would hang or exhaust the server. A GGUF
    converted from template files (``source_digest``) that already passed in this process is not probed again
    (a GRPO run serves every weight sync from the same tokenizer files)."""
    from envsim.training.chat_template_probe import check_chat_template

    if source_digest is not None and source_digest in _PASSED_TEMPLATE_SOURCES:
        if progress is not None:
            progress(f"chat template of {gguf}: the same template files passed the check before in this process")
        return
    if progress is not None:
        progress(f"checking the chat template of {gguf} ...")
    verdict = check_chat_template(gguf)
    if verdict.refusal is not None:
        raise ServerStartFailed(verdict.message(gguf))
    if source_digest is not None:
        _PASSED_TEMPLATE_SOURCES.add(source_digest)


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` that nothing listens on now (the OS picks it)."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def start_server(model: str, backend: Backend = "auto", host: str = "127.0.0.1", port: int = 8000,
                 ready_timeout: float = 600.0, log_path: str | None = None, *, threads: int | None = None,
                 quantize: str = "f16", ctx: int = DEFAULT_CTX, progress: Callable[[str], None] | None = None,
                 api_key: str | None = None, copy_tested_values: bool = False) -> RunningServer:
    """Start the server and wait until it answers; raises ``ServerStartFailed`` (a ``RuntimeError``) with the
    server's last output lines if it does not, or before anything starts when the port already answers.

    llama.cpp only: a checkpoint directory is converted to a GGUF file of type ``quantize`` first (cached; a
    ``.gguf`` file is served as it is), served with ``threads`` threads (``default_threads``) and a context of
    ``ctx`` tokens; ``progress`` receives the conversion's progress lines. Its chat template is rendered once,
    bounded, before the server starts (``refuse_hostile_template``). The server answers to any model
    name, ``model`` as given included (what ``envsim eval --model`` sends); with ``api_key`` (llama.cpp, vLLM)
    only requests that carry it. ``copy_tested_values`` (llama.cpp only) copies tested old values from each
    prompt into the answer (``llama_cpp_copying``)."""
    backend = resolve_backend(backend)  # type: ignore[assignment]
    if copy_tested_values and backend != "llama.cpp":
        raise ServerStartFailed(f"--copy-tested-values is a llama.cpp decoding option; {backend} does not have it: "
                                "use --backend llama.cpp")
    if api_key and backend == "transformers":
        raise ServerStartFailed("--api-key: transformers serve takes no API key; use --backend llama.cpp or vllm, or "
                                "keep the server on 127.0.0.1 without one")
    refuse_taken_port(host, port)
    if backend == "llama.cpp":
        if not llama_cpp_available():
            from envsim.training.gguf_convert import INSTALL_LINE

            raise ServerStartFailed(f"--backend llama.cpp needs llama-cpp-python: {INSTALL_LINE}")
        from envsim.training.gguf_convert import GgufUnavailable, gguf_for

        source_digest = template_source_digest(model)   # before conversion: what the converter then reads
        try:
            gguf = gguf_for(model, quantize, progress=progress)
        except GgufUnavailable as exc:
            raise ServerStartFailed(str(exc)) from None
        refuse_hostile_template(gguf, progress, source_digest if source_digest == template_source_digest(model)
                                else None)
        command = serve_command(str(gguf), backend, host, port, model, threads=threads, ctx=ctx,
                                copy_tested_values=copy_tested_values)
        refuse_taken_port(host, port)  # again: a conversion may take minutes
    else:
        command = serve_command(model, backend, host, port)
        executable = find_executable(command[0])
        if executable is None:
            raise ServerStartFailed(f"{command[0]!r} not found: install vLLM (GPU) or the [train] extra "
                                    "(transformers serve)")
        command[0] = executable
    return _launch(command, backend, model, host, port, ready_timeout, log_path, api_key)


def _launch(command: list[str], backend: str, model: str, host: str, port: int, ready_timeout: float,
            log_path: str | None, api_key: str | None) -> RunningServer:
    """Start ``command`` (dying with this process), read its output, wait until it answers as ours."""
    from envsim.safe_files import open_fresh
    from envsim.process_guard import child_setup

    nonce = secrets.token_hex(16)
    log = open_fresh(log_path, "wb") if log_path else None  # never through a link
    # llama.cpp's server is one process: SIGKILL; the others get SIGTERM, to stop the processes they started
    death = signal.SIGKILL if backend == "llama.cpp" else signal.SIGTERM
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                               start_new_session=True, env=backend_environment(backend, api_key, nonce),
                               preexec_fn=child_setup(death))
    server = RunningServer(process, f"http://{host}:{port}/v1", model, LogTail(process.stdout, log))
    deadline = time.monotonic() + ready_timeout
    try:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise ServerStartFailed(f"{server.exit_message()}\n(before answering)")
            # llama.cpp: only the server showing this start's nonce counts (another one that took the port since
            # the check above never passes for ours)
            ours = backend != "llama.cpp" or shows_nonce(server.base_url, nonce)
            if ours and answers(server.base_url, model, api_key=api_key):
                return server
            time.sleep(1.0)
    except KeyboardInterrupt:  # Ctrl-C while it loads: the server (in its own session) goes too
        server.stop()
        raise
    server.stop()
    lines = server.tail.text() if server.tail else ""
    raise ServerStartFailed(f"server did not answer within {ready_timeout:.0f} s"
                            + (f"; its last lines:\n{lines}" if lines else ""))

