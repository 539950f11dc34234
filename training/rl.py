"""RL with verifiable rewards: GRPO (TRL) on simulator prompts from training-split environments.

The reward is the evaluator's own scorer (``training.rewards``): format validity, Feedback Match and
Config Match, weighted as the user sets. ``envsim train rl`` writes ``rl_config.json`` into the run
directory and runs ``python -m envsim.training.rl RUN/rl_config.json`` (under ``accelerate launch``
with DeepSpeed ZeRO-3 on several GPUs); generation uses vLLM (colocated) when asked and installed.
"""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from envsim.construction.splits import assert_no_test_envs
from envsim.evaluation.prompting.prompts import LATEST_PROMPT_VERSION, PROMPT_MODES, build_messages, check_version
from envsim.training.checkpoint_meta import write_training_file
from envsim.training.launch import NodeLayout, write_if_changed
from envsim.training.rewards import COMPONENTS, RewardWeights, reward_functions
from envsim.training.sft import ZERO3

CONFIG_NAME = "rl_config.json"


@dataclass
class RLSettings:
    """One GRPO run: model, prompts, reward weights and the GRPO hyper-parameters."""

    model: str
    records: Path
    output_dir: Path
    weights: RewardWeights = field(default_factory=RewardWeights)
    prompt_mode: str = "mdp"
    prompt_version: str = LATEST_PROMPT_VERSION  # the version `envsim train data` writes by default
    version: str = "v1"
    learning_rate: float = 1e-6
    num_generations: int = 8
    per_device_batch: int = 8
    gradient_accumulation: int = 1
    max_completion_length: int = 2048
    temperature: float = 1.0
    beta: float = 0.0
    epochs: float = 1.0
    max_steps: int | None = None
    bf16: bool = True
    gradient_checkpointing: bool = True
    use_vllm: bool = False
    vllm_gpu_memory_utilization: float = 0.3
    gpus: int = 1               # per node
    nnodes: int = 1
    cpu: bool = False
    seed: int = 0

    def to_json(self) -> dict[str, Any]:
        """JSON form written to ``rl_config.json``."""
        data = asdict(self)
        data["records"], data["output_dir"] = str(self.records), str(self.output_dir)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "RLSettings":
        """Inverse of ``to_json``."""
        values = dict(data)
        values["records"], values["output_dir"] = Path(values["records"]), Path(values["output_dir"])
        values["weights"] = RewardWeights(**values.get("weights", {}))
        return cls(**values)

    def check(self) -> None:
        """Raise ``ValueError`` on settings GRPO would reject later (after minutes of loading)."""
        if self.prompt_mode not in PROMPT_MODES:
            raise ValueError(f"unknown prompt mode {self.prompt_mode!r}")
        check_version(self.prompt_version)
        if self.num_generations < 2:
            raise ValueError("GRPO needs at least 2 generations per prompt (advantages are group-relative)")
        batch = self.per_device_batch * self.gradient_accumulation * max(self.gpus, 1) * max(self.nnodes, 1)
        if batch % self.num_generations:
            raise ValueError(f"the generation batch ({batch} = per-device batch x accumulation x GPUs x nodes) must "
                             f"be a multiple of --num-generations ({self.num_generations})")
        if self.nnodes > 1 and self.cpu:
            raise ValueError("multi-node GRPO needs GPUs (--device cuda)")
        if all(w == 0 for w in self.weights.as_list()):
            raise ValueError("all reward weights are zero")


def grpo_arguments(settings: RLSettings) -> dict[str, Any]:
    """Keyword arguments of ``trl.GRPOConfig`` for these settings."""
    args: dict[str, Any] = {
        "output_dir": str(settings.output_dir),
        "learning_rate": settings.learning_rate,
        "num_generations": settings.num_generations,
        "per_device_train_batch_size": settings.per_device_batch,
        "gradient_accumulation_steps": settings.gradient_accumulation,
        "max_completion_length": settings.max_completion_length,
        "max_prompt_length": None,          # never cut a state out of the prompt
        "temperature": settings.temperature,
        "beta": settings.beta,
        "num_train_epochs": settings.epochs,
        "reward_weights": settings.weights.as_list(),
        "bf16": settings.bf16 and not settings.cpu,
        "gradient_checkpointing": settings.gradient_checkpointing and not settings.cpu,
        "use_cpu": settings.cpu,
        "logging_steps": 1,
        "save_strategy": "no",
        "report_to": "none",
        "seed": settings.seed,
        "use_vllm": settings.use_vllm,
    }
    if settings.max_steps is not None:
        args["max_steps"] = settings.max_steps
    if settings.use_vllm:
        args.update(vllm_mode="colocate", vllm_gpu_memory_utilization=settings.vllm_gpu_memory_utilization)
    return args


