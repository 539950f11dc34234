"""A confined worker for one untrusted class: forks one short-lived, further confined child per call.

Started by ``envsim.envs.sandbox.runner`` as ``python -I -m envsim.envs.sandbox.worker``. Protocol: frames
(4-byte big-endian length + JSON) on fd 0 (requests) and fd 1 (answers); both are moved to private
descriptors at start and 0/1/2 become ``/dev/null`` (in a call child, 1/2 are a pipe the worker
drains and counts up to ``output_bytes``). The first request is the set-up
``{"source", "class_name", "load", "tools", "limits", "tripwire", "confine"}``; the worker imports
everything a class may use, confines itself (``envsim.envs.sandbox.confine``), answers
``{"ready": {layer: None | reason}}`` and then serves ``{"nonce", "state", "action"}`` requests.

The worker never runs untrusted code and never decodes a request or an answer. It reads each request
into a buffer of its own, forks a child that decodes and runs it, and reads at most ``answer_bytes``
from the child's answer pipe until the wall-time limit; it reaps the child and relays one frame to
the parent: its verdict (``{"status", "ending"}``, a line of JSON) followed by the child's raw bytes.
Then it zeroes every buffer that held the call's bytes, so nothing of one call (no object, no freed
memory) is inside the worker when it forks the next: a call cannot read an earlier episode's values.
The parent judges the relay (``judge``): a child cannot hide how it ended, and any violation frame it
wrote before dying wins over an answer it forged.

Each call child stacks a stricter seccomp filter (no fork, no signals, no path metadata), hides the
worker's modules and the import machinery's loaders, installs the audit tripwire, executes the class
source (compiled in the worker after its limits applied) in a fresh namespace and writes one frame
carrying the call's nonce to its answer pipe.
"""

from __future__ import annotations

import io
import json
import json.encoder
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
# Of those, the ones a set-up may ask for (``"packages"``): imported before confinement, with their lazily
# imported parts, so the class may use them. Shown code of object-model environments imports pydantic; a
# SQLite-backed service imports sqlite3 (in-memory databases only: ``_guard_sqlite``). The parent may also name
# third-party packages the user's own environment imports (``envsim.envs.sandbox.packages``): the worker
# imports every name it is given that is not forbidden.
REQUESTABLE = ("pydantic", "sqlite3")
#: The only database a sandboxed ``sqlite3.connect`` opens.
SQLITE_MEMORY = ":memory:"
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
_REWRITES = ("__code__", "__globals__")          # rewriting any function this way is a violation
_GUARDED_DEFAULTS = ("__defaults__", "__kwdefaults__")  # a violation on the sandbox's own functions
# Loaders of the import machinery that build a module without an import event: unusable in a call.
_MODULE_BUILDERS = ("create_builtin", "create_dynamic", "exec_builtin", "exec_dynamic", "get_frozen_object",
                    "init_frozen", "find_frozen")
_CHUNK = 1 << 16


def _frame_size(fd: int, limit: int) -> int | None:
    """The body size a frame header on ``fd`` announces (``None`` at end of file); ``ValueError`` past ``limit``."""
    header = _read_exact(fd, _HEADER.size)
    if header is None:
        return None
    (size,) = _HEADER.unpack(header)
    if size > limit:
        raise ValueError(f"frame of {size} bytes exceeds {limit}")
    return size


def read_frame(fd: int, limit: int) -> dict[str, Any] | None:
    """One frame from ``fd`` (``None`` at end of file); ``ValueError`` if longer than ``limit``."""
    size = _frame_size(fd, limit)
    if size is None:
        return None
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


class Malformed(str):
    """A frame that could not be read (the text says why); ends the list ``split_frames`` returns."""


