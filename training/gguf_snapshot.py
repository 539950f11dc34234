"""What of a checkpoint directory llama.cpp's converter may read, hashed and copied so that it reads nothing else.

A checkpoint is input from outside (a download, a shared folder): it may hold links out of itself (a chat template
-> ``/etc/passwd``, a tokenizer -> ``/dev/zero``), FIFOs, an index naming shards by ``../`` paths, code it asks to
be run (``auto_map``), or change while it is converted. So:

* **What is taken**: the top-level files the converter reads, by name (``TAKEN_SUFFIXES``: configs, tokenizers,
  templates, safetensors weights), less training artefacts (``SKIPPED_NAMES``); Python files and pickles
  (``.py``, ``.bin``, ``.pt``...) never. Each is opened with ``envsim.safe_files.open_regular``: a symbolic link
  (even to a file in the folder), a FIFO, a device or a socket is refused, naming it; nothing blocks. Files other
  than weights are bounded (``MAX_SIDE_FILE_BYTES``).
* **Sharded weights**: ``model.safetensors.index.json`` must name plain file names of the folder (no ``/``, no
  ``..``), each present and taken.
* **Code**: a checkpoint whose configs declare ``auto_map`` (its own classes, i.e. Python files to import) is
  refused, naming the architecture; the converter's process also never imports such code (``gguf_driver``).
* **Key and copy**: ``checkpoint_key`` hashes the names, sizes and bytes of what is taken (the cache lookup);
  ``snapshot`` copies the same files into a private folder and hashes the bytes it copied, so the converter runs
  on that copy and the cache entry is keyed by what was converted, whatever happens to the original meanwhile.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Callable

#: Suffixes of the files the converter reads (configs and tokenizer files, templates, text vocabularies, weights).
TAKEN_SUFFIXES = (".json", ".safetensors", ".jinja", ".txt", ".model", ".tiktoken")
#: Files with those suffixes that do not change the converted model (training artefacts, EnvSim's own notes).
SKIPPED_NAMES = ("trainer_state.json", "training_args.json", "envsim_training.json", "all_results.json",
                 "train_results.json", "eval_results.json", "README.txt", "requirements.txt")
#: Configs that may declare code of the checkpoint's own (``auto_map``).
CODE_DECLARING = ("config.json", "tokenizer_config.json", "processor_config.json", "preprocessor_config.json",
                  "generation_config.json")
INDEX_FILE = "model.safetensors.index.json"
#: The one subfolder the converter reads: more chat templates, embedded by name.
TEMPLATE_DIR = "additional_chat_templates"
#: A file other than weights larger than this is refused (the largest tokenizer.json files are tens of MB).
MAX_SIDE_FILE_BYTES = 256 << 20
#: A vocabulary larger than this is refused before conversion (real ones reach about 262,000 tokens; the
#: converter builds Python lists of the vocabulary's size, so 10^9 would exhaust memory).
MAX_VOCAB = 1 << 22
#: Shard names an index may hold: a plain file name of the folder.
_SHARD_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*\.safetensors$")
BLOCK = 1 << 20


class CheckpointRefused(ValueError):
    """The checkpoint cannot be converted safely (a link, a special file, code to run, a bad index): the message
    names the file and what to do."""


def taken_names(model_dir: Path) -> list[str]:
    """The names (relative to ``model_dir``) of the files the converter may read, sorted: top-level files by
    suffix, and the ``.jinja`` files of ``additional_chat_templates/`` (which the converter embeds beside
    ``chat_template.jinja``). Nothing is opened yet: links and special files among them are refused when opened."""
    names = []
    with os.scandir(model_dir) as entries:
        for entry in entries:
            if entry.name.endswith(TAKEN_SUFFIXES) and entry.name not in SKIPPED_NAMES \
                    and not entry.is_dir(follow_symlinks=False):
                names.append(entry.name)
    templates = model_dir / TEMPLATE_DIR
    if templates.is_symlink():
        raise CheckpointRefused(f"{templates} is a symbolic link (to {os.readlink(templates)}): EnvSim never follows "
                                "links out of a checkpoint; copy the templates into the folder")
    if templates.is_dir():
        with os.scandir(templates) as entries:
            names += [f"{TEMPLATE_DIR}/{e.name}" for e in entries
                      if e.name.endswith(".jinja") and not e.is_dir(follow_symlinks=False)]
    return sorted(names)


def _open(model_dir: Path, name: str) -> int:
    """A descriptor of the regular file ``model_dir/name``; ``CheckpointRefused`` for a link or a special file."""
    from envsim.safe_files import RunFileRefused, open_regular

    try:
        return open_regular(model_dir / name, root=model_dir)
    except RunFileRefused as exc:
        target = ""
        if os.path.islink(model_dir / name):
            target = f" (a link to {os.readlink(model_dir / name)})"
        raise CheckpointRefused(f"{model_dir / name}{target}: {exc}. EnvSim never follows links out of a checkpoint "
                                "or reads special files: copy the real file into the folder") from None


def _read_json(model_dir: Path, name: str) -> Any:
    """The JSON value of a small file of the checkpoint (through ``_open``), or ``None`` when it is absent."""
    try:
        fd = _open(model_dir, name)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(MAX_SIDE_FILE_BYTES + 1)
    if len(data) > MAX_SIDE_FILE_BYTES:
        raise CheckpointRefused(f"{model_dir / name} is larger than {MAX_SIDE_FILE_BYTES >> 20} MiB")
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise CheckpointRefused(f"{model_dir / name} is not valid JSON ({exc})") from None


def architecture(model_dir: Path) -> str:
    """The architecture ``config.json`` names (``"?"`` when it names none)."""
    config = _read_json(model_dir, "config.json")
    names = config.get("architectures") if isinstance(config, dict) else None
    return ", ".join(str(n) for n in names) if isinstance(names, list) and names else "?"


def check_checkpoint(model_dir: Path, names: list[str]) -> None:
    """Refuse a checkpoint that declares code of its own, names shards outside itself, or has a vocabulary too
    large to convert (``CheckpointRefused`` naming the file)."""
    for name in CODE_DECLARING:
        value = _read_json(model_dir, name)
        if isinstance(value, dict) and value.get("auto_map"):
            modules = sorted({str(v).split(".")[0] for v in _strings(value["auto_map"])})
            raise CheckpointRefused(
                f"{model_dir / name} declares code of its own (auto_map -> {', '.join(modules)[:200]}) for "
                f"architecture {architecture(model_dir)}: llama.cpp's converter would import it. EnvSim never runs "
                "code shipped in a checkpoint; convert it yourself where you trust that code, then serve the .gguf")
    config = _read_json(model_dir, "config.json")
    for part in (config, (config or {}).get("text_config") if isinstance(config, dict) else None):
        vocab = part.get("vocab_size") if isinstance(part, dict) else None
        if isinstance(vocab, (int, float)) and not isinstance(vocab, bool) and vocab > MAX_VOCAB:
            raise CheckpointRefused(f"{model_dir / 'config.json'}: vocab_size {vocab:.0f} is larger than "
                                    f"{MAX_VOCAB:,} (no real model has one; converting it would exhaust memory)")
    if INDEX_FILE in names:
        index = _read_json(model_dir, INDEX_FILE)
        weight_map = index.get("weight_map") if isinstance(index, dict) else None
        if not isinstance(weight_map, dict):
            raise CheckpointRefused(f"{model_dir / INDEX_FILE} has no weight_map object")
        for shard in sorted({str(v) for v in weight_map.values()}):
            if not _SHARD_NAME.match(shard):
                raise CheckpointRefused(f"{model_dir / INDEX_FILE} names shard {shard[:120]!r}: only plain "
                                        ".safetensors file names of the checkpoint's own folder are read")
            if shard not in names:
                raise CheckpointRefused(f"{model_dir / INDEX_FILE} names shard {shard!r}, which is not in "
                                        f"{model_dir}")


def _strings(value: Any) -> Iterator[str]:
    """Every string inside ``value`` (an ``auto_map``: strings, lists of strings or nulls, objects of them)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _stream(model_dir: Path, names: list[str], sink: Callable[[str, bytes | None], None]) -> None:
    """Feed each taken file's blocks to ``sink(name, block)`` (``None`` after a file's last block), bounded."""
    for name in names:
        try:
            fd = _open(model_dir, name)
        except FileNotFoundError:
            raise CheckpointRefused(f"{model_dir / name} disappeared while the checkpoint was read") from None
        read = 0
        with os.fdopen(fd, "rb") as handle:
            while block := handle.read(BLOCK):
                read += len(block)
                if read > MAX_SIDE_FILE_BYTES and not name.endswith(".safetensors"):
                    raise CheckpointRefused(f"{model_dir / name} is larger than {MAX_SIDE_FILE_BYTES >> 20} MiB")
                sink(name, block)
        sink(name, None)


