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
hash of the checkpoint's config, weight and tokenizer files, the type and the converter version. Every entry is
written to a temporary name and renamed, so an interrupted conversion never leaves a broken entry."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path

#: Output types: made by the converter itself (``--outtype``) ...
CONVERTER_TYPES = ("f32", "f16", "bf16", "q8_0")
#: ... or quantised from its f16 output with ``llama_model_quantize`` (values: ``LLAMA_FTYPE_MOSTLY_*`` names).
QUANTIZED_TYPES = {"q4_0": "Q4_0", "q4_1": "Q4_1", "q5_0": "Q5_0", "q5_1": "Q5_1", "q4_k_m": "Q4_K_M",
                   "q5_k_m": "Q5_K_M", "q6_k": "Q6_K"}
QUANTIZE_CHOICES = (*CONVERTER_TYPES, *QUANTIZED_TYPES)
#: The install line errors name when llama-cpp-python or the converter's imports are missing.
INSTALL_LINE = 'pip install -e ".[cpu-serve]"'
#: Files of a checkpoint that change the converted model (weights by suffix, the rest by name).
KEY_FILES = ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json", "tokenizer.model",
             "special_tokens_map.json", "added_tokens.json", "vocab.json", "merges.txt", "chat_template.jinja",
             "chat_template.json", "model.safetensors.index.json")
#: What the extracted converter consists of (relative to the sdist's ``vendor/llama.cpp``).
CONVERTER_PARTS = ("convert_hf_to_gguf.py", "conversion/", "gguf-py/gguf/")
#: Bumped when ``gguf_driver`` changes what a conversion writes (part of the cache key).
RECIPE = "2"
#: Converted files kept at most (GiB; ``$ENVSIM_GGUF_CACHE_GB``): the least recently used go first. A GRPO run
#: that re-serves its policy every few steps writes a new file each time.
DEFAULT_CACHE_GB = 10.0

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


def checkpoint_files(model_dir: Path) -> list[Path]:
    """The files of ``model_dir`` that the converted model depends on, sorted: config, weights, tokenizer."""
    files = [p for p in model_dir.iterdir() if p.is_file() and (p.name in KEY_FILES or p.suffix == ".safetensors")]
    return sorted(files, key=lambda p: p.name)


def cache_key(model_dir: Path, quantize: str, converter_version: str) -> str:
    """Hex SHA-256 over the names and bytes of ``checkpoint_files``, the output type and the converter version."""
    digest = hashlib.sha256(f"recipe={RECIPE}\nquantize={quantize}\nconverter={converter_version}\n".encode())
    for path in checkpoint_files(model_dir):
        digest.update(f"{path.name}\0{path.stat().st_size}\0".encode())
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def is_checkpoint(path: Path) -> bool:
    """Whether ``path`` is a transformers checkpoint directory the converter can read."""
    return path.is_dir() and (path / "config.json").is_file() and any(path.glob("*.safetensors"))


def gguf_for(model: str | Path, quantize: str = "f16", *, progress: Progress | None = None) -> Path:
    """A GGUF file for ``model``: a ``.gguf`` file as it is (``quantize`` does not apply), a checkpoint directory
    converted to ``quantize`` (one of ``QUANTIZE_CHOICES``) once and then taken from the cache.

    ``progress`` receives one line per step ("converting ... to GGUF (f16)", "cached: ..."). Raises
    ``GgufUnavailable`` with what to do when no file can be made."""
    say = progress or (lambda _line: None)
    path = Path(model).expanduser()
    if path.is_file() and path.suffix == ".gguf":
        return path
    if quantize not in QUANTIZE_CHOICES:
        raise GgufUnavailable(f"unknown GGUF type {quantize!r}; choose one of {', '.join(QUANTIZE_CHOICES)}")
    if not is_checkpoint(path):
        raise GgufUnavailable(f"{model}: neither a .gguf file nor a checkpoint directory (config.json + safetensors)")
    version = llama_cpp_version()
    target = cache_root() / version / "gguf" / f"{cache_key(path, quantize, version)[:32]}-{quantize}.gguf"
    if target.is_file():
        os.utime(target)  # most recently used: pruned last
        say(f"cached: {target}")
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    if quantize in CONVERTER_TYPES:
        say(f"converting {path} to GGUF ({quantize}) ...")
        _atomic(target, lambda tmp: run_converter(converter_dir(version, say), path, tmp, quantize))
    else:
        base = gguf_for(path, "f16", progress=say)
        say(f"quantizing {base.name} to {quantize} ...")
        _atomic(target, lambda tmp: quantize_gguf(base, tmp, quantize))
    say(f"cached: {target}")
    prune_cache(target.parent, keep=target)
    return target


