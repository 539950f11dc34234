"""The operating-system layers that confine a sandbox worker (each step is applied by the worker itself).

Layers (each one alone stops the escapes it is named for; together one missed hole is not an escape):

- ``session``: the worker runs in its own session and process group; a timeout kills the group.
- ``rlimits``: address space, CPU seconds (per call), file size 0, no core dumps, few open files, no
  new processes (``RLIMIT_NPROC``, enforced once the uid is unprivileged).
- ``uid``: a worker started as root drops to its own unprivileged uid/gid (no supplementary groups),
  one that is verifiably unused (outside ``/etc/subuid``/``/etc/subgid`` ranges and the user database,
  no process running as it). A worker not started as root keeps the caller's uid and says so; it is
  accepted only where ``landlock-scope`` and ``seccomp`` stand in for it (``COVERED_BY``).
- ``landlock``: a Landlock ruleset that handles every file-system right and allows none, so the
  confined process cannot open, list, create, change or remove any path (open descriptors still work).
- ``landlock-scope``: a Landlock domain scoped for signals and abstract Unix sockets (ABI 6, Linux
  6.12): no signal of any kind (``kill``, ``SIGIO``/``SIGURG`` through a file owner) reaches a process
  outside the sandbox, whatever its uid. On an older kernel a worker started as root is accepted
  without it (its private uid and seccomp stop signals to anyone else).
- ``seccomp``: a libseccomp filter that kills the process on process creation, ``execve``, sockets,
  ``ptrace``, ``io_uring``, namespace and mount calls, opening a file for writing, every
  path-modifying call (rename, unlink, mkdir, mknod, chmod, utime, xattr ...) and making a descriptor
  signal its owner (``fcntl`` ``F_SETOWN``/``F_SETOWN_EX``/``F_SETSIG``/``O_ASYNC``, ``ioctl``
  ``FIOSETOWN``/``SIOCSPGRP``/``FIOASYNC``). Per call a second, stricter filter is stacked that also
  kills on ``fork``/``clone`` and on sending signals, and refuses (``EACCES``) every call that reads
  metadata by path (``stat``, ``statx``, ``access``, ``readlink``, ``getxattr``, ``O_PATH`` opens ...).
- ``tripwire``: a ``sys.addaudithook`` hook that reports and ends the call on the first forbidden
  Python-level operation (a tripwire for clear messages, not a boundary). Its report path lives only
  in the hook's own default arguments (changing those is itself an audited event), so untrusted code
  cannot switch it off through the frames or closures it can reach.
"""

from __future__ import annotations

import errno
import os
import platform
import resource
from typing import Any, Iterable, Iterator

LAYERS = ("session", "rlimits", "uid", "landlock", "landlock-scope", "seccomp", "tripwire")
# A layer that may be missing when every layer named for it is active (what it guards, they guard).
# (Coverage needs the covering layers active themselves: with both uid and landlock-scope missing, neither is.)
COVERED_BY = {"uid": ("landlock", "landlock-scope", "seccomp"), "landlock-scope": ("uid", "seccomp")}
PRIVATE_UID_BASE = 0x70000000  # systemd's "unused" block, above its container ranges, below the foreign range
_PID_SPAN = 1 << 22            # pid_max can not exceed this: base + pid + k * span never collide between pids
_LANDLOCK_SCOPE_ABI = 6
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1, 2

