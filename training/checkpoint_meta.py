"""``envsim_training.json``: what a checkpoint must be prompted with, written beside its weights by every trainer
(CPU SFT, LLaMA-Factory SFT, CPU GRPO, TRL GRPO) and read by ``envsim serve`` for the commands it prints
(``envsim.cli.serve_commands``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from envsim.safe_files import write_json

TRAINING_FILE = "envsim_training.json"
PROMPT_KEYS = ("prompt_mode", "prompt_version", "response_format")


def data_prompt_settings(data_dir: Path) -> dict[str, Any]:
    """The prompt mode and version of ``envsim train data`` output (its ``stats.json``), and the response format
    ``json-schema-path-first`` for data whose targets write path before op (``patch_key_order``: a model trained
    on them must not be decoded under the op-first schema); empty when unreadable."""
    try:
        stats = json.loads((Path(data_dir) / "stats.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return {}
    if not isinstance(stats, dict):
        return {}
    settings = {k: stats[k] for k in PROMPT_KEYS if k in stats}
    if stats.get("patch_key_order") == "path-first":
        settings.setdefault("response_format", "json-schema-path-first")
    return settings


def write_training_file(checkpoint: Path, settings: dict[str, Any], **extra: Any) -> Path:
    """Write ``envsim_training.json`` into ``checkpoint``: ``settings`` (prompt keys) and ``extra`` (trainer, ...)."""
    path = Path(checkpoint) / TRAINING_FILE
    write_json(path, {**settings, **extra})
    return path


def mark_checkpoints(output_dir: Path, settings: dict[str, Any], **extra: Any) -> list[Path]:
    """Write the file into ``output_dir`` and every ``checkpoint-*`` folder in it that holds weights (a trainer's
    intermediate saves, e.g. LLaMA-Factory's ``save_steps``); returns the files written."""
    output_dir = Path(output_dir)
    folders = [output_dir] + sorted(p for p in output_dir.glob("checkpoint-*") if p.is_dir() and not p.is_symlink())
    return [write_training_file(folder, settings, **extra) for folder in folders
            if (folder / "config.json").is_file()]