def write_rl_files(settings: RLSettings, run_dir: Path) -> tuple[Path, Path | None]:
    """Write ``rl_config.json`` (and ``ds_z3.json`` on several GPUs); returns their paths.

    Written atomically and only on change: every node of a multi-node job writes the same files."""
    run_dir.mkdir(parents=True, exist_ok=True)
    config_path = run_dir / CONFIG_NAME
    write_if_changed(config_path, json.dumps({"settings": settings.to_json(), "grpo": grpo_arguments(settings),
                                              "reward_components": list(COMPONENTS)}, indent=2) + "\n")
    ds_path = None
    if settings.gpus * settings.nnodes > 1:
        ds_path = run_dir / "ds_z3.json"
        write_if_changed(ds_path, json.dumps(ZERO3, indent=2) + "\n")
    return config_path, ds_path


def accelerate_config(layout: NodeLayout, ds_path: Path) -> dict[str, Any]:
    """accelerate's multi-node config for one node: DeepSpeed ZeRO-3 from ``ds_path``, static rendezvous at
    node 0, ``num_processes`` = GPUs over all nodes. Mixed precision comes from the command line (accelerate
    refuses ``mixed_precision`` in a config file that names a DeepSpeed config file)."""
    return {
        "compute_environment": "LOCAL_MACHINE",
        "debug": False,
        "distributed_type": "DEEPSPEED",
        "deepspeed_config": {"deepspeed_config_file": str(ds_path), "deepspeed_multinode_launcher": "standard",
                             "zero3_init_flag": True},
        "downcast_bf16": "no",
        "machine_rank": layout.node_rank,
        "main_process_ip": layout.master_addr,
        "main_process_port": layout.master_port,
        "main_training_function": "main",
        "num_machines": layout.nnodes,
        "num_processes": layout.world_size,
        "rdzv_backend": "static",
        "same_network": True,
        "use_cpu": False,
    }


def write_accelerate_config(layout: NodeLayout, ds_path: Path, run_dir: Path) -> Path:
    """Write ``accelerate_node<RANK>.yaml`` (one file per node: each node writes only its own)."""
    from envsim.training.sft import yaml_scalar

    lines = []
    for key, value in accelerate_config(layout, ds_path).items():
        if isinstance(value, dict):
            lines.append(f"{key}:\n" + "".join(f"  {k}: {yaml_scalar(v)}\n" for k, v in value.items()))
        else:
            lines.append(f"{key}: {yaml_scalar(value)}\n")
    path = run_dir / f"accelerate_node{layout.node_rank}.yaml"
    write_if_changed(path, "".join(lines))
    return path


def launch_command(config_path: Path, gpus: int, ds_path: Path | None,
                   accelerate_file: Path | None = None) -> list[str]:
    """The command that runs the GRPO job (``accelerate launch`` with ZeRO-3 on several GPUs; with
    ``accelerate_file`` from ``write_accelerate_config`` on several nodes)."""
    launcher = shutil.which("accelerate") or "accelerate"
    if accelerate_file is not None:
        return [launcher, "launch", "--config_file", str(accelerate_file), "--mixed_precision", "bf16",
                "-m", "envsim.training.rl", str(config_path)]
    if gpus <= 1:
        return [sys.executable, "-m", "envsim.training.rl", str(config_path)]
    command = [launcher, "launch", "--num_processes", str(gpus), "--mixed_precision", "bf16"]
    if ds_path is not None:
        command += ["--use_deepspeed", "--deepspeed_config_file", str(ds_path)]
    return [*command, "-m", "envsim.training.rl", str(config_path)]


def read_records(path: Path, version: str = "v1") -> list[dict[str, Any]]:
    """Benchmark-format records for RL prompts (states stored once resolve from ``state_folder(path)``); refuses
    held-out environments (``LeakError``)."""
    from envsim.benchmark.state_store import has_refs, resolve, state_folder

    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    folder = state_folder(path)  # large states stored once (train data --env, --track tau): resolved on read
    records = [resolve(r, folder) if has_refs(r) else r for r in records]
    if not records:
        raise ValueError(f"{path} holds no records")
    missing = [k for k in ("env", "state", "action", "observation", "next_state") if k not in records[0]]
    if missing:
        raise ValueError(f"{path} is not a benchmark-format record file (missing {', '.join(missing)})")
    assert_no_test_envs((r["env"] for r in records), version)
    return records


