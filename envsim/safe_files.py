"""Files EnvSim writes into, and reads from, directories that others may share: never through a link.

A run directory (``envsim eval``, ``report``, ``view``, ``simulate``, ``train``, ``construct`` outputs) may be
shared or tampered with: a symbolic link planted at a name EnvSim writes would make it overwrite the link's
target, and one planted at a name EnvSim reads (``results.jsonl`` -> ``/dev/zero``, a FIFO ``cm_by_delta.png``,
a PNG outside the directory) would make it read without end, block, or show a file it should not. So:

**Writes** (``write_text``, ``write_bytes``, ``write_lines``, ``save_figure``, ``open_fresh``): the target's
directory is opened once and everything happens relative to it. The data goes to a temporary file created there
with ``O_CREAT | O_EXCL | O_NOFOLLOW`` under a random name (a planted name is never opened: an existing one is
skipped, a link is never followed), which is then renamed over the final name. A rename replaces a link at the
final name itself, never its target; a final name that is a directory is refused. ``open_fresh`` (a file written
as it goes: a log, a stream of rewards) removes whatever is at the name and creates a new file with ``O_EXCL``.

**Reads** (``read_bytes``, ``read_text``, ``read_json``, ``iter_lines``): every path component below ``root`` (the
directory the user named; by default the file's own directory) is opened with ``O_NOFOLLOW``, so no link below it
is followed, let alone one leading out of it; the file must be a regular file (no FIFO, device or socket: opened
``O_NONBLOCK``, it never blocks), and at most ``limit`` bytes are read (``iter_lines``: lines up to
``MAX_LINE_BYTES``, files up to ``MAX_JSONL_BYTES``). A refused file raises ``RunFileRefused`` (an ``OSError``:
callers that treat an unreadable file as missing keep doing so) naming the path and why.

Not covered: hard links (a second name of a file elsewhere on the same file system: the kernel's
``protected_hardlinks`` stops others from making one to your files), and the directory the user names itself
(followed as named: it is the user's choice).
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import stat
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Callable, Iterable, Iterator

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: Largest JSON file of a run directory read (config.json, summary.json, drift.json, tiers.json, ...).
MAX_JSON_BYTES = 64 << 20
#: Largest PNG of a run directory embedded in a page.
MAX_PNG_BYTES = 16 << 20
#: Longest line of a JSONL run file read (a chained episode's row with every step); longer lines are skipped.
MAX_LINE_BYTES = 64 << 20
#: Largest JSONL run file read (results.jsonl, episodes.jsonl, steps.jsonl): ~200,000 samples with full answers.
MAX_JSONL_BYTES = 4 << 30

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_NOCTTY = getattr(os, "O_NOCTTY", 0)


class RunFileRefused(OSError):
    """A run-directory file EnvSim will not read or write: a link, not a regular file, or too large."""


# -- writing --------------------------------------------------------------------------------------------------


@contextmanager
def _directory(path: Path, follow: bool = True) -> Iterator[int]:
    """The directory ``path`` opened (created with its parents when missing), as a descriptor; with ``follow``
    false, a link at ``path`` itself is refused (``RunFileRefused``), never followed."""
    path.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_RDONLY | _DIRECTORY | _CLOEXEC | (0 if follow else _NOFOLLOW))
    except OSError as exc:
        if not follow and exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise RunFileRefused(f"{path} is a symbolic link or not a directory; EnvSim does not write through "
                                 "it") from None
        raise
    try:
        yield fd
    finally:
        os.close(fd)


def _create_temporary(dir_fd: int, name: str) -> tuple[int, str]:
    """A new file beside ``name`` in ``dir_fd``: ``O_EXCL | O_NOFOLLOW`` under a random name (mode 0666 less the
    umask, as a plain ``open`` gives)."""
    for _ in range(100):
        temporary = f".{name[:80]}.{secrets.token_hex(8)}.tmp"
        try:
            return os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o666,
                           dir_fd=dir_fd), temporary
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name", name)


def _keep_mode(dir_fd: int, name: str, fd: int) -> None:
    """Give the new file the mode of the regular file it replaces (a link's target is never looked at)."""
    try:
        old = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISREG(old.st_mode):
        os.fchmod(fd, stat.S_IMODE(old.st_mode))
    elif stat.S_ISDIR(old.st_mode):
        raise IsADirectoryError(errno.EISDIR, "a directory is in the way", name)


def _write_with(path: os.PathLike[str] | str, fill: Callable[[IO[bytes]], None], follow_folder: bool = True) -> None:
    """Write ``path`` through a temporary file in its directory, renamed over it (see the module docstring); with
    ``follow_folder`` false, the directory itself must not be a link."""
    target = Path(path)
    with _directory(target.parent, follow_folder) as dir_fd:
        fd, temporary = _create_temporary(dir_fd, target.name)
        try:
            with os.fdopen(fd, "wb") as handle:
                fill(handle)
                handle.flush()
                _keep_mode(dir_fd, target.name, handle.fileno())
            os.replace(temporary, target.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            try:
                os.unlink(temporary, dir_fd=dir_fd)
            except OSError:
                pass
            raise


def write_bytes(path: os.PathLike[str] | str, data: bytes, *, follow_folder: bool = True) -> None:
    """Replace ``path`` with ``data``: never through a link, never half a file. ``follow_folder=False`` for a
    folder EnvSim names itself (``OUT_states``): a link planted there is refused, not followed."""
    _write_with(path, lambda handle: handle.write(data), follow_folder)


def write_text(path: os.PathLike[str] | str, text: str, *, errors: str = "strict") -> None:
    """Replace ``path`` with ``text`` (UTF-8; ``errors`` as ``str.encode`` takes it): never through a link."""
    write_bytes(path, text.encode("utf-8", errors))


def write_json(path: os.PathLike[str] | str, value: Any, **options: Any) -> None:
    """``write_text`` of ``json.dumps(value, indent=2, **options)`` and a newline."""
    write_text(path, json.dumps(value, indent=2, **options) + "\n")


def write_lines(path: os.PathLike[str] | str, lines: Iterable[str]) -> int:
    """Replace ``path`` with ``lines`` (each without its newline; UTF-8), streamed: never through a link; returns
    the number of lines."""
    count = [0]

    def fill(handle: IO[bytes]) -> None:
        for line in lines:
            handle.write(line.encode("utf-8") + b"\n")
            count[0] += 1

    _write_with(path, fill)
    return count[0]


def save_figure(figure: "Figure", path: os.PathLike[str] | str, **kwargs: Any) -> None:
    """``figure.savefig`` into ``path`` (format from its suffix unless given): never through a link."""
    kwargs.setdefault("format", Path(path).suffix.lstrip(".") or "png")
    _write_with(path, lambda handle: figure.savefig(handle, **kwargs))


def open_fresh(path: os.PathLike[str] | str, mode: str = "w", **options: Any) -> IO[Any]:
    """A new file at ``path`` for a stream written as it goes (a log, rewards as they come): whatever was at the
    name (a file, a link) is removed first, then the file is created with ``O_EXCL | O_NOFOLLOW``, so a link planted
    at the name is never followed. ``mode``: ``"w"`` (text, ``options`` as ``open``'s) or ``"wb"``."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        if stat.S_ISDIR(os.lstat(target).st_mode):
            raise IsADirectoryError(errno.EISDIR, "a directory is in the way", str(target))
        os.unlink(target)
    except FileNotFoundError:
        pass
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o666)
    return os.fdopen(fd, mode, **options)


# -- reading --------------------------------------------------------------------------------------------------


def _refused(path: Path, why: str) -> RunFileRefused:
    return RunFileRefused(f"{path} {why}; EnvSim does not read it")


def open_regular(path: os.PathLike[str] | str, root: os.PathLike[str] | str | None = None) -> int:
    """A read-only descriptor of the regular file ``path``, no link followed below ``root`` (default: the file's
    own directory); ``FileNotFoundError`` when it is missing, ``RunFileRefused`` for a link, a FIFO, a device or a
    socket. ``root`` must hold ``path``."""
    target = Path(path)
    base = Path(root) if root is not None else target.parent
    try:
        parts = target.relative_to(base).parts
    except ValueError:
        raise _refused(target, f"is not inside {base}") from None
    if not parts or ".." in parts:
        raise _refused(target, f"is not a file inside {base}")
    dir_fd = os.open(base, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    try:
        for part in parts[:-1]:
            try:
                inner = os.open(part, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=dir_fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise _refused(target, f"lies under {part!r}, which is a symbolic link or not a directory") \
                        from None
                raise
            os.close(dir_fd)
            dir_fd = inner
        try:
            fd = os.open(parts[-1], os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _NOCTTY | _CLOEXEC, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise _refused(target, "is a symbolic link") from None
            raise
    finally:
        os.close(dir_fd)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise _refused(target, "is not a regular file (a FIFO, a device or a socket)")
    os.set_blocking(fd, True)
    return fd


def read_bytes(path: os.PathLike[str] | str, limit: int, root: os.PathLike[str] | str | None = None) -> bytes:
    """The bytes of the regular file ``path`` (``open_regular``), at most ``limit``: a larger file is refused."""
    with os.fdopen(open_regular(path, root), "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise _refused(Path(path), f"is larger than {limit:,} bytes")
    return data


def read_text(path: os.PathLike[str] | str, limit: int = MAX_JSON_BYTES,
              root: os.PathLike[str] | str | None = None) -> str:
    """``read_bytes`` decoded as UTF-8 (undecodable bytes replaced)."""
    return read_bytes(path, limit, root).decode("utf-8", "replace")


def read_json(path: os.PathLike[str] | str, limit: int = MAX_JSON_BYTES,
              root: os.PathLike[str] | str | None = None) -> Any:
    """The JSON value of ``path`` read with ``read_text``; ``ValueError`` when it is not JSON (or nests past what
    the decoder handles)."""
    text = read_text(path, limit, root)
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError(f"{path} nests too deeply") from None


def iter_lines(path: os.PathLike[str] | str, root: os.PathLike[str] | str | None = None, *,
               max_line: int = MAX_LINE_BYTES, max_bytes: int = MAX_JSONL_BYTES) -> Iterator[str]:
    """The complete lines of the regular file ``path`` (``open_regular``), decoded as UTF-8 (undecodable bytes
    replaced), without their newline; a line longer than ``max_line`` bytes is skipped without being held, and a
    last line without a newline is yielded as it is. A missing file yields nothing; a file over ``max_bytes`` is
    refused before anything is read."""
    try:
        fd = open_regular(path, root)
    except FileNotFoundError:
        return
    with os.fdopen(fd, "rb") as handle:
        if os.fstat(handle.fileno()).st_size > max_bytes:
            raise _refused(Path(path), f"is larger than {max_bytes:,} bytes")
        while True:
            line = handle.readline(max_line + 1)
            if not line:
                return
            if len(line) > max_line and not line.endswith(b"\n"):  # too long: skip to the next newline
                while line and not line.endswith(b"\n"):
                    line = handle.readline(1 << 20)
                continue
            yield line.rstrip(b"\n").decode("utf-8", "replace")
