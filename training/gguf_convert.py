"""A GGUF file for llama.cpp from a local model: a ``.gguf`` file is used as it is; a transformers checkpoint
directory (``config.json`` + safetensors, e.g. ``envsim train fetch-model`` output or an SFT checkpoint) is
converted offline with llama.cpp's own ``convert_hf_to_gguf.py`` and cached.

The converter is not in the llama-cpp-python wheel: it comes from the sdist of the installed version
(``pip download`` from the package index, or ``$ENVSIM_LLAMA_CPP_SDIST``), of which only the converter files
are extracted. It runs with this Python (it needs torch, transformers, sentencepiece: the ``[cpu-serve]``
extra) through ``gguf_driver``, which also names the pre-tokenizer of tokenizers the converter's hash list
does not know (a locally trained one). Types beyond the converter's (``f16``, ``bf16``, ``q8_0``) are made
from the f16 file with ``llama_model_quantize``.

Cache: ``$ENVSIM_CACHE/llama-cpp/<version>/`` (default ``~/.cache/envsim``); a converted file is keyed by a
hash of every file the converter may read (``gguf_snapshot``: configs, tokenizer files, templates, weights and
the shards an index names), the type and the converter version. The checkpoint is checked (no links out of it,
no special files, no code of its own to run, shard names inside it) and copied into a private folder; the
converter runs on that copy, within a time and a memory bound, and the entry is keyed by the copy's hash. Every
entry is written to a temporary name (``.NAME.<pid>.<random>.part``) and renamed, so an interrupted conversion
never leaves a broken entry; the temporary files and copies of conversions whose process is gone are pruned."""

from __future__ import annotations

import fcntl
import os
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from envsim.process_guard import pid_alive
from envsim.training.gguf_snapshot import CheckpointRefused, checkpoint_key, snapshot

#: Output types: made by the converter itself (``--outtype``) ...
CONVERTER_TYPES = ("f32", "f16", "bf16", "q8_0")
#: ... or quantised from its f16 output with ``llama_model_quantize`` (values: ``LLAMA_FTYPE_MOSTLY_*`` names).
QUANTIZED_TYPES = {"q4_0": "Q4_0", "q4_1": "Q4_1", "q5_0": "Q5_0", "q5_1": "Q5_1", "q4_k_m": "Q4_K_M",
                   "q5_k_m": "Q5_K_M", "q6_k": "Q6_K"}
QUANTIZE_CHOICES = (*CONVERTER_TYPES, *QUANTIZED_TYPES)
#: The install line errors name when llama-cpp-python or the converter's imports are missing.
INSTALL_LINE = 'pip install -e ".[cpu-serve]"'
#: What the extracted converter consists of (relative to the sdist's ``vendor/llama.cpp``).
CONVERTER_PARTS = ("convert_hf_to_gguf.py", "conversion/", "gguf-py/gguf/")
#: Bumped when ``gguf_driver`` changes what a conversion writes (part of the cache key).
RECIPE = "3"
#: Converted files kept at most (GiB; ``$ENVSIM_GGUF_CACHE_GB``): the least recently used go first. A GRPO run
#: that re-serves its policy every few steps writes a new file each time.
DEFAULT_CACHE_GB = 10.0
#: A converted file used (or written) less than this many seconds ago is never pruned: the process that asked for
#: it may not have opened it yet.
RECENTLY_USED_S = 3600.0
#: A ``.part`` file or private copy whose process still runs is pruned only after this many seconds (its pid may
#: have been reused).
STALE_AFTER_S = 24 * 3600.0
#: Bounds of one conversion: seconds (``$ENVSIM_GGUF_CONVERT_TIMEOUT``, default this plus ``TIMEOUT_PER_GIB`` per
#: GiB of the checkpoint) and data memory (``$ENVSIM_GGUF_CONVERT_MEMORY_GB``, default ``MEMORY_BASE_GB`` plus three
#: times the checkpoint's size, at least 8 GiB).
TIMEOUT_BASE_S = 900.0
TIMEOUT_PER_GIB = 120.0
MEMORY_BASE_GB = 4.0

Progress = Callable[[str], None]