def split_frames(data: bytes, loads: Any = json.loads) -> list[Any]:
    """Every complete, well-formed frame in ``data`` (decoded with ``loads``); a malformed one ends the
    list with a ``Malformed`` reason."""
    frames: list[Any] = []
    pos = 0
    while pos + _HEADER.size <= len(data):
        (size,) = _HEADER.unpack_from(data, pos)
        body = data[pos + _HEADER.size: pos + _HEADER.size + size]
        if len(body) < size:
            frames.append(Malformed("a truncated frame"))
            break
        try:
            frames.append(loads(body))
        except (ValueError, RecursionError) as exc:
            frames.append(Malformed(f"a frame that is not acceptable JSON ({exc})"))
            break
        pos += _HEADER.size + size
    if pos < len(data) and (not frames or not isinstance(frames[-1], Malformed)):
        frames.append(Malformed("trailing bytes after the last frame"))
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
        prepared = _prepare(setup)
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, then the worker ends
        os.write(ans_fd, encode_frame({"fatal": f"{type(exc).__name__}: {exc}"}))
        return
    os.write(ans_fd, encode_frame({"ready": prepared["layers"]}))
    scratch = bytearray(_CHUNK)  # drains the child's stdout/stderr; zeroed after every call
    while _serve_next(prepared, setup, req_fd, ans_fd, scratch):
        pass


def _serve_next(prepared: dict[str, Any], setup: dict[str, Any], req_fd: int, ans_fd: int,
                scratch: bytearray) -> bool:
    """Read one request, run it in a child, relay the verdict; ``False`` when the worker should end.

    A function of its own so that none of its locals outlive the call; every buffer that held the
    call's bytes is zeroed before it returns.
    """
    try:
        request = _read_request(req_fd, setup["limits"]["request_bytes"])
    except (ValueError, OSError):
        return False
    if request is None:
        return False
    chunks: list[bytearray] = []
    try:
        verdict = _serve(prepared, setup, request, (req_fd, ans_fd), chunks, scratch)
        _write_all(ans_fd, [_HEADER.pack(len(verdict) + sum(len(c) for c in chunks)) + verdict, *chunks])
    except Exception as exc:  # noqa: BLE001 - the worker's own failure: report it and end
        os.write(ans_fd, encode_frame({"fatal": f"sandbox worker failed: {type(exc).__name__}: {exc}"}))
        return False
    finally:
        for buffer in (request, *chunks):
            buffer[:] = bytes(len(buffer))
        scratch[:] = bytes(len(scratch))
    return True


def _read_request(fd: int, limit: int) -> bytearray | None:
    """One request frame's body read straight into a buffer the worker zeroes later (never decoded here)."""
    size = _frame_size(fd, limit)
    if size is None:
        return None
    body = bytearray(size)
    view, got = memoryview(body), 0
    while got < size:
        n = os.readv(fd, [view[got:]])
        if not n:
            raise ValueError("truncated frame")
        got += n
    return body


def _write_all(fd: int, buffers: list[Any]) -> None:
    """Write every buffer to ``fd`` (no copy; partial writes resumed)."""
    views = [memoryview(b) for b in buffers if len(b)]
    while views:
        written = os.writev(fd, views[:512])
        while written and views:
            if written >= len(views[0]):
                written -= len(views.pop(0))
            else:
                views[0] = views[0][written:]
                written = 0


class _SkipHeavyOptional:
    """Meta-path finder used while the worker imports: optional heavy packages that libraries probe
    for (numpy, pandas, pydantic ...) look absent, so the worker starts fast, small and single-threaded
    (except those the set-up asks for)."""

    def __init__(self, wanted: tuple[str, ...] = ()) -> None:
        self.wanted = wanted

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        top = name.split(".")[0]
        if top in HEAVY_OPTIONAL and top not in self.wanted:
            raise ImportError(f"{name} is not loaded in a sandbox worker")