# Syscalls no confined process needs: killed in the worker and in every call child.
_KILL_ALWAYS = (
    "execve", "execveat", "vfork", "socket", "socketpair", "connect", "bind", "listen", "accept", "accept4",
    "sendto", "sendmsg", "sendmmsg", "recvfrom", "recvmsg", "recvmmsg", "getsockopt", "setsockopt",
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_open", "pidfd_getfd", "pidfd_send_signal",
    "mount", "umount2", "pivot_root", "chroot", "setns", "unshare", "open_tree", "move_mount", "fsopen",
    "fsmount", "fsconfig", "fspick", "mount_setattr", "kexec_load", "kexec_file_load", "init_module",
    "finit_module", "delete_module", "bpf", "perf_event_open", "keyctl", "add_key", "request_key",
    "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register", "personality", "iopl", "ioperm",
    "reboot", "swapon", "swapoff", "acct", "quotactl", "syslog", "memfd_create", "memfd_secret",
    "name_to_handle_at", "open_by_handle_at", "fanotify_init", "inotify_init", "inotify_init1",
    "setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid", "setfsuid", "setfsgid",
    "setgroups", "capset", "setsid", "setpgid", "creat", "openat2",
    "rename", "renameat", "renameat2", "unlink", "unlinkat", "rmdir", "mkdir", "mkdirat", "link", "linkat",
    "symlink", "symlinkat", "chmod", "fchmod", "fchmodat", "chown", "fchown", "lchown", "fchownat",
    "truncate", "ftruncate", "fallocate", "utime", "utimes", "utimensat", "futimesat", "mknod", "mknodat",
    "setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr", "fremovexattr",
    "landlock_create_ruleset", "landlock_add_rule", "clone3",
    "msgget", "msgsnd", "msgrcv", "msgctl", "semget", "semop", "semctl", "semtimedop", "shmget", "shmat", "shmctl",
    "shmdt", "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr",
    "kcmp", "process_madvise", "move_pages", "migrate_pages", "settimeofday", "clock_settime", "clock_adjtime",
    "adjtimex", "vhangup", "uselib", "sethostname", "setdomainname", "lookup_dcookie", "quotactl_fd",
)
# Also killed in a call child (the worker itself needs them to fork calls and end them).
_KILL_IN_CALL = ("clone", "fork", "kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo")
# Make a descriptor signal its owner (the SIGIO escape): fcntl commands and ioctl requests.
_F_SETFL, _F_SETOWN, _F_SETSIG, _F_SETOWN_EX, _O_ASYNC = 4, 8, 10, 15, 0o20000
_SIGNAL_OWNER_IOCTLS = (0x8901, 0x8902, 0x5452, 0x5410)  # FIOSETOWN, SIOCSPGRP, FIOASYNC, TIOCSPGRP
# Refused with EACCES in a call child: every call that reads metadata of a path (Landlock cannot).
_PATH_METADATA = ("stat", "lstat", "newfstatat", "fstatat64", "stat64", "lstat64", "statx", "access", "faccessat",
                  "faccessat2", "readlink", "readlinkat", "getxattr", "lgetxattr", "listxattr", "llistxattr",
                  "statfs", "statfs64", "chdir")
_PATH_METADATA_X86_64 = (464, 465, 468)  # getxattrat, listxattrat, file_getattr (newer than libseccomp)
_O_PATH = getattr(os, "O_PATH", 0o10000000)
_WRITE_FLAGS = (os.O_WRONLY, os.O_RDWR, os.O_CREAT, os.O_TRUNC, os.O_APPEND, getattr(os, "O_TMPFILE", 0))
_CLONE_NAMESPACE_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000,
                          0x40000000, 0x00000080, 0x00010000)  # NEWNS..NEWNET, NEWTIME, CLONE_THREAD


def landlock_abi() -> int:
    """The Landlock ABI version of the running kernel, or 0 when Landlock is unavailable."""
    try:
        import landlock
        return int(landlock.landlock_abi_version())
    except Exception:  # noqa: BLE001 - package, syscall or LSM missing
        return 0


def set_limits(memory_bytes: int) -> None:
    """Address space, no core dumps, file size 0, few descriptors; started as root (so the uid will be
    private to this worker), also no processes beyond this one and one call child."""
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
    if os.getuid() == 0:  # RLIMIT_NPROC counts every process of the uid: only meaningful for a private one
        tasks = len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else 1
        resource.setrlimit(resource.RLIMIT_NPROC, (tasks + 1, tasks + 1))


def _colon_fields(paths: Iterable[str]) -> Iterator[list[str]]:
    """The ``:``-separated fields of every line of ``/etc``-style files (missing files give none)."""
    for path in paths:
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                lines = handle.read().splitlines()
        except OSError:
            continue
        for line in lines:
            yield line.strip().split(":")