class GgufUnavailable(RuntimeError):
    """No GGUF file could be made: llama-cpp-python or a converter dependency is missing, the converter's
    sources cannot be had, or the conversion or quantisation failed (the message says which, and how to fix)."""


def llama_cpp_version() -> str:
    """The installed llama-cpp-python version; ``GgufUnavailable`` naming the extra when it is not installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("llama-cpp-python")
    except PackageNotFoundError:
        raise GgufUnavailable(f"llama.cpp serving needs llama-cpp-python: {INSTALL_LINE}") from None


def cache_root() -> Path:
    """``$ENVSIM_CACHE/llama-cpp`` (default ``~/.cache/envsim/llama-cpp``)."""
    base = os.environ.get("ENVSIM_CACHE") or Path.home() / ".cache" / "envsim"
    return Path(base) / "llama-cpp"


def key_header(quantize: str, converter_version: str) -> str:
    """What a cache key covers besides the checkpoint's files: the recipe, the output type, the converter."""
    return f"recipe={RECIPE}\nquantize={quantize}\nconverter={converter_version}\n"


def cache_key(model_dir: Path, quantize: str, converter_version: str) -> str:
    """Hex SHA-256 over the names and bytes of every file the converter may read (``gguf_snapshot``), the output
    type and the converter version; ``CheckpointRefused`` for a checkpoint that cannot be converted safely."""
    return checkpoint_key(model_dir, key_header(quantize, converter_version))


def is_checkpoint(path: Path) -> bool:
    """Whether ``path`` is a transformers checkpoint directory the converter can read."""
    return path.is_dir() and (path / "config.json").is_file() and any(path.glob("*.safetensors"))


def gguf_for(model: str | Path, quantize: str = "f16", *, progress: Progress | None = None) -> Path:
    """A GGUF file for ``model``: a ``.gguf`` file as it is (``quantize`` does not apply), a checkpoint directory
    converted to ``quantize`` (one of ``QUANTIZE_CHOICES``) once and then taken from the cache.

    ``progress`` receives one line per step ("converting ... to GGUF (f16)", "cached: ..."). Raises
    ``GgufUnavailable`` with what to do when no file can be made (a checkpoint refused by ``gguf_snapshot`` too)."""
    say = progress or (lambda _line: None)
    path = Path(model).expanduser()
    if path.is_file() and path.suffix == ".gguf":
        return path
    if quantize not in QUANTIZE_CHOICES:
        raise GgufUnavailable(f"unknown GGUF type {quantize!r}; choose one of {', '.join(QUANTIZE_CHOICES)}")
    if not is_checkpoint(path):
        raise GgufUnavailable(f"{model}: neither a .gguf file nor a checkpoint directory (config.json + safetensors)")
    version = llama_cpp_version()
    folder = cache_root() / version / "gguf"
    base_type = quantize if quantize in CONVERTER_TYPES else "f16"
    try:
        key = cache_key(path, base_type, version)
    except CheckpointRefused as exc:
        raise GgufUnavailable(str(exc)) from None
    target = folder / f"{key[:32]}-{quantize}.gguf"
    if _use_cached(target):
        say(f"cached: {target}")
        return target
    folder.mkdir(parents=True, exist_ok=True)
    if quantize in CONVERTER_TYPES:
        say(f"converting {path} to GGUF ({quantize}) ...")
        target = _convert_copy(path, folder, quantize, version, say)
    else:
        base = gguf_for(path, "f16", progress=say)
        target = base.with_name(base.name[:-len("-f16.gguf")] + f"-{quantize}.gguf")  # keyed as its source
        if not _use_cached(target):
            say(f"quantizing {base.name} to {quantize} ...")
            _atomic(target, lambda tmp: quantize_gguf(base, tmp, quantize))
    say(f"cached: {target}")
    prune_cache(folder, keep=target)
    return target


def _convert_copy(path: Path, folder: Path, quantize: str, version: str, say: Progress) -> Path:
    """Copy the checkpoint into a private folder, convert that copy, cache the result under the copy's key."""
    with private_folder(cache_root() / version / "work") as work:
        copy = work / "checkpoint"
        copy.mkdir()
        try:
            key = snapshot(path, copy, key_header(quantize, version))
        except CheckpointRefused as exc:
            raise GgufUnavailable(str(exc)) from None
        target = folder / f"{key[:32]}-{quantize}.gguf"
        if not _use_cached(target):  # the checkpoint changed since it was hashed: what was copied is converted
            converter = converter_dir(version, say)
            _atomic(target, lambda tmp: run_converter(converter, copy, tmp, quantize))
        return target