def _warm_pydantic() -> None:
    """Import pydantic with the parts it imports lazily (its public names, the schema builders a model with
    the common field types needs), so a confined call can define and validate models."""
    import datetime
    import enum
    import typing

    import pydantic

    for name in getattr(pydantic, "__all__", ()):
        try:
            getattr(pydantic, name)
        except Exception:  # noqa: BLE001 - a deprecated or optional name
            pass

    class _Kind(str, enum.Enum):
        A = "a"

    class _Inner(pydantic.BaseModel):
        when: typing.Optional[datetime.datetime] = None
        day: typing.Optional[datetime.date] = None

    class _Probe(pydantic.BaseModel):
        kind: _Kind = _Kind.A
        level: typing.Literal["x", "y"] = "x"
        inner: dict[str, _Inner] = pydantic.Field(default_factory=dict)
        items: list[typing.Union[int, float, str]] = []
        tags: typing.Tuple[str, ...] = ()
        unique: typing.Set[str] = set()
        either: typing.Optional[typing.Any] = None

        @pydantic.field_validator("items")
        @classmethod
        def _check(cls, value: list) -> list:
            return value

    probe = _Probe.model_validate({"inner": {"k": {"when": "2024-01-02T03:04:05", "day": "2024-01-02"}},
                                   "items": [1, 2.5, "s"], "tags": ["t"], "unique": ["u"]})
    probe.model_dump(mode="json")
    probe.model_dump()
    probe.model_copy(deep=True)
    pydantic.TypeAdapter(list[_Inner]).validate_python([])


def _guard_sqlite() -> None:
    """Make ``sqlite3`` open in-memory databases only: ``connect`` refuses any other name (a file, a URI) and
    every connection it makes refuses ``ATTACH``/``DETACH`` and ``load_extension`` (an authorizer) and keeps
    temporary tables in memory. The tripwire reports a connection to anything else and any extension loading
    (audit events), and Landlock and seccomp refuse every path whatever the SQL does: three layers."""
    import sqlite3

    original = sqlite3.connect
    deny, allow = sqlite3.SQLITE_DENY, sqlite3.SQLITE_OK
    refused = {sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH}
    function = sqlite3.SQLITE_FUNCTION

    def authorize(action: int, first: Any, second: Any, database: Any, trigger: Any) -> int:
        if action in refused or (action == function and second == "load_extension"):
            return deny
        return allow

    def connect(database: Any = SQLITE_MEMORY, *args: Any, **kwargs: Any) -> Any:
        if type(database) is not str or database != SQLITE_MEMORY:
            raise sqlite3.OperationalError("only an in-memory database (':memory:') can be opened in the sandbox")
        kwargs.pop("uri", None)
        connection = original(SQLITE_MEMORY, *args, **kwargs)
        connection.set_authorizer(authorize)
        connection.execute("PRAGMA temp_store = MEMORY")
        return connection

    connect.__doc__ = original.__doc__
    sqlite3.connect = connect
    sqlite3.dbapi2.connect = connect


def _prepare(setup: dict[str, Any]) -> dict[str, Any]:
    import importlib

    named = tuple(p for p in setup.get("packages") or () if isinstance(p, str) and p.isidentifier()
                  and p not in FORBIDDEN_MODULES)
    wanted = tuple(p for p in named if p in REQUESTABLE or p not in PREIMPORTED)
    sys.meta_path.insert(0, _SkipHeavyOptional(wanted))
    for name in PREIMPORTED:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    if "pydantic" in wanted:
        try:
            _warm_pydantic()
        except ImportError:
            pass  # not installed: the class's import of it is refused in the call, with that reason
    if "sqlite3" in wanted:
        try:
            _guard_sqlite()
        except ImportError:
            pass
    for name in wanted:  # third-party packages the user's environment imports (the parent chose them)
        if name not in REQUESTABLE:
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 - not importable here: the class's import is refused in the call
                pass
    from envsim.envs.sandbox import confine
    from envsim.envs.adapters.foreign import wrap_class
    from envsim.envs.sandbox.calling import call_in_process
    from envsim.records import Action

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
    for layer, step in (("uid", confine.drop_privileges), ("landlock", confine.apply_landlock),
                        ("landlock-scope", confine.apply_landlock_scope)):
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
    try:  # untrusted source is compiled only now: under the memory limit and every layer
        code = compile(setup["source"], UNTRUSTED_FILENAME, "exec", dont_inherit=True)
    except MemoryError:
        raise MemoryError(f"compiling the class source exceeded the memory limit ({limits['memory_bytes'] >> 20} MiB)") from None
    forbidden_loaded = [name for name in sys.modules if name.split(".")[0] in FORBIDDEN_MODULES]
    import gc
    gc.collect()
    gc.freeze()  # call children neither scan nor touch (copy) the worker's objects
    return {"code": code, "layers": layers, "call_filter": call_filter, "arm": arm,
            "forbidden_loaded": forbidden_loaded, "wrap_class": wrap_class,
            "call_in_process": call_in_process, "Action": Action}


