"""Escape attempts from untrusted string classes: each ends in ``SandboxError`` within the limits.

Every attack runs twice: with every layer on (the audit tripwire names the attempt), and with the
tripwire switched off, which shows that the operating-system layers alone (seccomp, Landlock,
unprivileged uid, rlimits) still stop it: the call is killed or the operation fails, and nothing
happens outside the sandbox.
"""

from __future__ import annotations

import os
import socket
import stat
import textwrap
import time
import uuid

import pytest

from envsim.envs.sandbox import Limits, SandboxError, confinement_report, run_request, uncovered_layers

LIMITS = Limits(cpu_seconds=2, wall_seconds=8, memory_bytes=512 << 20)
LAYERS = confinement_report()
pytestmark = pytest.mark.skipif(bool(uncovered_layers(LAYERS)),
                                reason=f"confinement layers unavailable here: {LAYERS}")
SECRET = f"sk-envsim-test-{uuid.uuid4().hex}"


def _call(body: str, args: dict | None = None, *, tripwire: bool = True, limits: Limits = LIMITS,
          header: str = "") -> dict:
    """Run a one-tool class whose tool body is ``body`` (it may return a dict)."""
    params = "".join(f", {name}: str" for name in (args or {}))
    source = (f"{header}\nclass Attack:\n    def attack(self{params}) -> dict:\n"
              + textwrap.indent(textwrap.dedent(body), "        ") + "\n        return {'done': True}\n")
    return run_request({"source": source, "class_name": "Attack", "load": "attrs", "tools": ["attack"],
                        "state": {}, "action": {"name": "attack", "arguments": args or {}}},
                       limits, tripwire=tripwire, allow_unconfined=not tripwire)


def _expect_stopped(body: str, args: dict | None = None, *, tripwire: bool, **kwargs) -> str:
    """The attack ends in ``SandboxError`` (every layer on) or, with the tripwire off, in
    ``SandboxError`` or a failed operation; returns what stopped it."""
    start = time.monotonic()
    try:
        answer = _call(body, args, tripwire=tripwire, **kwargs)
    except SandboxError as exc:
        assert time.monotonic() - start < LIMITS.wall_seconds + 5
        return str(exc)
    assert not tripwire, f"the attack was not stopped: {answer}"
    observation = answer["observation"]
    assert isinstance(observation, dict) and observation.get("success") is False, observation
    return observation["error"]


@pytest.fixture(params=[True, False], ids=["all-layers", "os-layers-only"])
def tripwire(request):
    return request.param


@pytest.fixture()
def marker(tmp_path):
    os.chmod(tmp_path, 0o777)  # world-writable: only the sandbox's own layers can stop a write here
    return str(tmp_path / "owned")


def test_posixsubprocess_fork_exec(tripwire, marker):
    body = f"""
    import _posixsubprocess, os
    r, w = os.pipe()
    _posixsubprocess.fork_exec([b"/bin/sh", b"-c", b"touch {marker}"], [b"/bin/sh"], True, (w,), None, None,
                               -1, -1, -1, -1, -1, -1, r, w, True, True, -1, None, None, None, -1, None, False)
    """
    reason = _expect_stopped(body, tripwire=tripwire)
    time.sleep(0.2)
    assert not os.path.exists(marker)
    assert "forbidden operation" in reason or "not available" in reason


def test_posixsubprocess_reached_without_import(tripwire, marker):
    """Through ctypes (already loaded in the worker) when the tripwire is off: the kernel refuses."""
    body = f"""
    import ctypes
    libc = ctypes.CDLL(None)
    libc.system(b"touch {marker}")
    """
    reason = _expect_stopped(body, tripwire=tripwire)
    assert not os.path.exists(marker)
    assert "forbidden operation" in reason


@pytest.mark.parametrize("body", [
    "import os\nos.system('touch {marker}')",
    "import importlib\nimportlib.import_module('subprocess').run(['touch', '{marker}'])",
    "__import__('subprocess').run(['touch', '{marker}'])",
    "import os\nif os.fork() == 0:\n    open('{marker}', 'w').write('x')\n    os._exit(0)",
    "import os\nos.execv('/bin/sh', ['sh', '-c', 'touch {marker}'])",
    "import os\nos.posix_spawn('/bin/sh', ['sh', '-c', 'touch {marker}'], {{}})",
], ids=["os.system", "importlib-subprocess", "__import__-subprocess", "os.fork", "os.execv", "posix_spawn"])
def test_process_creation(tripwire, marker, body):
    reason = _expect_stopped(body.format(marker=marker), tripwire=tripwire)
    time.sleep(0.2)
    assert not os.path.exists(marker)
    assert "forbidden operation" in reason or "not available" in reason or "Error" in reason