@contextmanager
def _cache_lock(folder: Path, exclusive: bool) -> Iterator[None]:
    """The cache folder's lock (``<folder>.lock`` beside it): pruning holds it alone, a lookup or a new entry
    shares it."""
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder.parent / f"{folder.name}.lock", os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)


def _use_cached(target: Path) -> bool:
    """Whether ``target`` is a cached regular file (never a link); marks it used now, under the cache lock, so a
    concurrent prune either ran before (and it is gone) or keeps it."""
    if not target.parent.is_dir():
        return False
    with _cache_lock(target.parent, exclusive=False):
        try:
            if not stat.S_ISREG(os.lstat(target).st_mode):
                return False
        except FileNotFoundError:
            return False
        os.utime(target, follow_symlinks=False)
        return True


def _stale(name: str, mtime: float, now: float) -> bool:
    """Whether a ``.part`` file or private copy named with its process id (``.X.<pid>.<r>.part``, ``<pid>-<r>``)
    belongs to a process that is gone, or is older than ``STALE_AFTER_S`` (a name without a process id: only then)."""
    field = name.rsplit(".", 3)[-3] if name.endswith(".part") and name.count(".") >= 3 else name.split("-", 1)[0]
    if not field.isdigit():  # a name without a process id (written before they had one): by age alone
        return now - mtime > STALE_AFTER_S
    return now - mtime > STALE_AFTER_S or (int(field) != os.getpid() and not pid_alive(int(field)))


def prune_cache(folder: Path, keep: Path, limit_gb: float | None = None) -> list[Path]:
    """Delete the least recently used ``.gguf`` files of ``folder`` until the rest fit ``limit_gb``
    (``$ENVSIM_GGUF_CACHE_GB``, default ``DEFAULT_CACHE_GB``), and the ``.part`` files of conversions whose process
    is gone; ``keep`` and files used within ``RECENTLY_USED_S`` stay; links and anything but regular files are
    never followed or deleted. Returns the deleted files."""
    limit = limit_gb if limit_gb is not None else float(os.environ.get("ENVSIM_GGUF_CACHE_GB") or DEFAULT_CACHE_GB)
    deleted: list[Path] = []
    now = time.time()
    with _cache_lock(folder, exclusive=True):
        entries = []
        with os.scandir(folder) as listing:
            for entry in listing:
                try:
                    info = entry.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue
                if not stat.S_ISREG(info.st_mode):
                    continue
                path = Path(entry.path)
                if entry.name.endswith(".part") and _stale(entry.name, info.st_mtime, now):
                    path.unlink(missing_ok=True)
                    deleted.append(path)
                elif entry.name.endswith(".gguf") and path != keep:
                    entries.append((info.st_mtime, info.st_size, path))
        try:
            total = os.lstat(keep).st_size
        except FileNotFoundError:
            total = 0
        for mtime, size, path in sorted(entries, reverse=True):
            total += size
            if total > limit * 2**30 and now - mtime > RECENTLY_USED_S:
                path.unlink(missing_ok=True)
                deleted.append(path)
    deleted += prune_work(folder.parent / "work", now)
    return deleted


def prune_work(folder: Path, now: float | None = None) -> list[Path]:
    """Remove the private checkpoint copies (``<pid>-<random>`` folders) of conversions whose process is gone."""
    now = time.time() if now is None else now
    deleted = []
    try:
        listing = list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return []
    for entry in listing:
        try:
            info = entry.stat(follow_symlinks=False)
        except FileNotFoundError:
            continue
        if stat.S_ISDIR(info.st_mode) and _stale(entry.name, info.st_mtime, now):
            shutil.rmtree(entry.path, ignore_errors=True)
            deleted.append(Path(entry.path))
    return deleted


