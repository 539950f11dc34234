"""A confined worker for one untrusted class: forks one short-lived, further confined child per call.

Started by ``envsim.envs.sandbox`` as ``python -I -m envsim.envs.sandbox_worker``. Protocol: frames
(4-byte big-endian length + JSON) on fd 0 (requests) and fd 1 (answers); both are moved to private
descriptors at start and 0/1/2 become ``/dev/null`` (in a call child, 1/2 are a pipe the worker
drains and counts up to ``output_bytes``). The first request is the set-up
``{"source", "class_name", "load", "tools", "limits", "tripwire", "confine"}``; the worker imports
everything a class may use, confines itself (``envsim.envs.sandbox_confine``), answers
``{"ready": {layer: None | reason}}`` and then serves ``{"nonce", "state", "action"}`` requests.

The worker never runs untrusted code. Each call runs in a forked child that stacks a stricter
seccomp filter (no fork, no signals), hides the worker's modules, installs the audit tripwire,
executes the class source in a fresh namespace (so no module-level state survives a call) and
writes one frame carrying the call's nonce to a per-call pipe. The worker reads at most
``answer_bytes`` from that pipe until the wall-time limit, reaps the child and relays either the
child's frame or its own verdict (signal, exit code, overflow, timeout): a child cannot hide how it
ended, and any violation frame it wrote before dying wins over an answer it forged.
"""

from __future__ import annotations

import io
import json
import os
import select
import signal
import struct
import sys
import time
from typing import Any

VIOLATION_EXIT = 86
UNTRUSTED_FILENAME = "<untrusted environment>"
_HEADER = struct.Struct(">I")

# Imported before confinement; a class may use these (and what they import), nothing else.
PREIMPORTED = (
    "abc", "array", "base64", "binascii", "bisect", "calendar", "cmath", "collections", "collections.abc",
    "contextlib", "copy", "copyreg", "csv", "dataclasses", "datetime", "decimal", "difflib", "enum", "fnmatch",
    "fractions", "functools", "hashlib", "heapq", "html", "io", "ipaddress", "itertools", "json", "keyword",
    "logging", "math", "numbers", "operator", "pprint", "random", "re", "statistics", "string", "struct",
    "textwrap", "time", "types", "typing", "unicodedata", "urllib.parse", "uuid", "warnings", "weakref",
    "zlib", "_strptime", "secrets", "traceback", "inspect", "locale",
)
HEAVY_OPTIONAL = ("numpy", "pandas", "pydantic", "polars", "pyarrow", "scipy", "torch", "orjson")
# Removed from sys.modules in a call child: importing one again is a violation.
FORBIDDEN_MODULES = ("subprocess", "_posixsubprocess", "socket", "_socket", "select", "selectors", "ctypes",
                     "_ctypes", "multiprocessing", "_multiprocessing", "pty", "tty", "fcntl", "mmap", "resource",
                     "signal", "_signal", "shutil", "tempfile", "pyseccomp", "landlock", "envsim", "faulthandler",
                     "importlib", "_imp", "posix", "gc", "sysconfig", "asyncio", "concurrent", "pickle", "_pickle", "marshal", "code", "codeop", "pdb", "bdb")
_FLAGGED_EVENTS = ("os.", "subprocess.", "socket.", "ctypes.", "shutil.", "pty.", "fcntl.", "mmap.", "resource.",
                   "gc.", "sys.addaudithook", "sys.settrace", "sys.setprofile", "sys._current_frames",
                   "webbrowser.", "urllib.Request", "ftplib.", "smtplib.", "http.client.", "cpython._PySys_ClearAuditHooks",
                   "sys.monitoring", "code.__new__", "marshal.load", "pickle.find_class", "builtins.input")
_FRAME_ATTRIBUTES = ("tb_frame", "gi_frame", "cr_frame", "ag_frame")


def read_frame(fd: int, limit: int) -> dict[str, Any] | None:
    """One frame from ``fd`` (``None`` at end of file); ``ValueError`` if longer than ``limit``."""
    header = _read_exact(fd, _HEADER.size)
    if header is None:
        return None
    (size,) = _HEADER.unpack(header)
    if size > limit:
        raise ValueError(f"frame of {size} bytes exceeds {limit}")
    body = _read_exact(fd, size)
    if body is None:
        raise ValueError("truncated frame")
    return json.loads(body)


def _read_exact(fd: int, n: int) -> bytes | None:
    chunks, got = [], 0
    while got < n:
        chunk = os.read(fd, n - got)
        if not chunk:
            return None
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def encode_frame(payload: Any) -> bytes:
    """``payload`` as a frame: length header + compact JSON."""
    body = json.dumps(payload, allow_nan=False, separators=(",", ":")).encode()
    return _HEADER.pack(len(body)) + body