def _serve(prepared: dict[str, Any], setup: dict[str, Any], request: bytearray, private: tuple[int, int],
           chunks: list[bytearray], scratch: bytearray) -> bytes:
    """Fork the call child for ``request``; the child's raw answer lands in ``chunks``; returns the
    verdict line (``{"status", "ending"}`` + newline) the parent judges."""
    limits = setup["limits"]
    read_end, write_end = os.pipe()
    output_read, output_write = os.pipe()
    pid = os.fork()
    if pid == 0:  # call child
        status = 70
        try:
            prepared["arm"]()  # an orphaned call dies with its worker
            if os.getppid() == 1:
                os._exit(status)
            for fd in (read_end, output_read, *private):
                os.close(fd)
            os.dup2(output_write, 1)
            os.dup2(output_write, 2)
            os.close(output_write)
            _run_call(prepared, setup, request, write_end)
            status = 0
        finally:
            os._exit(status)
    os.close(write_end)
    os.close(output_write)
    try:
        status, ending = _collect(read_end, output_read, pid, limits, chunks, scratch)
    finally:
        os.close(read_end)
        os.close(output_read)
    if ending == "overflow":
        for chunk in chunks:
            chunk[:] = bytes(len(chunk))
        chunks.clear()
    return json.dumps({"status": status, "ending": ending}).encode() + b"\n"


def _collect(fd: int, output_fd: int, pid: int, limits: dict[str, Any], chunks: list[bytearray],
             scratch: bytearray) -> tuple[int, str | None]:
    """Read the child's answer pipe into ``chunks`` (bounded) and drain its stdout/stderr pipe into
    ``scratch`` (counted, discarded) until the answer pipe closes or the wall-time limit passes; then
    reap the child. Returns ``(wait status, ending)``."""
    deadline = time.monotonic() + limits["wall_seconds"]
    size, output, ending = 0, 0, None
    fill = _CHUNK  # bytes used in the last answer buffer (a full one means: start a new buffer)
    watched = [fd, output_fd]
    while fd in watched:
        left = deadline - time.monotonic()
        if left <= 0:
            ending = "timed_out"
            break
        ready, _, _ = select.select(watched, [], [], left)
        for source in ready:
            if source == fd:
                if fill == _CHUNK:
                    chunks.append(bytearray(_CHUNK))
                    fill = 0
                n = os.readv(source, [memoryview(chunks[-1])[fill:]])
                fill += n
                size += n
            else:
                n = os.readv(source, [scratch])
                output += n
            if not n:
                watched.remove(source)
        if size > limits["answer_bytes"]:
            ending = "overflow"
        elif output > limits["output_bytes"]:
            ending = "output"
        if ending:
            break
    if ending:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    if chunks and fill < _CHUNK:
        del chunks[-1][fill:]  # never written: nothing of the call there
    return status, ending