def _hasher(header: str) -> tuple[Any, Callable[[str, bytes | None], None]]:
    digest = hashlib.sha256(header.encode())
    started: set[str] = set()

    def feed(name: str, block: bytes | None) -> None:
        if name not in started:
            started.add(name)
            digest.update(f"{name}\0".encode())
        if block is None:
            digest.update(b"\0end\0")
        else:
            digest.update(block)

    return digest, feed


def checkpoint_key(model_dir: Path, header: str) -> str:
    """Hex SHA-256 of ``header`` and the names and bytes of the files taken from ``model_dir`` (checked first)."""
    names = taken_names(model_dir)
    check_checkpoint(model_dir, names)
    digest, feed = _hasher(header)
    _stream(model_dir, names, feed)
    return digest.hexdigest()


def snapshot(model_dir: Path, dest: Path, header: str) -> str:
    """Copy the files taken from ``model_dir`` into the empty private folder ``dest`` (checked first) and return
    the hex SHA-256 of ``header`` and what was copied: the key of what the converter will read."""
    names = taken_names(model_dir)
    check_checkpoint(model_dir, names)
    digest, feed = _hasher(header)
    handles: dict[str, Any] = {}

    def copy(name: str, block: bytes | None) -> None:
        feed(name, block)
        if name not in handles:
            if "/" in name:
                (dest / name).parent.mkdir(mode=0o700, exist_ok=True)
            fd = os.open(dest / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
            handles[name] = os.fdopen(fd, "wb")
        if block is None:
            handles.pop(name).close()
        else:
            handles[name].write(block)

    try:
        _stream(model_dir, names, copy)
    finally:
        for handle in handles.values():
            handle.close()
    return digest.hexdigest()