def test_ctypes_syscalls_are_killed_by_seccomp(marker):
    """With the tripwire off, raw system calls through ctypes meet the seccomp filter."""
    for call in ("libc.fork()", "libc.socket(2, 1, 0)", f"libc.mknod(b'{marker}', 0o10644, 0)",
                 f"libc.open(b'{marker}', 0o101, 0o644)", "libc.kill(1, 9)", "libc.unshare(0x10000000)"):
        reason = _expect_stopped(f"import ctypes\nlibc = ctypes.CDLL(None)\n{call}", tripwire=False)
        assert "seccomp" in reason, (call, reason)
    assert not os.path.exists(marker)


def test_ctypes_import_is_a_violation():
    with pytest.raises(SandboxError, match="forbidden operation: ctypes"):
        _call("import ctypes\nctypes.CDLL(None).getpid()")


@pytest.mark.parametrize("family", ["tcp", "unix"])
def test_sockets(tripwire, family, tmp_path):
    if family == "tcp":
        server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        server.bind(("127.0.0.1", 0))
        address = repr(server.getsockname())
        body = f"import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_STREAM)\ns.connect({address})\ns.send(b'hi')"
    else:
        os.chmod(tmp_path, 0o777)
        path = str(tmp_path / "sock")
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(path)
        os.chmod(path, 0o777)
        body = f"import socket\ns = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\ns.connect({path!r})\ns.send(b'hi')"
    server.listen(1)
    server.settimeout(0.3)
    try:
        _expect_stopped(body, tripwire=tripwire)
        if not tripwire:  # the socket module is not even importable without the worker's modules
            _expect_stopped(body.replace("import socket", "import ctypes\nlibc = ctypes.CDLL(None)\nlibc.socket(1, 1, 0)\nimport socket"),
                            tripwire=False)
        with pytest.raises(socket.timeout):
            server.accept()
    finally:
        server.close()


@pytest.fixture()
def decoy(tmp_path):
    os.chmod(tmp_path, 0o777)
    path = tmp_path / "decoy.txt"
    path.write_text("original")
    os.chmod(path, 0o666)
    return path


@pytest.mark.parametrize("operation", [
    "os.mkfifo({d}[:-4] + 'fifo')", "os.mknod({d}[:-4] + 'node')", "os.utime({d}, (0, 0))",
    "os.setxattr({d}, 'user.owned', b'1')", "os.rename({d}, {d} + '.moved')", "os.remove({d})",
    "os.chmod({d}, 0o777)", "os.truncate({d}, 0)", "open({d}, 'a').write('owned')",
    "os.symlink({d}, {d} + '.link')", "os.link({d}, {d} + '.hard')",
], ids=["mkfifo", "mknod", "utime", "setxattr", "rename", "remove", "chmod", "truncate", "append", "symlink", "link"])
def test_file_system_changes_on_a_decoy(tripwire, decoy, operation):
    before = os.stat(decoy)
    siblings = sorted(os.listdir(decoy.parent))
    _expect_stopped("import os\n" + operation.format(d=repr(str(decoy))), tripwire=tripwire)
    after = os.stat(decoy)
    assert decoy.read_text() == "original"
    assert (after.st_mtime_ns, after.st_mode, after.st_ino) == (before.st_mtime_ns, before.st_mode, before.st_ino)
    assert stat.S_ISREG(after.st_mode) and sorted(os.listdir(decoy.parent)) == siblings
    assert os.listxattr(decoy) == []


@pytest.mark.parametrize("path", ["/etc/hostname", os.path.abspath(__file__), "/root"],
                         ids=["etc", "repository", "root-listing"])
def test_reading_outside_allowed_paths(tripwire, path):
    body = f"import os\nreturn {{'leak': os.listdir({path!r}) if os.path.isdir({path!r}) else open({path!r}).read()}}"
    reason = _expect_stopped(body, tripwire=tripwire)
    assert "forbidden operation" in reason or "PermissionError" in reason