def judge(status: int, ending: str | None, data: bytes, nonce: str, limits: dict[str, Any],
          loads: Any = json.loads) -> dict[str, Any]:
    """The parent's reading of one relayed call: ``{"observation", "next_state"}`` or ``{"error"}``.

    ``status``/``ending`` are the worker's verdict (wait status; ``timed_out``, ``overflow``, ``output``
    or ``None``), ``data`` the child's raw answer bytes, decoded with ``loads`` (the parent's bounded
    JSON reader). A violation frame wins over everything, then how the child ended, then the answer.
    """
    frames = split_frames(data, loads) if ending != "overflow" else []
    for frame in frames:
        if isinstance(frame, dict) and "violation" in frame:
            return {"error": f"untrusted code attempted a forbidden operation: {frame['violation']}"}
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
    if code == 0 and frames and isinstance(frames[-1], Malformed):
        return {"error": f"sandboxed call answered {frames[-1]}"}
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


def _refuse_module_builder(*args: Any) -> None:
    """Stands in for the import machinery's module builders in a call child."""
    raise _Unavailable("building a module is not available in the sandbox (a loader was called directly)")


def _strip_module_builders() -> None:
    """Replace ``_imp``'s module builders: ``BuiltinImporter.load_module('marshal')`` and friends build
    modules without an import event, so in a call child they refuse instead (nothing keeps the originals)."""
    holders = (sys.modules.get("_frozen_importlib"), sys.modules.get("_frozen_importlib_external"))
    modules = {id(m): m for m in (sys.modules.get("_imp"), *(getattr(h, "_imp", None) for h in holders)) if m}
    for imp in modules.values():
        for name in _MODULE_BUILDERS:
            if hasattr(imp, name):
                setattr(imp, name, _refuse_module_builder)


def _run_call(prepared: dict[str, Any], setup: dict[str, Any], raw_request: bytearray, out: int) -> None:
    """Decode the request, confine this child further, run the call and write one frame to ``out``."""
    import builtins
    import resource

    request = json.loads(raw_request)
    limits, nonce = setup["limits"], request.get("nonce", "")
    write, end_process = os.write, os._exit
    frame = encode_frame

    def send(payload: dict[str, Any], status: int) -> None:
        try:
            write(out, frame({"nonce": nonce, **payload}))
        finally:
            end_process(status)

    def end_with_error(message: str) -> None:
        send({"error": message}, 0)

    cpu = int(limits["cpu_seconds"])
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    envsim_dir = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout
    tripwire = setup.get("tripwire", True)
    if tripwire:
        for name in prepared["forbidden_loaded"]:
            sys.modules.pop(name, None)
    _strip_module_builders()
    sys.meta_path[:] = [_RefuseImports()]
    sys.path_hooks.clear()
    sys.path_importer_cache.clear()
    sys.path[:] = []
    # stdout/stderr go to a pipe the worker drains and counts (bounded); no Python object in between.
    sys.stdout = sys.stderr = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), write_through=True,
                                               errors="replace")
    wrap_class, call_in_process, action_type = prepared["wrap_class"], prepared["call_in_process"], prepared["Action"]
    code, class_name, source = prepared["code"], setup["class_name"], setup["source"]
    load, tools, memory = setup.get("load", "attrs"), setup.get("tools"), limits["memory_bytes"]
    if prepared["call_filter"] is not None:
        prepared["call_filter"]()
    if tripwire:
        sys.addaudithook(_tripwire(out, nonce, envsim_dir))
    prepared = setup = raw_request = None  # type: ignore[assignment]  # not kept in this frame
    try:
        module = type(sys)("envsim_untrusted")  # a module, so libraries that look classes' modules up find it
        module.__builtins__ = builtins
        sys.modules["envsim_untrusted"] = module
        namespace: dict[str, Any] = module.__dict__
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