@contextmanager
def private_folder(parent: Path) -> Iterator[Path]:
    """A new folder only this user can read, named ``<pid>-<random>`` under ``parent``; removed afterwards (or by
    ``prune_work`` once this process is gone, when it was killed)."""
    parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=parent))
    try:
        yield work
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _atomic(target: Path, write: Callable[[Path], None]) -> None:
    """``write`` a temporary file next to ``target`` (named with this process's id, so a prune knows whose it is)
    and rename it into place under the cache lock (removed when ``write`` fails)."""
    handle, name = tempfile.mkstemp(prefix=f".{target.name}.{os.getpid()}.", suffix=".part", dir=target.parent)
    os.close(handle)
    tmp = Path(name)
    try:
        write(tmp)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # as a plain open() would have made it (mkstemp makes it private)
        with _cache_lock(target.parent, exclusive=False):
            os.replace(tmp, target)
            os.utime(target)
    finally:
        tmp.unlink(missing_ok=True)


def converter_dir(version: str, progress: Progress | None = None) -> Path:
    """The extracted converter of llama-cpp-python ``version`` (cached; downloaded and extracted on first use)."""
    root = cache_root() / version
    target = root / "converter"
    if (target / "convert_hf_to_gguf.py").is_file():
        return target
    root.mkdir(parents=True, exist_ok=True)
    sdist = sdist_path(version, root / "sdist", progress)
    (progress or (lambda _line: None))(f"extracting the GGUF converter from {sdist.name}")
    work = Path(tempfile.mkdtemp(prefix=".converter.", dir=root))
    try:
        extract_converter(sdist, work)
        work.chmod(0o755)  # mkdtemp makes it private
        try:
            work.rename(target)
        except OSError:  # another process got there first: its copy is as good
            if not (target / "convert_hf_to_gguf.py").is_file():
                raise
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)
    shutil.rmtree(root / "sdist", ignore_errors=True)  # a downloaded sdist (76 MB) is not needed any more
    return target


def sdist_path(version: str, dest: Path, progress: Progress | None = None) -> Path:
    """llama-cpp-python's sdist for ``version``: ``$ENVSIM_LLAMA_CPP_SDIST`` when set, one already in ``dest``,
    else ``pip download --no-binary`` from the configured package index into ``dest``."""
    name = f"llama_cpp_python-{version}.tar.gz"
    given = os.environ.get("ENVSIM_LLAMA_CPP_SDIST")
    if given:
        if not Path(given).name.startswith(f"llama_cpp_python-{version}."):
            raise GgufUnavailable(f"$ENVSIM_LLAMA_CPP_SDIST={given} is not the sdist of the installed {version}")
        return Path(given)
    if (dest / name).is_file():
        return dest / name
    (progress or (lambda _line: None))(f"downloading the llama-cpp-python {version} sdist (its GGUF converter)")
    dest.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
               f"llama-cpp-python=={version}", "-d", str(dest)]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0 or not (dest / name).is_file():
        raise GgufUnavailable(f"pip download llama-cpp-python=={version} (sdist) failed (exit {result.returncode}); "
                              f"set ENVSIM_LLAMA_CPP_SDIST to a downloaded {name}:\n"
                              f"{(result.stderr or result.stdout)[-2000:]}")
    return dest / name


def extract_converter(sdist: Path, dest: Path) -> None:
    """Extract only ``CONVERTER_PARTS`` of the sdist's ``vendor/llama.cpp`` into ``dest`` (no other files)."""
    with tarfile.open(sdist) as archive:
        members = []
        for member in archive.getmembers():
            parts = member.name.split("/", 1)
            inner = parts[1] if len(parts) == 2 else ""
            if not inner.startswith("vendor/llama.cpp/") or not (member.isfile() or member.isdir()):
                continue
            relative = inner[len("vendor/llama.cpp/"):]
            if any(relative == part or (part.endswith("/") and relative.startswith(part)) for part in CONVERTER_PARTS):
                if ".." in Path(relative).parts:
                    continue
                member.name = relative
                members.append(member)
        if not any(m.name == "convert_hf_to_gguf.py" for m in members):
            raise GgufUnavailable(f"{sdist.name} holds no vendor/llama.cpp/convert_hf_to_gguf.py")
        if hasattr(tarfile, "data_filter"):  # Python >= 3.11.4 (and the 3.10/3.9 security releases)
            archive.extractall(dest, members=members, filter="data")
        else:
            archive.extractall(dest, members=members)