def rl_rows(records: list[dict[str, Any]], prompt_mode: str, prompt_version: str = LATEST_PROMPT_VERSION,
            examples: Any = None) -> list[dict[str, Any]]:
    """Dataset rows: conversational ``prompt`` (the evaluation prompt) and the ``record`` as JSON text (whole
    states: the reward scores against them). ``examples``: the logged calls each prompt lists, as a callable of
    the record (``logged_examples_of``; None: none)."""
    from envsim.construction.stored_states import materialise

    return [{"prompt": build_messages(r, prompt_mode, version=prompt_version, examples=examples(r) if examples else ()),
             "record": json.dumps(m, sort_keys=True)} for r, m in zip(records, materialise(records))]


def logged_examples_of(records_path: Path) -> Any:
    """The logged calls GRPO's prompts list, as SFT's did: when the records come from an ``envsim train data``
    folder whose recipe set ``logged_examples`` (its ``stats.json``), that many calls of the same tool from the
    folder's samples (``evaluation.prompting.logged_calls``), as a callable of a record; else None."""
    from envsim.evaluation.prompting.logged_calls import load_logged_calls, recorded_k

    folder = Path(records_path).parent
    k = recorded_k(folder)
    return load_logged_calls(folder).examples_for(k) if k > 0 else None


def _repair_trl_availability_flags() -> None:
    """TRL 0.24 reads transformers' ``_is_package_available``, which returns a ``(bool, version)`` tuple
    from transformers 5 on: every optional package then looks installed (and TRL imports mergekit).
    Turn those tuples back into booleans before TRL's trainers are imported."""
    import trl.import_utils as flags

    for name in dir(flags):
        value = getattr(flags, name)
        if name.startswith("_") and name.endswith("_available") and isinstance(value, tuple):
            setattr(flags, name, bool(value[0]))


def _tokenizer(model: str) -> Any:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model)
    tokenizer.padding_side = "left"                      # generation pads on the left
    tokenizer.model_input_names = ["input_ids", "attention_mask"]
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def _policy_model(settings: RLSettings) -> Any:
    import torch
    from transformers import AutoModelForCausalLM

    dtype = torch.bfloat16 if settings.bf16 and not settings.cpu else torch.float32
    model = AutoModelForCausalLM.from_pretrained(settings.model, dtype=dtype)
    if not hasattr(model, "warnings_issued"):          # TRL 0.24 writes to it; transformers 5 dropped it
        model.warnings_issued = {}
    return model


def train_grpo(settings: RLSettings) -> dict[str, Any]:
    """Run GRPO; saves the policy to ``output_dir`` and the per-step log to ``rewards.jsonl``; returns a summary."""
    settings.check()
    records = read_records(settings.records, settings.version)
    _repair_trl_availability_flags()
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    tokenizer = _tokenizer(settings.model)
    out = settings.output_dir
    out.mkdir(parents=True, exist_ok=True)
    log_path = out / "completions.jsonl"
    log_path.unlink(missing_ok=True)
    args = GRPOConfig(**grpo_arguments(settings))   # before the model: under ZeRO-3 loading is then partitioned
    trainer = GRPOTrainer(model=_policy_model(settings), reward_funcs=reward_functions(log_path), args=args,
                          train_dataset=Dataset.from_list(rl_rows(records, settings.prompt_mode,
                                                                  settings.prompt_version,
                                                                  logged_examples_of(settings.records))),
                          processing_class=tokenizer)
    trainer.train()
    trainer.save_model(str(out))
    if trainer.accelerator.is_main_process:
        tokenizer.padding_side = "right"
        tokenizer.save_pretrained(str(out))
        trainer.state.save_to_json(str(out / "trainer_state.json"))
        write_training_file(out, {"prompt_mode": settings.prompt_mode, "prompt_version": settings.prompt_version},
                            trainer="grpo-trl", steps=trainer.state.global_step, base_model=settings.model)
        steps = [entry for entry in trainer.state.log_history if "reward" in entry]
        from envsim.safe_files import write_lines

        write_lines(out / "rewards.jsonl", (json.dumps(entry, sort_keys=True) for entry in steps))
    summary = {"global_step": trainer.state.global_step, "prompts": len(records), "output_dir": str(out),
               "reward_by_step": [entry.get("reward") for entry in trainer.state.log_history if "reward" in entry]}
    return summary


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m envsim.training.rl RUN/rl_config.json``."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m envsim.training.rl RUN/rl_config.json", file=sys.stderr)
        return 2
    config = json.loads(Path(args[0]).read_text())
    summary = train_grpo(RLSettings.from_json(config["settings"]))
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