def prune_cache(folder: Path, keep: Path, limit_gb: float | None = None) -> list[Path]:
    """Delete the least recently used ``.gguf`` files of ``folder`` until the rest fit ``limit_gb``
    (``$ENVSIM_GGUF_CACHE_GB``, default ``DEFAULT_CACHE_GB``); ``keep`` stays. Returns the deleted files."""
    limit = limit_gb if limit_gb is not None else float(os.environ.get("ENVSIM_GGUF_CACHE_GB") or DEFAULT_CACHE_GB)
    entries = sorted((p for p in folder.glob("*.gguf") if p != keep), key=lambda p: p.stat().st_mtime, reverse=True)
    total, deleted = keep.stat().st_size, []
    for path in entries:
        total += path.stat().st_size
        if total > limit * 2**30:
            path.unlink(missing_ok=True)
            deleted.append(path)
    return deleted


def _atomic(target: Path, write: Callable[[Path], None]) -> None:
    """``write`` a temporary file next to ``target`` and rename it into place (removed when ``write`` fails)."""
    handle, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    os.close(handle)
    tmp = Path(name)
    try:
        write(tmp)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # as a plain open() would have made it (mkstemp makes it private)
        os.replace(tmp, target)
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
    """This environment with the sdist's ``gguf-py`` (and the converter's folder) first on PYTHONPATH."""
    paths = [str(converter / "gguf-py"), str(converter)]
    if os.environ.get("PYTHONPATH"):
        paths.append(os.environ["PYTHONPATH"])
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "NO_LOCAL_GGUF": "1"}


def run_converter(converter: Path, model_dir: Path, outfile: Path, outtype: str) -> None:
    """Convert ``model_dir`` to ``outfile``; ``GgufUnavailable`` with the converter's output tail on failure."""
    result = subprocess.run(converter_command(converter, model_dir, outfile, outtype), capture_output=True,
                            text=True, env=converter_env(converter), check=False)
    if result.returncode != 0 or not outfile.is_file() or outfile.stat().st_size == 0:
        output = (result.stderr or "") + (result.stdout or "")
        hint = f" (install the [cpu-serve] extra: {INSTALL_LINE})" if "ModuleNotFoundError" in output else ""
        raise GgufUnavailable(f"converting {model_dir} to GGUF failed (exit {result.returncode}){hint}:\n"
                              f"{output[-3000:]}")


def quantize_gguf(source: Path, outfile: Path, quantize: str) -> None:
    """Quantise ``source`` (an f16 GGUF) to ``quantize`` with ``llama_model_quantize``, in a child process (a
    failed assertion in the library must not end this one)."""
    command = [sys.executable, "-m", "envsim.training.gguf_driver", "quantize", str(source), str(outfile),
               QUANTIZED_TYPES[quantize]]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0 or not outfile.is_file() or outfile.stat().st_size == 0:
        raise GgufUnavailable(f"quantizing {source.name} to {quantize} failed (exit {result.returncode}):\n"
                              f"{(result.stderr + result.stdout)[-3000:]}")
