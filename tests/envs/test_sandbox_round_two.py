"""Issue 21, the sandbox kernel items: each attack of the outside audit, reproduced and stopped.

Signals (item 2) are tried as root and, through ``setpriv``, as an ordinary user; each layer that
claims to stop them is also run alone, and a control run with those layers off shows the attack is real.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import uuid

import pytest

from envsim.envs.sandbox import runner as sandbox
from envsim.envs.sandbox import confine as sandbox_confine
from envsim.envs.adapters.untrusted import EnvironmentSourceError, MAX_SOURCE_BYTES, from_envscaler
from envsim.envs.sandbox import Limits, SandboxError, confinement_report, execute, run_request

LIMITS = Limits(cpu_seconds=3, wall_seconds=8, memory_bytes=512 << 20)
LAYERS = confinement_report()
pytestmark = pytest.mark.skipif(bool(sandbox.uncovered_layers(LAYERS)),
                                reason=f"confinement layers unavailable here: {LAYERS}")
as_root = pytest.mark.skipif(os.getuid() != 0 or shutil.which("setpriv") is None,
                             reason="needs root and setpriv to act as other users")
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _request(body: str, *, state: dict | None = None, tool: str = "attack", extra: str = "") -> dict:
    source = (f"class Attack:\n{extra}    def {tool}(self) -> dict:\n"
              + textwrap.indent(textwrap.dedent(body), "        ") + "\n        return {'done': True}\n")
    return {"source": source, "class_name": "Attack", "load": "attrs", "tools": [tool],
            "state": state or {}, "action": {"name": tool, "arguments": {}}}


def _sleeper(uid: int | None = None) -> subprocess.Popen:
    command = ["sleep", "60"]
    if uid is not None:
        command = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", *command]
    proc = subprocess.Popen(command)
    deadline = time.monotonic() + 10  # setpriv switches ids after the fork: wait for it, not a fixed 50 ms
    while uid is not None and time.monotonic() < deadline and proc.poll() is None:
        try:
            status = open(f"/proc/{proc.pid}/status").read()
        except OSError:
            break
        if any(line.startswith("Uid:") and str(uid) in line.split() for line in status.splitlines()):
            break
        time.sleep(0.01)
    time.sleep(0.05)
    return proc


def _stop(*procs: subprocess.Popen) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


# --- item 2: the SIGIO signal escape ------------------------------------------------------------

# The audit's chain: silence the tripwire through every frame, closure and module global reachable
# from the call, reach ctypes without importing it, then make pipes signal chosen processes.
SIGNAL_ATTACK = """
import os, sys
frame = sys._getframe(0)
while frame is not None:
    for value in list(frame.f_locals.values()):
        for cell in getattr(value, "__closure__", None) or ():
            try:
                cell.cell_contents = lambda *a, **k: None
            except Exception:
                pass
    if frame.f_globals.get("__name__", "").startswith("envsim"):
        for name in ("_violation", "encode_frame", "_HEADER"):
            frame.f_globals[name] = None
    frame = frame.f_back
cdll = [c for c in object.__subclasses__() if c.__name__ == "CDLL"]
if not cdll:
    import ctypes
    cdll = [ctypes.CDLL]
libc = cdll[0](None)
for target, number in TARGETS:
    r, w = os.pipe()
    libc.fcntl(r, 8, target)                              # F_SETOWN
    libc.fcntl(r, 10, number)                             # F_SETSIG
    libc.fcntl(r, 4, libc.fcntl(r, 3) | 0o20000)          # F_SETFL |= O_ASYNC
    os.write(w, b"x")