def split_frames(data: bytes) -> list[Any]:
    """Every complete, well-formed frame in ``data``; a malformed one ends the list with ``"malformed"``."""
    frames, pos = [], 0
    while pos + _HEADER.size <= len(data):
        (size,) = _HEADER.unpack_from(data, pos)
        body = data[pos + _HEADER.size: pos + _HEADER.size + size]
        if len(body) < size:
            frames.append("malformed")
            break
        try:
            frames.append(json.loads(body))
        except ValueError:
            frames.append("malformed")
            break
        pos += _HEADER.size + size
    if pos < len(data) and (not frames or frames[-1] != "malformed"):
        frames.append("malformed")
    return frames


# --- the worker ----------------------------------------------------------------------------------

def main() -> None:
    """Serve one untrusted class until the request pipe closes."""
    req_fd, ans_fd = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    setup = read_frame(req_fd, 64 << 20)
    if setup is None:
        return
    try:
        state = _prepare(setup)
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, then the worker ends
        os.write(ans_fd, encode_frame({"fatal": f"{type(exc).__name__}: {exc}"}))
        return
    os.write(ans_fd, encode_frame({"ready": state["layers"]}))
    limits = setup["limits"]
    while True:
        try:
            request = read_frame(req_fd, limits["request_bytes"])
        except (ValueError, OSError):
            return
        if request is None:
            return
        try:
            answer = _serve(state, setup, request, (req_fd, ans_fd))
        except Exception as exc:  # noqa: BLE001 - the worker's own failure: report it and end
            os.write(ans_fd, encode_frame({"fatal": f"sandbox worker failed: {type(exc).__name__}: {exc}"}))
            return
        os.write(ans_fd, answer)