def _violation(reason: str, out: int, prefix: bytes, quote: Any, encode: Any, pack: Any, write: Any,
               end_process: Any, status: int) -> None:
    """Write the violation frame and end the process (everything it uses is passed in by the hook)."""
    try:
        body = prefix + encode(quote(reason)) + b"}"
        write(out, pack(len(body)) + body)
    finally:
        end_process(status)


def _tripwire(out: int, nonce: str, envsim_dir: str) -> Any:
    """The audit hook of a call child: the first forbidden event reports itself and ends the process.

    It never calls code the untrusted class could supply (no ``repr`` of foreign objects, exact type
    checks only), so it cannot be re-entered or tampered with from inside one of its own checks. All
    it uses is bound in its default arguments (an immutable tuple; replacing it is an audited event
    the hook reports): no closure cell and no frame local the untrusted code can reach can silence it.
    The hook itself is referenced only by the interpreter.
    """
    prefix = ('{"nonce":' + json.dumps(nonce) + ',"violation":').encode()

    def shown(value: Any, type_: Any = type, repr_: Any = repr, str_: Any = str,
              qualname: Any = type.__dict__["__qualname__"].__get__) -> str:
        if type_(value) in (str, bytes, int):
            return repr_(value)
        name = qualname(type_(value))  # the type's own name: a metaclass property never runs here
        return f"<{name if type_(name) is str_ else '?':.40}>"

    def hook(event: str, args: tuple[Any, ...], report: Any = _violation, shown: Any = shown,
             channel: tuple[Any, ...] = (out, prefix, json.encoder.encode_basestring_ascii, str.encode,
                                         _HEADER.pack, os.write, os._exit, VIOLATION_EXIT),
             flagged: tuple[str, ...] = _FLAGGED_EVENTS, frame_attributes: tuple[str, ...] = _FRAME_ATTRIBUTES,
             rewrites: tuple[str, ...] = _REWRITES, guarded: tuple[str, ...] = _GUARDED_DEFAULTS,
             function: type = type(_violation), forbidden: tuple[str, ...] = FORBIDDEN_MODULES,
             envsim_dir: str = envsim_dir, split: Any = str.split, startswith: Any = str.startswith,
             type_: Any = type, memory: str = SQLITE_MEMORY) -> None:
        if event == "open":
            report(f"file access ({shown(args[0]) if args else '?'}, mode {shown(args[1]) if len(args) > 1 else 'r'})",
                   *channel)
        elif event == "import":
            name = args[0] if args and type_(args[0]) is str else "?"
            if split(name, ".")[0] in forbidden:
                report(f"{name} (import of a forbidden module)", *channel)
        elif event == "sqlite3.connect":
            if not (args and type_(args[0]) is str and args[0] == memory):
                report(f"a SQLite database other than {memory} ({shown(args[0]) if args else '?'})", *channel)
        elif startswith(event, "sqlite3.") and "load_extension" in event:
            report(f"{event} (loading a SQLite extension)", *channel)
        elif startswith(event, flagged):
            report(event, *channel)
        elif event == "sys._getframe":
            code = args[0].f_code if args and type_(args[0]).__name__ == "frame" else None
            if code is None or startswith(code.co_filename, envsim_dir):
                report("sys._getframe reaching the sandbox's own frames", *channel)
        elif event == "object.__getattr__" and len(args) > 1:
            if type_(args[1]) is not str or args[1] in frame_attributes:
                report(f"frame introspection ({shown(args[1])})", *channel)
        elif event == "object.__setattr__" and len(args) > 1:
            if type_(args[1]) is not str or args[1] in rewrites:
                report(f"rewriting a function or class ({shown(args[1])})", *channel)
            elif args[1] in guarded and type_(args[0]) is function and startswith(args[0].__code__.co_filename,
                                                                                 envsim_dir):
                report(f"rewriting a function of the sandbox ({shown(args[1])})", *channel)

    return hook


if __name__ == "__main__":
    main()