def converter_command(converter: Path, model_dir: Path, outfile: Path, outtype: str) -> list[str]:
    """The command that converts ``model_dir`` to ``outfile``: this Python running ``gguf_driver convert``."""
    return [sys.executable, "-m", "envsim.training.gguf_driver", "convert", str(converter), str(model_dir),
            "--outfile", str(outfile), "--outtype", outtype]


def converter_env(converter: Path) -> dict[str, str]:
    """This environment with the sdist's ``gguf-py`` (and the converter's folder) first on PYTHONPATH, and the
    Hugging Face libraries offline (a conversion never downloads anything)."""
    paths = [str(converter / "gguf-py"), str(converter)]
    if os.environ.get("PYTHONPATH"):
        paths.append(os.environ["PYTHONPATH"])
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "NO_LOCAL_GGUF": "1", "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1"}


def checkpoint_bytes(model_dir: Path) -> int:
    """Bytes of the regular files directly in ``model_dir`` (links not followed)."""
    total = 0
    with os.scandir(model_dir) as listing:
        for entry in listing:
            try:
                info = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            total += info.st_size if stat.S_ISREG(info.st_mode) else 0
    return total


def conversion_bounds(model_dir: Path) -> tuple[float, int]:
    """Seconds and bytes of data memory one conversion of ``model_dir`` may use (see ``TIMEOUT_BASE_S``)."""
    gib = checkpoint_bytes(model_dir) / 2**30
    timeout = float(os.environ.get("ENVSIM_GGUF_CONVERT_TIMEOUT") or TIMEOUT_BASE_S + TIMEOUT_PER_GIB * gib)
    memory_gb = float(os.environ.get("ENVSIM_GGUF_CONVERT_MEMORY_GB") or max(8.0, MEMORY_BASE_GB + 3 * gib))
    return timeout, int(memory_gb * 2**30)


def run_converter(converter: Path, model_dir: Path, outfile: Path, outtype: str) -> None:
    """Convert ``model_dir`` to ``outfile`` within ``conversion_bounds`` (the converter dies with this process);
    ``GgufUnavailable`` with the converter's output tail on failure."""
    from envsim.process_guard import child_setup

    timeout, memory = conversion_bounds(model_dir)
    try:
        result = subprocess.run(converter_command(converter, model_dir, outfile, outtype), capture_output=True,
                                text=True, env=converter_env(converter), check=False, timeout=timeout,
                                stdin=subprocess.DEVNULL, preexec_fn=child_setup(data_limit=memory))
    except subprocess.TimeoutExpired:
        raise GgufUnavailable(f"converting {model_dir} to GGUF took longer than {timeout:.0f} s and was stopped "
                              "(set ENVSIM_GGUF_CONVERT_TIMEOUT to allow more)") from None
    if result.returncode != 0 or not outfile.is_file() or outfile.stat().st_size == 0:
        output = (result.stderr or "") + (result.stdout or "")
        hint = f" (install the [cpu-serve] extra: {INSTALL_LINE})" if "ModuleNotFoundError" in output else ""
        if "MemoryError" in output:
            hint = (f" (it needed more than the {memory / 2**30:.1f} GiB of memory a conversion may use: set "
                    "ENVSIM_GGUF_CONVERT_MEMORY_GB to allow more)")
        raise GgufUnavailable(f"converting {model_dir} to GGUF failed (exit {result.returncode}){hint}:\n"
                              f"{output[-3000:]}")


def quantize_gguf(source: Path, outfile: Path, quantize: str) -> None:
    """Quantise ``source`` (an f16 GGUF) to ``quantize`` with ``llama_model_quantize``, in a child process (a
    failed assertion in the library must not end this one)."""
    command = [sys.executable, "-m", "envsim.training.gguf_driver", "quantize", str(source), str(outfile),
               QUANTIZED_TYPES[quantize]]
    from envsim.process_guard import child_setup

    result = subprocess.run(command, capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL,
                            preexec_fn=child_setup())
    if result.returncode != 0 or not outfile.is_file() or outfile.stat().st_size == 0:
        raise GgufUnavailable(f"quantizing {source.name} to {quantize} failed (exit {result.returncode}):\n"
                              f"{(result.stderr + result.stdout)[-3000:]}")