class _SkipHeavyOptional:
    """Meta-path finder used while the worker imports: optional heavy packages that libraries probe
    for (numpy, pandas, pydantic ...) look absent, so the worker starts fast, small and single-threaded."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name.split(".")[0] in HEAVY_OPTIONAL:
            raise ImportError(f"{name} is not loaded in a sandbox worker")


def _prepare(setup: dict[str, Any]) -> dict[str, Any]:
    import importlib

    sys.meta_path.insert(0, _SkipHeavyOptional())
    for name in PREIMPORTED:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    from envsim.envs import sandbox_confine as confine
    from envsim.envs.adapters.foreign import wrap_class
    from envsim.envs.calling import call_in_process
    from envsim.records import Action

    code = compile(setup["source"], UNTRUSTED_FILENAME, "exec", dont_inherit=True)
    layers: dict[str, str | None] = {name: None for name in confine.LAYERS}
    wanted = set(setup.get("confine", confine.LAYERS))
    if not setup.get("tripwire", True):
        layers["tripwire"] = "switched off"
    call_filter = worker_filter = None
    arm = confine.parent_death_signal()
    if "seccomp" in wanted:  # built while the libraries can still be read (before the uid changes)
        try:
            call_filter = confine.compiled_filter(confine.build_filter(in_call=True))
            worker_filter = confine.build_filter(in_call=False)
        except BaseException as exc:  # noqa: BLE001 - the parent decides whether to go on without it
            layers["seccomp"] = f"{type(exc).__name__}: {exc}"
    else:
        layers["seccomp"] = "switched off"
    if "landlock" in wanted:
        confine.landlock_abi()  # loads the package and libc before the uid changes
    limits = setup["limits"]
    confine.set_limits(limits["memory_bytes"])
    for layer, step in (("uid", confine.drop_privileges), ("landlock", confine.apply_landlock)):
        if layer not in wanted:
            layers[layer] = "switched off"
            continue
        try:
            step()
        except BaseException as exc:  # noqa: BLE001 - the parent decides whether to go on without it
            layers[layer] = f"{type(exc).__name__}: {exc}"
    if worker_filter is not None:
        try:
            worker_filter.load()
        except BaseException as exc:  # noqa: BLE001
            layers["seccomp"] = f"{type(exc).__name__}: {exc}"
            call_filter = None
    forbidden_loaded = [name for name in sys.modules if name.split(".")[0] in FORBIDDEN_MODULES]
    import gc
    gc.collect()
    gc.freeze()  # call children neither scan nor touch (copy) the worker's objects
    return {"code": code, "layers": layers, "call_filter": call_filter, "arm": arm,
            "forbidden_loaded": forbidden_loaded, "wrap_class": wrap_class,
            "call_in_process": call_in_process, "Action": Action}


def _serve(state: dict[str, Any], setup: dict[str, Any], request: dict[str, Any], private: tuple[int, int]) -> bytes:
    limits = setup["limits"]
    nonce = request.get("nonce", "")
    read_end, write_end = os.pipe()
    output_read, output_write = os.pipe()
    pid = os.fork()
    if pid == 0:  # call child
        status = 70
        try:
            state["arm"]()  # an orphaned call dies with its worker
            if os.getppid() == 1:
                os._exit(status)
            for fd in (read_end, output_read, *private):
                os.close(fd)
            os.dup2(output_write, 1)
            os.dup2(output_write, 2)
            os.close(output_write)
            _run_call(state, setup, request, write_end)
            status = 0
        finally:
            os._exit(status)
    os.close(write_end)
    os.close(output_write)
    try:
        verdict = _collect(read_end, output_read, pid, limits)
    finally:
        os.close(read_end)
        os.close(output_read)
    return encode_frame(_judge(verdict, nonce, limits))


def _collect(fd: int, output_fd: int, pid: int, limits: dict[str, Any]) -> dict[str, Any]:
    """Read the child's answer pipe (bounded) and drain its stdout/stderr pipe (counted, discarded)
    until the answer pipe closes or the wall-time limit passes; then reap the child."""
    deadline = time.monotonic() + limits["wall_seconds"]
    data, output, ending = bytearray(), 0, None
    watched = [fd, output_fd]
    while fd in watched:
        left = deadline - time.monotonic()
        if left <= 0:
            ending = "timed_out"
            break
        ready, _, _ = select.select(watched, [], [], left)
        for source in ready:
            chunk = os.read(source, 1 << 16)
            if not chunk:
                watched.remove(source)
            elif source == fd:
                data += chunk
            else:
                output += len(chunk)
        if len(data) > limits["answer_bytes"]:
            ending = "overflow"
        elif output > limits["output_bytes"]:
            ending = "output"
        if ending:
            break
    if ending:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    return {"data": bytes(data), "status": status, "ending": ending}


def _judge(verdict: dict[str, Any], nonce: str, limits: dict[str, Any]) -> dict[str, Any]:
    frames = split_frames(verdict["data"]) if verdict["ending"] != "overflow" else []
    for frame in frames:
        if isinstance(frame, dict) and "violation" in frame:
            return {"error": f"untrusted code attempted a forbidden operation: {frame['violation']}"}
    status, ending = verdict["status"], verdict["ending"]
    if ending == "timed_out":
        return {"error": f"untrusted code exceeded the wall-time limit ({limits['wall_seconds']:g} s)"}
    if ending == "overflow":
        return {"error": f"untrusted code produced an answer over the size limit ({limits['answer_bytes']} bytes)"}
    if ending == "output":
        return {"error": f"untrusted code attempted a forbidden operation: output over the limit "
                         f"({limits['output_bytes']} bytes) written to stdout/stderr"}
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig == signal.SIGSYS:
            return {"error": "untrusted code attempted a forbidden operation: a system call refused by the seccomp "
                             "filter (process creation, sockets, file writes or changes, ...); the call was killed"}
        if sig in (signal.SIGXCPU, signal.SIGKILL):
            return {"error": f"untrusted code exceeded the CPU-time limit ({limits['cpu_seconds']} s)"}
        return {"error": f"untrusted code was killed by signal {signal.Signals(sig).name}"}
    code = os.WEXITSTATUS(status)
    if code == VIOLATION_EXIT:
        return {"error": "untrusted code attempted a forbidden operation (its report channel was tampered with)"}
    answers = [f for f in frames if isinstance(f, dict) and f.get("nonce") == nonce]
    if code != 0 or len(frames) != 1 or len(answers) != 1:
        return {"error": f"sandboxed call ended without a valid answer (exit code {code}, {len(frames)} frames)"}
    answer = answers[0]
    if "error" in answer:
        return {"error": str(answer["error"])}
    if set(answer) != {"nonce", "observation", "next_state"} or not isinstance(answer["next_state"], dict):
        return {"error": "sandboxed call answered a malformed result"}
    return {"observation": answer["observation"], "next_state": answer["next_state"]}


# --- the call child ------------------------------------------------------------------------------

class _Unavailable(BaseException):
    """Raised by the import refuser; not an ``Exception``, so tool wrappers do not turn it into an observation."""


class _RefuseImports:
    """Meta-path finder: any module not imported before confinement is unavailable, with a clear reason.

    It holds no reference to the sandbox's reporting code (untrusted code can reach ``sys.meta_path``).
    """

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        shown = name if type(name) is str else "?"
        raise _Unavailable(f"module {shown!r} is not available in the sandbox (only modules imported before "
                           f"confinement are: {', '.join(PREIMPORTED)})")


def _run_call(state: dict[str, Any], setup: dict[str, Any], request: dict[str, Any], out: int) -> None:
    import builtins
    import resource

    limits, nonce = setup["limits"], request.get("nonce", "")
    write, end_process = os.write, os._exit
    frame = encode_frame

    def send(payload: dict[str, Any], status: int) -> None:
        try:
            write(out, frame({"nonce": nonce, **payload}))
        finally:
            end_process(status)

    def report_violation(reason: str) -> None:
        send({"violation": reason}, VIOLATION_EXIT)

    def end_with_error(message: str) -> None:
        send({"error": message}, 0)

    cpu = int(limits["cpu_seconds"])
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    envsim_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    tripwire = setup.get("tripwire", True)
    if tripwire:
        for name in state["forbidden_loaded"]:
            sys.modules.pop(name, None)
    sys.meta_path[:] = [_RefuseImports()]
    sys.path_hooks.clear()
    sys.path_importer_cache.clear()
    sys.path[:] = []
    # stdout/stderr go to a pipe the worker drains and counts (bounded); no Python object in between.
    sys.stdout = sys.stderr = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), write_through=True,
                                               errors="replace")
    wrap_class, call_in_process, action_type = state["wrap_class"], state["call_in_process"], state["Action"]
    code, class_name, source = state["code"], setup["class_name"], setup["source"]
    load, tools, memory = setup.get("load", "attrs"), setup.get("tools"), limits["memory_bytes"]
    if state["call_filter"] is not None:
        state["call_filter"]()
    if tripwire:
        sys.addaudithook(_tripwire(report_violation, envsim_dir))
    state = setup = None  # type: ignore[assignment]  # the worker's set-up is not kept in this frame
    try:
        namespace: dict[str, Any] = {"__name__": "envsim_untrusted", "__builtins__": builtins}
        exec(code, namespace)  # noqa: S102 - the confined call child exists to run it
        foreign = namespace.get(class_name)
        if not isinstance(foreign, type):
            end_with_error(f"the source defines no class named {class_name!r}")
        cls = wrap_class(foreign, load=load, tools=tools, source=source)
        if request["action"] is None:  # load -> save only (normalising a state): no tool runs
            observation, next_state = None, cls.from_state(request["state"]).get_state()
        else:
            observation, next_state = call_in_process(cls, request["state"], action_type.from_json(request["action"]))
        body = frame({"nonce": nonce, "observation": observation, "next_state": next_state})
    except MemoryError:
        end_with_error(f"untrusted code exceeded the memory limit ({memory >> 20} MiB)")
    except _Unavailable as exc:
        end_with_error(f"untrusted environment failed: {exc.args[0] if exc.args else 'module unavailable'}")
    except BaseException as exc:  # noqa: BLE001 - every failure becomes a clear answer
        try:
            reason = f"{type(exc).__name__}: {exc}"
        except BaseException:  # noqa: BLE001 - a hostile __str__
            reason = "an exception that cannot be shown"
        end_with_error(f"untrusted environment failed: {reason}")
    try:
        write(out, body)
    finally:
        end_process(0)


def _tripwire(report: Any, envsim_dir: str) -> Any:
    """The audit hook of a call child: the first forbidden event reports itself and ends the process.

    It never calls code the untrusted class could supply (no ``repr`` of foreign objects, exact type
    checks only), so it cannot be re-entered or tampered with from inside one of its own checks.
    """
    flagged, frame_attributes, forbidden = _FLAGGED_EVENTS, _FRAME_ATTRIBUTES, FORBIDDEN_MODULES
    split, startswith, type_ = str.split, str.startswith, type

    def shown(value: Any) -> str:
        return repr(value) if type_(value) in (str, bytes, int) else f"<{type_(value).__qualname__!s:.40}>"

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event == "open":
            report(f"file access ({shown(args[0]) if args else '?'}, mode {shown(args[1]) if len(args) > 1 else 'r'})")
        elif event == "import":
            name = args[0] if args and type_(args[0]) is str else "?"
            if split(name, ".")[0] in forbidden:
                report(f"{name} (import of a forbidden module)")
        elif startswith(event, flagged):
            report(event)
        elif event == "sys._getframe":
            code = args[0].f_code if args and type_(args[0]).__name__ == "frame" else None
            if code is None or startswith(code.co_filename, envsim_dir):
                report("sys._getframe reaching the sandbox's own frames")
        elif event == "object.__getattr__" and len(args) > 1:
            if type_(args[1]) is not str or args[1] in frame_attributes:
                report(f"frame introspection ({shown(args[1])})")
        elif event == "object.__setattr__" and len(args) > 1:
            if type_(args[1]) is not str or args[1] in ("__code__", "__globals__"):
                report(f"rewriting a function or class ({shown(args[1])})")

    return hook


if __name__ == "__main__":
    main()