"""

# (case, run_request keyword arguments, whether the target must survive)
SIGNAL_CASES = [
    ("all-layers", {}, True),
    ("os-layers", {"tripwire": False}, True),
    ("landlock-scope-alone", {"tripwire": False, "confine": ("session", "rlimits", "landlock", "landlock-scope")},
     True),
    ("control-no-signal-layers", {"tripwire": False, "confine": ("session", "rlimits", "landlock")}, False),
]


def _signal_attack(targets: list[tuple[int, int]], **kwargs) -> str:
    body = SIGNAL_ATTACK.replace("TARGETS", repr(targets))
    try:
        run_request(_request(body), LIMITS, allow_unconfined=bool(kwargs), **kwargs)
    except SandboxError as exc:
        return f"SandboxError: {exc}"
    return "ran"


@pytest.mark.parametrize("case,kwargs,survives", SIGNAL_CASES + [
    ("uid-alone", {"tripwire": False, "confine": ("session", "rlimits", "uid")}, True)],
    ids=[c[0] for c in SIGNAL_CASES] + ["uid-alone"])
def test_sigio_escape_as_the_current_user(case, kwargs, survives):
    """As root (the worker's private uid also stops it) or as whoever runs the tests."""
    if case == "uid-alone" and os.getuid() != 0:
        pytest.skip("a private uid needs root")
    victim = _sleeper()
    try:
        outcome = _signal_attack([(victim.pid, 9)], **kwargs)
        assert _alive_after_attack(victim) == survives, (case, outcome, victim.poll())
        if case in ("all-layers", "os-layers"):
            assert "forbidden operation" in outcome, outcome
    finally:
        _stop(victim)


def _alive_after_attack(victim: subprocess.Popen, wait_s: float = 2.0) -> bool:
    """Whether ``victim`` survived the attack: waited for, not looked at after a fixed pause, so that a kill a
    loaded machine delivers late is still seen (the attack has returned: any signal it sent is already pending)."""
    try:
        victim.wait(timeout=wait_s)
        return False
    except subprocess.TimeoutExpired:
        return True


ORDINARY_USER_SCRIPT = """
import json, os, subprocess, sys, time
sys.path.insert(0, {repo!r})
from tests.envs.test_sandbox_round_two import SIGNAL_CASES, _alive_after_attack, _signal_attack
from envsim.envs.sandbox import confinement_report
results = {{"layers": confinement_report(), "uid": os.getuid()}}
for case, kwargs, survives in SIGNAL_CASES:
    victim = subprocess.Popen(["sleep", "60"])
    time.sleep(0.05)
    targets = [(victim.pid, 9)] + ([(os.getpid(), 15)] if survives else [])   # EnvSim itself, too
    results[case] = _signal_attack(targets, **kwargs)
    results[case + ":victim_alive"] = _alive_after_attack(victim)
    victim.kill()
    victim.wait()
print(json.dumps(results))
"""


def _interpreter_for_others(directory: str) -> str:
    """A Python another user can run, seeing this checkout's packages (this venv's interpreter may sit
    under a directory only root can enter): a venv of the system Python of the same version."""
    system = shutil.which(f"python{sys.version_info.major}.{sys.version_info.minor}", path="/usr/bin:/usr/local/bin")
    if system is None:
        pytest.skip("no system Python of this version for an ordinary user")
    subprocess.run([system, "-m", "venv", "--without-pip", directory], check=True, timeout=60)
    site = os.path.join(directory, "lib", f"python{sys.version_info.major}.{sys.version_info.minor}", "site-packages")
    packages = next(p for p in sys.path if p.endswith("site-packages") and os.path.isdir(p))
    with open(os.path.join(site, "envsim_checkout.pth"), "w") as handle:
        handle.write(f"import site; site.addsitedir({packages!r})\n")
    return os.path.join(directory, "bin", "python")


@pytest.mark.slow
@as_root
def test_sigio_escape_as_an_ordinary_user():
    """The audit's setting: EnvSim run by an ordinary user, who owns the victim and EnvSim itself."""
    uid = sandbox_confine.private_uid(os.getpid() + 7919)
    home = tempfile.mkdtemp(prefix="envsim-ordinary-")
    try:
        os.chmod(home, 0o777)
        python = _interpreter_for_others(os.path.join(home, "venv"))
        subprocess.run(["chmod", "-R", "a+rX", home], check=True)
        script = ORDINARY_USER_SCRIPT.format(repo=REPO)
        run = subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", python, "-c", script],
                             capture_output=True, text=True, timeout=120, cwd=home,
                             env={"PATH": "/usr/bin:/bin", "HOME": home, "TMPDIR": home, "LANG": "C.UTF-8"})
    finally:
        shutil.rmtree(home, ignore_errors=True)
    assert run.returncode == 0, (run.returncode, run.stderr[-2000:])  # 143 = EnvSim was signalled
    results = json.loads(run.stdout.strip().splitlines()[-1])
    assert results["uid"] == uid
    assert "not started as root" in results["layers"]["uid"]  # the report says so, it does not claim a uid
    assert all(v is None for k, v in results["layers"].items() if k != "uid"), results["layers"]
    for case, _, survives in SIGNAL_CASES:
        assert results[f"{case}:victim_alive"] == survives, (case, results[case])
    assert "forbidden operation" in results["all-layers"] and "forbidden operation" in results["os-layers"]