def _subordinate_ranges(paths: Iterable[str]) -> list[tuple[int, int]]:
    """``(start, count)`` of every range in ``/etc/subuid``-style files (missing files give none)."""
    return [(int(f[1]), int(f[2])) for f in _colon_fields(paths)
            if len(f) == 3 and f[1].isdigit() and f[2].isdigit()]


def _database_ids(paths: Iterable[str]) -> set[int]:
    """Ids named in ``/etc/passwd``/``/etc/group`` (third field)."""
    return {int(f[2]) for f in _colon_fields(paths) if len(f) > 2 and f[2].isdigit()}


def ids_in_use(proc: str = "/proc") -> set[int]:
    """Every uid and gid (real, effective, saved, file system) of a process running now."""
    ids: set[int] = set()
    for entry in os.listdir(proc):
        if not entry.isdigit():
            continue
        try:
            with open(f"{proc}/{entry}/status", encoding="ascii", errors="replace") as handle:
                for line in handle:
                    if line.startswith(("Uid:", "Gid:")):
                        ids.update(int(v) for v in line.split()[1:])
        except (OSError, ValueError):
            continue
    return ids


def private_uid(pid: int, *, etc: str = "/etc", proc: str = "/proc", tries: int = 64) -> int:
    """A uid (used as the gid too) for the worker with ``pid`` that is verifiably unused: outside every
    ``/etc/subuid``/``/etc/subgid`` range, not in ``/etc/passwd``/``/etc/group``, no process running as it.

    Candidates are ``PRIVATE_UID_BASE + pid + k * 2**22``, so workers with different pids never pick
    the same one. Raises ``OSError`` when none of ``tries`` candidates is free.
    """
    ranges = _subordinate_ranges((f"{etc}/subuid", f"{etc}/subgid"))
    taken = _database_ids((f"{etc}/passwd", f"{etc}/group")) | ids_in_use(proc)
    for k in range(tries):
        uid = PRIVATE_UID_BASE + pid % _PID_SPAN + k * _PID_SPAN
        if uid not in taken and not any(start <= uid < start + count for start, count in ranges):
            return uid
    raise OSError(errno.EAGAIN, "no unused uid found for the sandbox worker")


def drop_privileges() -> int:
    """As root, switch to a private, verifiably unused uid/gid (``private_uid``); returns that uid.

    Not started as root there is no uid to switch to: raises ``OSError`` saying so (the layer is then
    reported missing, and ``COVERED_BY`` says which layers stand in for it).
    """
    if os.getuid() != 0 and os.geteuid() != 0:
        raise OSError(errno.EPERM, f"not started as root: the worker keeps your uid {os.getuid()} (signals and "
                                   "ptrace to your processes are stopped by landlock-scope and seccomp instead)")
    uid = private_uid(os.getpid())
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    if os.getuid() == 0 or os.geteuid() == 0:
        raise OSError(errno.EPERM, "could not drop root privileges")
    return uid


def parent_death_signal() -> Any:
    """A function that makes the calling process receive SIGKILL when its parent ends (``process_guard``; Linux
    prctl, looked up before confinement)."""
    from envsim.process_guard import death_signal_arm

    return death_signal_arm()


def apply_landlock() -> None:
    """Handle every file-system right and allow none: no path can be opened, listed or changed."""
    import landlock
    ruleset = landlock.Ruleset()
    try:
        ruleset.apply()  # sets no_new_privs, then restricts this process and its children
    finally:
        os.close(ruleset._fd)  # the package keeps the ruleset descriptor open; no call child needs it


