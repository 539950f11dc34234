"""Run untrusted environment code in confined worker processes, one warm worker per class source.

A worker (``envsim.envs.sandbox.worker``) starts in its own session with a minimal environment and
an empty working directory, imports what a class may use, then confines itself with every layer of
``envsim.envs.sandbox.confine`` (rlimits, unprivileged uid, Landlock, seccomp) before it reads any
call. Each call runs in a fresh child forked from the worker, under a stricter seccomp filter and an
audit-hook tripwire, on a fresh instance and a fresh module namespace: nothing survives between
calls, and workers are never shared between class sources or limits.

The parent talks to a worker over pipes with length-prefixed JSON frames, reads at most
``Limits.answer_bytes`` per answer, checks the per-call nonce and the shape of the answer, and on
its own deadline (wall limit + grace) kills the worker's whole process group and replaces it.
Whatever happens, a call returns ``{"observation", "next_state"}`` or raises ``SandboxError``.

If a confinement layer is unavailable on a machine, the first untrusted call warns once and is
refused, unless the caller opts out (``allow_unconfined=True`` or
``ENVSIM_ALLOW_UNCONFINED_SANDBOX=1``); a layer whose job other active layers do
(``confine.COVERED_BY``: the private uid, for a worker not started as root) is reported
missing but not refused. ``confinement_report()`` says which layers are active, as the worker found
them. Answers are decoded with ``envsim.jsonsafe`` (bounded depth): a next state nested too deep is a
``SandboxError`` with that reason, never a ``RecursionError``.
"""

from __future__ import annotations

import atexit
import collections
import hashlib
import json
import os
import secrets
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from dataclasses import asdict, dataclass
from typing import Any

from envsim import jsonsafe
from envsim.envs.sandbox import confine as sandbox_confine
from envsim.envs.sandbox.worker import encode_frame, judge
from envsim.process_guard import pid_alive

OPT_OUT_VARIABLE = "ENVSIM_ALLOW_UNCONFINED_SANDBOX"
_GRACE_SECONDS = 3.0
_START_SECONDS = 30.0
_MAX_WORKERS = 8


class SandboxError(RuntimeError):
    """Untrusted code broke a limit or a rule, or the sandbox failed; the message says which."""


@dataclass(frozen=True)
class Limits:
    """Resource limits for one sandboxed call (memory applies to the worker and each call)."""

    cpu_seconds: int = 5
    wall_seconds: float = 10.0
    memory_bytes: int = 1 << 30
    answer_bytes: int = 16 << 20
    output_bytes: int = 1 << 20
    request_bytes: int = 64 << 20


def confinement_report() -> dict[str, str | None]:
    """Which confinement layers work on this machine: ``{layer: None if active else reason}``.

    Starts a worker for a trivial class and returns the layers it reports after confining itself.
    ``uid`` is missing when not started as root (the worker keeps your uid); ``landlock-scope``
    where the kernel has no Landlock signal scoping (ABI < 6). ``tripwire`` ``None`` means the audit
    hook is installed in every call: it names attempts, it is not a boundary.
    """
    source = "class Probe:\n    def ping(self) -> dict:\n        return {}\n"
    worker = _Worker(_setup({"source": source, "class_name": "Probe", "load": "attrs", "tools": ["ping"]},
                            Limits(), tripwire=True, confine=sandbox_confine.LAYERS))
    try:
        return dict(worker.layers)
    finally:
        worker.close()