def test_a_missing_uid_layer_is_accepted_only_where_others_stand_in():
    layers = dict.fromkeys(sandbox_confine.LAYERS)
    layers["uid"] = "not started as root: the worker keeps your uid 1000"
    assert sandbox.uncovered_layers(layers) == {}
    layers["landlock-scope"] = "Landlock ABI 5 has no signal scoping"
    assert set(sandbox.uncovered_layers(layers)) == {"uid", "landlock-scope"}   # neither stands in for the other
    layers["uid"] = None                                                   # root on a kernel before 6.12
    assert sandbox.uncovered_layers(layers) == {}
    layers["seccomp"] = "seccomp unavailable"
    assert set(sandbox.uncovered_layers(layers)) == {"landlock-scope", "seccomp"}


def test_tripwire_survives_tampering_with_everything_the_call_reaches(tmp_path):
    """The chain's first step alone: after the tampering, a forbidden operation is still reported."""
    os.chmod(tmp_path, 0o777)
    marker = str(tmp_path / "owned")
    body = SIGNAL_ATTACK.split("cdll =")[0] + f"open({marker!r}, 'w').write('x')\n"
    with pytest.raises(SandboxError, match="forbidden operation: file access"):
        run_request(_request(body), LIMITS)
    assert not os.path.exists(marker)


# --- item 3: nothing of one call reaches the next ------------------------------------------------

SNOOP = """
import sys
needle = NEEDLE[::-1]  # built at run time: the source holds it reversed only
seen, found, stack = {id(needle)}, [], []
frame = sys._getframe(0)
while frame is not None:
    stack.extend(frame.f_locals.values())
    frame = frame.f_back
if GC:
    import gc
    for obj in gc.get_objects():
        stack.extend(gc.get_referents(obj))
while stack and len(seen) < 2_000_000:
    value = stack.pop()
    if id(value) in seen:
        continue
    seen.add(id(value))
    if isinstance(value, (str, bytes, bytearray)):
        text = value if isinstance(value, str) else bytes(value).decode("latin-1")
        if needle in text:
            found.append(type(value).__name__)
    elif isinstance(value, dict):
        stack.extend(value.keys())
        stack.extend(value.values())
    elif isinstance(value, (list, tuple, set, frozenset)):
        stack.extend(value)
return {"found": found, "searched": len(seen)}
"""


@pytest.mark.parametrize("tripwire", [True, False], ids=["frames", "frames-and-gc"])
def test_a_call_cannot_read_the_previous_calls_values(tripwire):
    secret = f"4111-{uuid.uuid4().hex}"
    extra = "    def read(self) -> dict:\n        return {'card': self.card}\n"
    snoop = SNOOP.replace("NEEDLE", repr(secret[::-1])).replace("GC", repr(not tripwire))
    first = _request(snoop, tool="snoop", extra=extra)
    first.update(state={"card": secret}, tools=["snoop", "read"], action={"name": "read", "arguments": {}})
    answer = run_request(first, LIMITS, tripwire=tripwire, allow_unconfined=not tripwire)
    assert answer["observation"] == {"card": secret}            # episode A: the card is in its answer
    second = {**first, "state": {"card": "0000"}, "action": {"name": "snoop", "arguments": {}}}
    found = run_request(second, LIMITS, tripwire=tripwire, allow_unconfined=not tripwire)["observation"]
    assert found["searched"] > 100 and found["found"] == [], found


# --- item 4: closing a worker kills only what it started ------------------------------------------

