"""Full-parameter SFT with LLaMA-Factory (+ DeepSpeed ZeRO-3 on several GPUs): config files and launch.

Defaults follow the published recipe: lr 2e-5, 3 epochs, cosine schedule, warmup 0.05, cutoff 8192,
bf16, gradient checkpointing (LLaMA-Factory's default), effective batch 32.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envsim.training.launch import NodeLayout, write_if_changed

ZERO3: dict[str, Any] = {
    "train_batch_size": "auto",
    "train_micro_batch_size_per_gpu": "auto",
    "gradient_accumulation_steps": "auto",
    "gradient_clipping": "auto",
    "zero_allow_untested_optimizer": True,
    "bf16": {"enabled": "auto"},
    "fp16": {"enabled": "auto", "loss_scale": 0, "loss_scale_window": 1000, "initial_scale_power": 16,
             "hysteresis": 2, "min_loss_scale": 1},
    "zero_optimization": {
        "stage": 3, "overlap_comm": False, "contiguous_gradients": True, "sub_group_size": 1e9,
        "reduce_bucket_size": "auto", "stage3_prefetch_bucket_size": "auto",
        "stage3_param_persistence_threshold": "auto", "stage3_max_live_parameters": 1e9,
        "stage3_max_reuse_distance": 1e9, "stage3_gather_16bit_weights_on_model_save": True,
    },
}


@dataclass
class SFTSettings:
    """What a user sets for one SFT run (everything else comes from the published recipe)."""

    model: str
    data_dir: Path
    dataset: str
    output_dir: Path
    gpus: int = 1               # per node
    nnodes: int = 1
    template: str = "qwen3_nothink"
    learning_rate: float = 2e-5
    epochs: float = 3.0
    cutoff_len: int = 8192
    effective_batch: int = 32
    per_device_batch: int = 1
    bf16: bool = True
    max_steps: int | None = None
    finetuning: str = "full"        # LLaMA-Factory finetuning_type: full, lora or freeze
    lora_rank: int = 16             # lora: adapter rank on every linear layer
    freeze_layers: int = 2          # freeze: how many of the last layers train (the rest stay fixed)
    gradient_checkpointing: bool = True
    logging_steps: int = 10         # 1 on CPU: a step there takes minutes, and progress is read from the log
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def gradient_accumulation(self) -> int:
        """Accumulation steps that reach the effective batch on ``gpus`` devices of each of ``nnodes`` nodes."""
        devices = max(self.gpus, 1) * max(self.nnodes, 1)
        return max(1, math.ceil(self.effective_batch / (self.per_device_batch * devices)))


def llamafactory_config(settings: SFTSettings, deepspeed_path: Path | None) -> dict[str, Any]:
    """The LLaMA-Factory training config (written as YAML)."""
    config: dict[str, Any] = {
        "model_name_or_path": settings.model,
        "trust_remote_code": True,
        "stage": "sft",
        "do_train": True,
        "finetuning_type": settings.finetuning,
        "dataset": settings.dataset,
        "dataset_dir": str(settings.data_dir),
        "template": settings.template,
        "cutoff_len": settings.cutoff_len,
        "overwrite_cache": True,
        "preprocessing_num_workers": 4,
        "output_dir": str(settings.output_dir),
        "logging_steps": settings.logging_steps,
        "save_strategy": "epoch",
        "plot_loss": True,
        "overwrite_output_dir": True,
        "report_to": "none",
        "per_device_train_batch_size": settings.per_device_batch,
        "gradient_accumulation_steps": settings.gradient_accumulation,
        "learning_rate": settings.learning_rate,
        "num_train_epochs": settings.epochs,
        "lr_scheduler_type": "cosine",
        "warmup_ratio": 0.05,
        "bf16": settings.bf16,
        "disable_gradient_checkpointing": not settings.gradient_checkpointing,
    }
    if settings.finetuning == "lora":
        config.update({"lora_rank": settings.lora_rank, "lora_target": "all"})
    elif settings.finetuning == "freeze":
        config["freeze_trainable_layers"] = settings.freeze_layers
    if deepspeed_path is not None:
        config["deepspeed"] = str(deepspeed_path)
    if settings.max_steps is not None:
        config["max_steps"] = settings.max_steps
    config.update(settings.extra)
    return config


def yaml_scalar(value: Any) -> str:
    """A scalar as YAML 1.1 (PyYAML) reads it back with the same type: floats always carry a dot
    (``2.0e-05``; PyYAML reads ``2e-05`` as a string)."""
    if isinstance(value, float):
        text = repr(value)
        if "e" in text and "." not in text.split("e")[0]:
            mantissa, exponent = text.split("e")
            text = f"{mantissa}.0e{exponent}"
        return text
    return json.dumps(value)


def to_yaml(config: dict[str, Any]) -> str:
    """Flat ``key: value`` YAML."""
    return "".join(f"{key}: {yaml_scalar(value)}\n" for key, value in config.items())


def write_sft_files(settings: SFTSettings, run_dir: Path) -> tuple[Path, Path | None]:
    """Write ``sft.yaml`` (and ``ds_z3.json`` when training on several GPUs) into ``run_dir``.

    Files are written atomically and only when their content changes: on several nodes every node
    writes the same files into a shared run directory."""
    run_dir.mkdir(parents=True, exist_ok=True)
    deepspeed_path = None
    if settings.gpus * settings.nnodes > 1:
        deepspeed_path = run_dir / "ds_z3.json"
        write_if_changed(deepspeed_path, json.dumps(ZERO3, indent=2) + "\n")
    config_path = run_dir / "sft.yaml"
    write_if_changed(config_path, to_yaml(llamafactory_config(settings, deepspeed_path)))
    return config_path, deepspeed_path


def launch_command(config_path: Path, gpus: int, layout: NodeLayout | None = None) -> tuple[list[str], dict[str, str]]:
    """The ``llamafactory-cli train`` command and the extra environment.

    Several GPUs: ``FORCE_TORCHRUN=1 NPROC_PER_NODE``; several nodes: also torchrun's ``NNODES``,
    ``NODE_RANK``, ``MASTER_ADDR`` and ``MASTER_PORT``, as LLaMA-Factory reads them (``layout``
    gives this node's rank; its ``gpus_per_node`` wins over ``gpus``)."""
    if layout is not None and layout.multi_node:
        env = {"FORCE_TORCHRUN": "1", "NNODES": str(layout.nnodes), "NODE_RANK": str(layout.node_rank),
               "MASTER_ADDR": layout.master_addr, "MASTER_PORT": str(layout.master_port),
               "NPROC_PER_NODE": str(layout.gpus_per_node)}
    else:
        env = {"FORCE_TORCHRUN": "1", "NPROC_PER_NODE": str(gpus)} if gpus > 1 else {}
    return ["llamafactory-cli", "train", str(config_path)], env


def thread_env(threads: int | None, environ: dict[str, str] | None = None) -> dict[str, str]:
    """Thread settings for the trainer: ``threads`` when given; else one thread on a machine of at most two
    cores (where torch's default of one thread per core was measured 4-10x slower beside any other job,
    docs/real-model.md); else nothing. A thread count the user already exported wins over the default."""
    environ = dict(os.environ) if environ is None else environ
    if threads is None:
        if (os.cpu_count() or 1) > 2 or "OMP_NUM_THREADS" in environ:
            return {}
        threads = 1
    return {"OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}


def find_launcher() -> str | None:
    """Path of ``llamafactory-cli`` when LLaMA-Factory is installed."""
    return shutil.which("llamafactory-cli", path=os.environ.get("PATH"))