def run_request(request: dict[str, Any], limits: Limits = Limits(), *, allow_unconfined: bool = False,
                fresh: bool = False, tripwire: bool = True,
                confine: tuple[str, ...] = sandbox_confine.LAYERS) -> dict[str, Any]:
    """Run one call ``{"source", "class_name", "load", "tools", "state", "action"}`` in a confined worker.

    An ``action`` of ``None`` runs no tool: the child loads ``state`` and answers the saved state
    (``next_state``), which is how untrusted states are normalised. ``"packages"`` (optional) names optional
    packages the class imports that the worker loads before it confines itself (only ``pydantic``).

    Returns ``{"observation", "next_state"}`` or raises ``SandboxError``. Workers are reused per
    (source, class, limits); ``fresh=True`` uses a new worker for this call only (the cold path).
    ``tripwire``/``confine`` switch layers off (with ``allow_unconfined=True`` only), for tests that
    show each remaining layer holds alone.
    """
    if (not tripwire or set(sandbox_confine.LAYERS) - set(confine)) and not allow_unconfined:
        raise SandboxError("switching confinement layers off needs allow_unconfined=True")
    setup = _setup(request, limits, tripwire=tripwire, confine=confine)
    if fresh:
        worker = _Worker(setup)
        try:
            _check_layers(worker, allow_unconfined)
            return worker.call(request["state"], request["action"])
        finally:
            worker.close()
    return _POOL.call(setup, request["state"], request["action"], allow_unconfined)


def close_workers() -> None:
    """Stop every warm worker (they are also stopped at interpreter exit)."""
    _POOL.close()


def _setup(request: dict[str, Any], limits: Limits, *, tripwire: bool, confine: tuple[str, ...]) -> dict[str, Any]:
    setup = {"source": request["source"], "class_name": request["class_name"], "load": request.get("load", "attrs"),
             "tools": request.get("tools"), "limits": asdict(limits), "tripwire": tripwire, "confine": list(confine)}
    if request.get("packages"):  # optional packages the class imports (worker.REQUESTABLE)
        setup["packages"] = sorted(request["packages"])
    return setup


_WARNED: set[str] = set()


def uncovered_layers(layers: dict[str, str | None]) -> dict[str, str]:
    """Layers that are missing (not switched off) and not stood in for by active layers (``COVERED_BY``)."""
    missing = {k: v for k, v in layers.items() if v is not None and v != "switched off"}
    for layer, covering in sandbox_confine.COVERED_BY.items():
        if layer in missing and all(layers.get(other) is None for other in covering):
            del missing[layer]
    return missing


def _check_layers(worker: "_Worker", allow_unconfined: bool) -> None:
    missing = uncovered_layers(worker.layers)
    if not missing:
        return
    opted_out = allow_unconfined or os.environ.get(OPT_OUT_VARIABLE) == "1"
    text = "; ".join(f"{k}: {v}" for k, v in sorted(missing.items()))
    if text not in _WARNED:
        _WARNED.add(text)
        warnings.warn(f"EnvSim sandbox: confinement layers unavailable on this machine ({text}). "
                      + ("Running untrusted code anyway, as the caller opted out." if opted_out else
                         f"Untrusted code is refused; pass allow_unconfined=True or set {OPT_OUT_VARIABLE}=1 "
                         "to run it with the remaining layers."), RuntimeWarning, stacklevel=3)
    if not opted_out:
        worker.close()
        raise SandboxError(f"untrusted code refused: confinement layers unavailable ({text}); pass "
                           f"allow_unconfined=True or set {OPT_OUT_VARIABLE}=1 to run it anyway")


#: A worker's empty working directory is ``<tmp>/envsim-sandbox-<pid of the EnvSim process>-<random>``: the pid
#: tells a directory whose process is gone (killed before it could remove it) from one still in use.
WORKDIR_PREFIX = "envsim-sandbox-"
_SWEPT: list[bool] = []


def sweep_stale_workdirs(root: str | None = None, *, force: bool = False) -> list[str]:
    """Remove the worker directories that EnvSim processes no longer running left in ``root`` (the temp directory):
    only directories of this user, named with a pid that is not alive; never links, never anything else. Runs once
    per process unless ``force``; returns what it removed."""
    if _SWEPT and not force:
        return []
    _SWEPT.append(True)
    root = root or tempfile.gettempdir()
    removed = []
    try:
        entries = os.listdir(root)
    except OSError:
        return removed
    for name in entries:
        pid_text = name[len(WORKDIR_PREFIX):].split("-", 1)[0] if name.startswith(WORKDIR_PREFIX) else ""
        if not pid_text.isdigit() or "-" not in name[len(WORKDIR_PREFIX):] or pid_alive(int(pid_text)):
            continue
        path = os.path.join(root, name)
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid():
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