def test_private_uid_skips_subordinate_ranges_users_and_running_ids(tmp_path):
    pid = 4242
    first = sandbox_confine.PRIVATE_UID_BASE + pid
    step = 1 << 22
    (tmp_path / "subuid").write_text(f"someone:{first - 10}:65536\n")
    (tmp_path / "passwd").write_text(f"svc:x:{first + step}:{first + step}::/:/bin/false\n")
    assert sandbox_confine.private_uid(pid, etc=str(tmp_path)) == first + 2 * step
    assert sandbox_confine.private_uid(pid, etc=str(tmp_path / "none")) == first


@as_root
def test_private_uid_is_not_one_a_process_runs_as():
    pid = os.getpid() + 104729
    taken = sandbox_confine.private_uid(pid)
    squatter = _sleeper(taken)
    try:
        assert taken in sandbox_confine.ids_in_use()
        assert sandbox_confine.private_uid(pid) != taken
    finally:
        _stop(squatter)


def _worker_uid(pid: int) -> int:
    with open(f"/proc/{pid}/status") as handle:
        return next(int(line.split()[1]) for line in handle if line.startswith("Uid:"))


@as_root
def test_closing_a_worker_spares_processes_it_did_not_start():
    request = _request("pass")
    request["source"] = request["source"].replace("Attack", "Spared")
    request["class_name"] = "Spared"
    run_request(request, LIMITS)
    worker = next(w for w in sandbox._POOL._workers.values() if w.setup["class_name"] == "Spared")
    uid = _worker_uid(worker.proc.pid)
    assert uid >= sandbox_confine.PRIVATE_UID_BASE
    neighbours = [_sleeper(uid), _sleeper(uid + 1), _sleeper(100000 + worker.proc.pid)]  # same, next, the old scheme
    try:
        sandbox.close_workers()
        time.sleep(0.2)
        assert worker.proc.poll() is not None
        assert [p.poll() for p in neighbours] == [None, None, None]
    finally:
        _stop(*neighbours)


def test_closing_a_worker_kills_the_call_it_started():
    request = _request("import time\ntime.sleep(30)")
    request["source"] = request["source"].replace("Attack", "Napper")
    request["class_name"] = "Napper"
    errors: list[str] = []

    def call() -> None:
        try:
            run_request(request, Limits(cpu_seconds=3, wall_seconds=30))
        except SandboxError as exc:
            errors.append(str(exc))

    thread = threading.Thread(target=call)
    thread.start()
    deadline = time.monotonic() + 10
    worker = None
    while time.monotonic() < deadline:
        worker = next((w for w in list(sandbox._POOL._workers.values()) if w.setup["class_name"] == "Napper"), None)
        if worker is not None and len(sandbox.session_members(worker.proc.pid)) >= 2:
            break
        time.sleep(0.05)
    members = sandbox.session_members(worker.proc.pid)
    assert len(members) >= 2                                  # the worker and its call child
    worker.close()
    thread.join(10)
    assert not thread.is_alive() and errors
    assert sandbox.session_members(worker.proc.pid) == []
    assert all(not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z"
               for pid in members)


# --- item 10: deep states are a SandboxError with a reason ----------------------------------------

@pytest.mark.parametrize("depth", [250, 600])
def test_deeply_nested_next_state_is_a_sandbox_error(depth):
    source = (f"class Deep:\n    def __init__(self, config):\n        self.x = config['x']\n"
              f"    def nest(self) -> dict:\n        value = []\n        for _ in range({depth}):\n"
              f"            value = [value]\n        self.x = value\n        return {{'ok': True}}\n")
    env = from_envscaler({"env_class_code": source, "init_config": {"x": 0}}, limits=LIMITS)
    # the parent refuses what is deeper than 200 levels; past ~500 the child already fails encoding it
    with pytest.raises(SandboxError, match="nested deeper than 200 levels|RecursionError"):
        execute(env, {"x": 0}, {"name": "nest", "arguments": {}})


def test_deeply_nested_state_sent_is_a_sandbox_error():
    state: dict = {"x": []}
    for _ in range(600):
        state = {"x": state}
    with pytest.raises(SandboxError, match="nested deeper than 200 levels"):
        run_request(_request("pass", state=state), LIMITS)


# --- item 9: untrusted source is bounded before it is parsed or compiled ---------------------------