def test_secret_from_the_parent_environment(tripwire, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    body = """
    import os
    found = [os.environ.get("OPENAI_API_KEY"), os.getenv("OPENAI_API_KEY")]
    for pid in (os.getppid(), 1):
        try:
            found.append(open(f"/proc/{pid}/environ").read())
        except Exception as exc:
            found.append(repr(exc))
    if not any(f and "sk-" in f for f in found):
        raise PermissionError(f"no secret found: {found}")
    return {"leak": found}
    """
    reason = _expect_stopped(body, tripwire=tripwire)
    assert SECRET not in reason


def test_hiding_a_violation_through_frames(marker):
    """Walk up to the sandbox's frames (f_back is not audited), then write a file: still reported."""
    body = f"""
    import sys
    frame = sys._getframe(0)
    while frame.f_back is not None:
        frame = frame.f_back
        for value in list(frame.f_locals.values()):
            if isinstance(value, list):
                value.clear()
    try:
        open({marker!r}, "w").write("x")
    except Exception:
        pass
    """
    with pytest.raises(SandboxError, match="forbidden operation: file access"):
        _call(body)
    assert not os.path.exists(marker)


def test_hostile_objects_never_run_inside_the_tripwire(marker):
    """A path whose __repr__/__eq__ would run untrusted code inside the audit hook is shown by type only."""
    body = f"""
    import os
    class Evil(str):
        def __repr__(self):
            os.environ["HOOK_RAN_MY_CODE"] = "1"
            return "harmless"
        def __eq__(self, other):
            os.environ["HOOK_RAN_MY_CODE"] = "1"
            return False
        __hash__ = str.__hash__
    open(Evil({marker!r}), "w")
    """
    with pytest.raises(SandboxError, match=r"file access \(<[\w.<>]*Evil>") as caught:
        _call(body)
    assert "harmless" not in str(caught.value)
    assert not os.path.exists(marker)


def test_getframe_of_the_sandbox_is_a_violation():
    with pytest.raises(SandboxError, match="forbidden operation: sys._getframe"):
        _call("import sys\nsys._getframe(1).f_locals.clear()")


def test_forged_answer_then_violation_is_reported(marker):
    """Forge a success frame with the nonce stolen from the sandbox's frame, then violate."""
    body = f"""
    import sys, json, os, struct
    frame = sys._getframe(0)
    while frame.f_back is not None and "nonce" not in frame.f_locals:
        frame = frame.f_back
    loc = frame.f_locals
    fake = json.dumps({{"nonce": loc.get("nonce"), "observation": {{"forged": True}}, "next_state": {{}}}}).encode()
    os.write(loc["out"], struct.pack(">I", len(fake)) + fake)
    open({marker!r}, "w")
    """
    with pytest.raises(SandboxError, match="forbidden operation: file access"):
        _call(body)
    assert not os.path.exists(marker)


def test_forging_stdout_then_exit(tripwire):
    body = """
    import os, json
    print(json.dumps({"observation": {"forged": True}, "next_state": {}}))
    os.write(1, b'{"observation": {"forged": true}, "next_state": {}}\\n')
    os._exit(0)
    """
    with pytest.raises(SandboxError, match="without a valid answer|forbidden operation"):
        _call(body, tripwire=tripwire)


@pytest.mark.parametrize("via", ["print", "os.write"])
def test_gigabyte_stdout_flood(tripwire, via):
    write = "print(chunk, end='')" if via == "print" else "os.write(1, chunk.encode())"
    body = f"import os\nchunk = 'x' * (1 << 20)\nfor _ in range(1024):\n    {write}"
    start = time.monotonic()
    with pytest.raises(SandboxError, match="output over the limit|forbidden operation"):
        _call(body, tripwire=tripwire)
    assert time.monotonic() - start < LIMITS.wall_seconds


def test_huge_answer_is_refused():
    with pytest.raises(SandboxError, match="size limit"):
        _call("return {'blob': 'x' * (40 << 20)}", limits=Limits(cpu_seconds=5, wall_seconds=10,
                                                                   answer_bytes=1 << 20))


def test_detached_grandchild(tripwire, marker):
    body = f"""
    import os, time
    os.setsid()
    if os.fork() == 0:
        time.sleep(20)
        open({marker!r}, "w").write("x")
        os._exit(0)
    """
    start = time.monotonic()
    _expect_stopped(body, tripwire=tripwire)
    assert time.monotonic() - start < LIMITS.wall_seconds


def test_ignoring_sigterm_and_sigxcpu():
    """Signals ignored through ctypes (tripwire off): the hard CPU limit still kills the call."""
    body = """
    import ctypes
    libc = ctypes.CDLL(None)
    libc.signal(15, 1)
    libc.signal(24, 1)
    while True:
        pass
    """
    start = time.monotonic()
    with pytest.raises(SandboxError, match="CPU-time limit"):
        _call(body, tripwire=False, limits=Limits(cpu_seconds=1, wall_seconds=30))
    assert time.monotonic() - start < 30


def test_ignoring_signals_is_a_violation_with_the_tripwire():
    with pytest.raises(SandboxError, match="forbidden operation: signal"):
        _call("import signal\nsignal.signal(signal.SIGXCPU, signal.SIG_IGN)\nwhile True:\n    pass")


def test_sleeping_past_the_wall_limit_kills_the_call():
    start = time.monotonic()
    with pytest.raises(SandboxError, match="wall-time limit"):
        _call("import time\ntime.sleep(60)", limits=Limits(cpu_seconds=2, wall_seconds=1))
    assert time.monotonic() - start < 6


def test_switching_a_layer_off_needs_the_explicit_opt_out():
    request = {"source": "class A:\n    def a(self) -> dict:\n        return {}\n", "class_name": "A",
               "state": {}, "action": {"name": "a", "arguments": {}}}
    with pytest.raises(SandboxError, match="allow_unconfined=True"):
        run_request(request, tripwire=False)
    with pytest.raises(SandboxError, match="allow_unconfined=True"):
        run_request(request, confine=("session", "rlimits", "uid", "landlock"))


def test_unavailable_module_says_so():
    with pytest.raises(SandboxError, match="module 'numpy' is not available in the sandbox"):
        _call("return {}", header="import numpy")