def apply_landlock_scope() -> None:
    """Stack a Landlock domain scoped for signals and abstract Unix sockets (ABI 6): from now on this
    process and its children can signal only processes inside the sandbox (``OSError`` if unsupported)."""
    import ctypes

    abi = landlock_abi()
    if abi < _LANDLOCK_SCOPE_ABI:
        raise OSError(errno.ENOSYS, f"Landlock ABI {abi} has no signal scoping (needs ABI 6, Linux 6.12)")

    class RulesetAttr(ctypes.Structure):
        _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                    ("scoped", ctypes.c_uint64)]

    libc = ctypes.CDLL(None, use_errno=True)
    syscall, prctl = libc.syscall, libc.prctl
    syscall.restype = ctypes.c_long
    attr = RulesetAttr(0, 0, _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL)
    fd = syscall(ctypes.c_long(444), ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)), ctypes.c_uint32(0))
    if fd < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset (scoped) failed")
    try:
        if prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
            raise OSError(ctypes.get_errno(), "PR_SET_NO_NEW_PRIVS failed")
        if syscall(ctypes.c_long(446), ctypes.c_int(fd), ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self (scoped) failed")
    finally:
        os.close(fd)


def _add(f: Any, action: int, syscall: str | int, *args: Any) -> None:
    """Add one rule; a system call this architecture or libseccomp does not know is skipped."""
    try:
        f.add_rule(action, syscall, *args)
    except Exception:  # noqa: BLE001 - syscall unknown on this architecture
        pass


def build_filter(*, in_call: bool) -> Any:
    """A libseccomp filter (not loaded): kill on the calls above; ``in_call`` adds fork/clone/signals
    and refuses path metadata reads with ``EACCES``."""
    import pyseccomp as sc

    kill = sc.KILL_PROCESS
    f = sc.SyscallFilter(sc.ALLOW)
    for name in _KILL_ALWAYS + (_KILL_IN_CALL if in_call else ()):
        _add(f, kill, name)
    low32 = 0xFFFFFFFF  # int/unsigned int arguments: the kernel reads the low 32 bits only
    for name in ("fcntl", "fcntl64"):
        for command in (_F_SETOWN, _F_SETSIG, _F_SETOWN_EX):
            _add(f, kill, name, sc.Arg(1, sc.MASKED_EQ, low32, command))
        _add(f, kill, name, sc.Arg(1, sc.MASKED_EQ, low32, _F_SETFL), sc.Arg(2, sc.MASKED_EQ, _O_ASYNC, _O_ASYNC))
    for request in _SIGNAL_OWNER_IOCTLS:
        _add(f, kill, "ioctl", sc.Arg(1, sc.MASKED_EQ, low32, request))
    if in_call:
        refuse = sc.ERRNO(errno.EACCES)
        for name in _PATH_METADATA + (_PATH_METADATA_X86_64 if platform.machine() == "x86_64" else ()):
            _add(f, refuse, name)
        _add(f, refuse, "open", sc.Arg(1, sc.MASKED_EQ, _O_PATH, _O_PATH))
        _add(f, refuse, "openat", sc.Arg(2, sc.MASKED_EQ, _O_PATH, _O_PATH))
    for flag in _WRITE_FLAGS:
        if flag:
            f.add_rule(kill, "open", sc.Arg(1, sc.MASKED_EQ, flag, flag))
            f.add_rule(kill, "openat", sc.Arg(2, sc.MASKED_EQ, flag, flag))
    if not in_call:
        for flag in _CLONE_NAMESPACE_FLAGS:
            f.add_rule(kill, "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    return f


def compiled_filter(syscall_filter: Any) -> Any:
    """The filter compiled to BPF once, with a loader that installs it in one ``prctl`` (per call)."""
    import ctypes
    import tempfile

    with tempfile.TemporaryFile() as handle:
        syscall_filter.export_bpf(handle)
        handle.seek(0)
        program = handle.read()
    if not program or len(program) % 8:
        raise OSError("libseccomp exported no BPF program")
    instructions = (ctypes.c_uint64 * (len(program) // 8)).from_buffer_copy(program)

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = SockFprog(len(program) // 8, ctypes.addressof(instructions))
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]
    pointer = ctypes.addressof(fprog)

    def load() -> None:
        if prctl(38, 1, None, 0, 0) != 0 or prctl(22, 2, pointer, 0, 0) != 0:  # NO_NEW_PRIVS; SECCOMP FILTER
            raise OSError(ctypes.get_errno(), "loading the seccomp filter failed")

    load.keep = (instructions, fprog)  # type: ignore[attr-defined]  # the program must outlive the loader
    return load