def test_worker_compiles_the_source_under_its_memory_limit():
    """~470 bytes of syntax tree per source byte: 1.5 MB of source needs far more than 128 MiB."""
    request = _request("pass")
    request["source"] = "BIG = [" + "1," * (750 << 10) + "]\n" + request["source"]
    start = time.monotonic()
    with pytest.raises(SandboxError, match="memory limit"):
        run_request(request, Limits(cpu_seconds=5, wall_seconds=10, memory_bytes=128 << 20), fresh=True)
    assert time.monotonic() - start < 15


def test_from_envscaler_bounds_the_source_before_parsing():
    source = "class Big:\n    def a(self) -> dict:\n        return {}\n" + "# pad\n" * (MAX_SOURCE_BYTES // 6 + 1)
    start = time.monotonic()
    with pytest.raises(EnvironmentSourceError, match="over the 262144-byte limit"):
        from_envscaler({"env_class_code": source, "init_config": {}})
    assert time.monotonic() - start < 1.0


# --- item 5: metadata, loaders, unreadable sources --------------------------------------------------

STAT_PROBES = """
import os
path = TARGET
results = {}
probes = {
    "stat": lambda: os.stat(path).st_size,
    "lstat": lambda: os.lstat(path).st_size,
    "getsize": lambda: os.path.getsize(path),
    "exists": lambda: os.path.exists(path),
    "access": lambda: os.access(path, os.F_OK),
    "o_path+fstat": lambda: os.fstat(os.open(path, os.O_PATH)).st_size,
}
for name, probe in probes.items():
    try:
        results[name] = probe()
    except Exception as exc:
        results[name] = type(exc).__name__
return results
"""


@pytest.mark.parametrize("tripwire", [True, False], ids=["all-layers", "os-layers-only"])
def test_stat_does_not_reveal_metadata_outside(tripwire, tmp_path):
    secret = tmp_path / "secret"
    secret.write_bytes(b"x" * 12345)
    os.chmod(secret, 0o600)
    os.chmod(tmp_path, 0o755)
    body = STAT_PROBES.replace("TARGET", repr(str(secret)))
    try:
        answer = run_request(_request(body), LIMITS, tripwire=tripwire, allow_unconfined=not tripwire)
    except SandboxError as exc:  # the tripwire may name the O_PATH open first
        assert "forbidden operation" in str(exc)
        return
    results = answer["observation"]
    assert 12345 not in results.values() and True not in results.values(), results
    assert results["stat"] == "PermissionError" and results["exists"] is False


@pytest.mark.parametrize("loader,module", [("BuiltinImporter", "marshal"), ("BuiltinImporter", "_signal"),
                                           ("FrozenImporter", "importlib.util")])
def test_import_machinery_loaders_cannot_load_a_refused_module(loader, module):
    body = f"""
    importer = [c for c in object.__subclasses__() if c.__name__ == {loader!r}][0]
    loaded = importer.load_module({module!r})
    return {{"loaded": getattr(loaded, "__name__", "?")}}
    """
    with pytest.raises(SandboxError, match="building a module is not available|forbidden operation"):
        run_request(_request(body), LIMITS)


@pytest.mark.parametrize("source,reason", [
    ("class A:\n    def f(self, x={[]: 1}) -> dict:\n        return {}\n", "fails at definition"),
    ("class A:\n    def f(self, x=" + "[" * 300 + "]" * 300 + ") -> dict:\n        return {}\n", "not valid Python"),
    ("class A:\n    def f(self x) -> dict:\n", "not valid Python"),
    ("def f():\n    pass\n", "defines no class"),
    ("class A:\n    def f(self) -> dict:\n        return {}\n\x00", "not valid Python"),
], ids=["unhashable-default", "too-nested", "syntax", "no-class", "null-byte"])
def test_from_envscaler_unreadable_source_is_a_clear_error(source, reason):
    with pytest.raises(EnvironmentSourceError, match=reason):
        from_envscaler({"env_class_code": source, "init_config": {}})


def test_rewriting_the_sandboxs_own_functions_is_reported():
    body = """
    import sys
    frame = sys._getframe(0)
    while frame is not None and "_violation" not in frame.f_globals:
        frame = frame.f_back
    frame.f_globals["_violation"].__defaults__ = (None,) * 9
    """
    with pytest.raises(SandboxError, match="forbidden operation: rewriting a function of the sandbox"):
        run_request(_request(body), LIMITS)