class _Worker:
    """Parent-side handle of one confined worker process (one class source, one set of limits)."""

    def __init__(self, setup: dict[str, Any]) -> None:
        self.setup = setup
        self.limits = setup["limits"]
        self._closed = False
        sweep_stale_workdirs()  # once per process: what a killed EnvSim (kill -9) left behind
        self._workdir = tempfile.mkdtemp(prefix=f"{WORKDIR_PREFIX}{os.getpid()}-")
        os.chmod(self._workdir, 0o555)
        env = {"PATH": "/usr/bin:/bin", "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1",
               "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "LANG": "C.UTF-8"}
        self.proc = subprocess.Popen([sys.executable, "-I", "-m", "envsim.envs.sandbox.worker"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     cwd=self._workdir, env=env, start_new_session=True, close_fds=True)
        self._buffer = bytearray()
        try:
            self._send(setup)
            ready = self._receive(_START_SECONDS, 1 << 20)
        except SandboxError:
            self.close()
            raise
        if "ready" not in ready:
            self.close()
            raise SandboxError(f"sandbox worker failed to start: {ready.get('fatal', ready)}")
        self.layers: dict[str, str | None] = ready["ready"]

    def call(self, state: dict[str, Any], action: dict[str, Any] | None) -> dict[str, Any]:
        """One call in a fresh child of this worker; ``SandboxError`` on any rule, limit or failure."""
        nonce = secrets.token_hex(16)
        if jsonsafe.too_deep(state, jsonsafe.MAX_DEPTH):
            raise SandboxError(f"sandbox request refused: the state is nested deeper than {jsonsafe.MAX_DEPTH} levels")
        self._send({"nonce": nonce, "state": state, "action": action})
        body = self._receive_body(self.limits["wall_seconds"] + _GRACE_SECONDS, self.limits["answer_bytes"] + 4096)
        head, newline, data = body.partition(b"\n")
        verdict = _decode(head)
        if newline and isinstance(verdict.get("status"), int):  # the worker relayed a call: judge it here
            answer = judge(verdict["status"], verdict.get("ending"), data, nonce, self.limits, _decode_answer)
        else:
            answer = verdict
        if "error" in answer:
            raise SandboxError(str(answer["error"]))
        if "fatal" in answer:
            self.close()
            raise SandboxError(str(answer["fatal"]))
        if set(answer) != {"observation", "next_state"} or not isinstance(answer["next_state"], dict):
            self.close()
            raise SandboxError("sandbox worker answered a malformed result")
        return answer

    def _send(self, payload: dict[str, Any]) -> None:
        try:
            data = encode_frame(payload)
        except (TypeError, ValueError, RecursionError) as exc:
            raise SandboxError(f"sandbox request is not JSON ({exc})") from None
        if len(data) > self.limits["request_bytes"]:
            raise SandboxError(f"sandbox request over the size limit ({self.limits['request_bytes']} bytes)")
        try:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            self.close()
            raise SandboxError("sandbox worker died") from None

    def _receive(self, seconds: float, cap: int) -> dict[str, Any]:
        """One frame from the worker, decoded as a JSON object (``SandboxError`` otherwise)."""
        answer = _decode(self._receive_body(seconds, cap))
        if not answer:
            self.close()
            raise SandboxError("sandbox worker answered a malformed frame")
        return answer

    def _receive_body(self, seconds: float, cap: int) -> bytes:
        """The body of one frame from the worker, read within ``seconds`` and at most ``cap`` bytes."""
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + seconds
        while True:
            if len(self._buffer) >= 4:
                size = 4 + int.from_bytes(self._buffer[:4], "big")
                if size > cap:
                    self.close()
                    raise SandboxError(f"untrusted code produced an answer over the size limit ({cap} bytes)")
                if len(self._buffer) >= size:
                    body = bytes(self._buffer[4:size])
                    del self._buffer[:size]
                    return body
            left = deadline - time.monotonic()
            if left <= 0:
                self.close()
                raise SandboxError(f"untrusted code exceeded the wall-time limit ({self.limits['wall_seconds']:g} s)")
            try:
                ready, _, _ = select.select([fd], [], [], left)
                chunk = os.read(fd, 1 << 16) if ready else None
            except (OSError, ValueError):  # closed from another thread (close_workers, pool eviction)
                self.close()
                raise SandboxError("sandbox worker was closed during the call") from None
            if ready:
                if not chunk:
                    self.close()
                    raise SandboxError("sandbox worker died")
                self._buffer += chunk

    def close(self) -> None:
        """Kill what the worker started: its process group and session (both are the worker's pid, which
        the sandbox forbids leaving), nothing else."""
        if self._closed:
            return
        self._closed = True
        if self.proc.returncode is None:  # not reaped yet: the pid (= group and session id) is still ours
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            _kill_session(self.proc.pid)
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        _await_session_end(self.proc.pid)
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
        shutil.rmtree(self._workdir, ignore_errors=True)


def _decode(body: bytes) -> dict[str, Any]:
    """A worker frame's JSON object; ``{}`` when it is not one."""
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def _decode_answer(body: bytes) -> Any:
    """A call child's answer frame, decoded with the bounded reader (depth, NaN, long integers)."""
    return jsonsafe.loads(body.decode("utf-8"))


def session_members(session: int, proc: str = "/proc") -> list[int]:
    """Pids of the live processes (zombies left out) whose session id is ``session`` (``/proc/PID/stat``)."""
    members = []
    for entry in os.listdir(proc):
        if not entry.isdigit():
            continue
        try:
            with open(f"{proc}/{entry}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 3 and int(fields[3]) == session and fields[0] not in (b"Z", b"X"):  # state .. session
            members.append(int(entry))
    return members


def _kill_session(session: int) -> None:
    """Defence in depth: SIGKILL what is left of a worker's session (it cannot leave it: setsid and
    setpgid are refused by seccomp). Processes outside the session are never touched, whatever their uid."""
    for pid in session_members(session):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            continue


def _await_session_end(session: int, seconds: float = 2.0) -> None:
    """SIGKILL is delivered asynchronously: wait (bounded) until no live process is left in the session,
    killing again what is still there, so that a closed worker has really stopped everything it started."""
    deadline = time.monotonic() + seconds
    while session_members(session) and time.monotonic() < deadline:
        _kill_session(session)
        time.sleep(0.01)


class _Pool:
    """Warm workers keyed by a hash of (source, class, loader, tools, limits, layers); LRU-bounded.

    A worker serves one call at a time (its own lock); workers of different keys run in parallel.
    """

    def __init__(self) -> None:
        self._workers: collections.OrderedDict[str, _Worker] = collections.OrderedDict()
        self._locks: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()
        self._pid = os.getpid()

    def _forget_after_fork(self) -> None:
        """In a process forked from the owner, the workers belong to the parent: start empty."""
        if os.getpid() != self._pid:
            self._workers, self._locks, self._lock = collections.OrderedDict(), {}, threading.Lock()
            self._pid = os.getpid()

    def call(self, setup: dict[str, Any], state: dict[str, Any], action: dict[str, Any] | None,
             allow_unconfined: bool) -> dict[str, Any]:
        self._forget_after_fork()
        key = hashlib.sha256(json.dumps(setup, sort_keys=True).encode()).hexdigest()
        with self._lock:
            key_lock = self._locks.setdefault(key, threading.Lock())
        with key_lock:
            with self._lock:
                worker = self._workers.get(key)
            if worker is None or worker.proc.poll() is not None:
                if worker is not None:
                    worker.close()
                worker = _Worker(setup)
                self._keep(key, worker)
            _check_layers(worker, allow_unconfined)
            return worker.call(state, action)

    def _keep(self, key: str, worker: _Worker) -> None:
        with self._lock:
            self._workers[key] = worker
            self._workers.move_to_end(key)
            for old_key in list(self._workers)[:-_MAX_WORKERS]:
                lock = self._locks.get(old_key)
                if lock is not None and lock.acquire(blocking=False):
                    try:
                        self._workers.pop(old_key).close()
                    finally:
                        lock.release()

    def close(self) -> None:
        self._forget_after_fork()
        with self._lock:
            workers, self._workers = list(self._workers.values()), collections.OrderedDict()
        for worker in workers:
            worker.close()


_POOL = _Pool()
atexit.register(close_workers)
