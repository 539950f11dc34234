"""``envsim train sft``: write the LLaMA-Factory config (+ ZeRO-3) and launch SFT (full-parameter by default)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import click

from envsim.cli.launch_options import (TRAIN_INSTALL, RunFiles, launch, node_header, node_options,
                                       require_cpu_training, resolve_nodes)


@click.command("sft")
@click.option("--model", required=True, help="Base model directory (or name your LLaMA-Factory can load).")
@click.option("--data", "data_dir", type=click.Path(exists=True, file_okay=False, path_type=Path), required=True,
              help="Output directory of 'envsim train data' (holds dataset_info.json).")
@click.option("--dataset", default=None, help="Dataset name in dataset_info.json (default: its only entry).")
@click.option("--out", "run_dir", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Run directory: config files, checkpoints (output_dir = RUN/checkpoints).")
@click.option("--gpus", type=int, default=None,
              help="GPUs per node (default: $SLURM_GPUS_ON_NODE, else 1); more than one GPU in all adds "
                   "DeepSpeed ZeRO-3 and torchrun.")
@node_options
@click.option("--template", default="qwen3_nothink", show_default=True,
              help="LLaMA-Factory chat template; the default answers without a <think> block.")
@click.option("--lr", "learning_rate", type=float, default=2e-5, show_default=True,
              help="Peak learning rate (cosine schedule, warmup 5%).")
@click.option("--epochs", type=float, default=3.0, show_default=True, help="Training epochs.")
@click.option("--cutoff", "cutoff_len", type=int, default=8192, show_default=True,
              help="Sequence cutoff in tokens (use the 'envsim train data --cutoff' the data was written with).")
@click.option("--batch", "effective_batch", type=int, default=32, show_default=True, help="Effective batch size.")
@click.option("--max-steps", type=int, default=None, help="Stop after N optimizer steps (smoke tests).")
@click.option("--no-bf16", is_flag=True,
              help="Train in fp32. --device cpu: bfloat16 autocast is used only where the CPU multiplies bfloat16 "
                   "natively (AVX512-BF16 or AMX; training/cpu_precision.py); this flag keeps fp32 there too.")
@click.option("--finetuning", type=click.Choice(["full", "lora", "freeze"]), default="full", show_default=True,
              help="full: every parameter; lora: rank-R adapters on every linear layer (RUN/checkpoints holds the "
                   "adapter, not a model); freeze: only the last --freeze-layers layers train (a full checkpoint).")
@click.option("--lora-rank", type=int, default=16, show_default=True, help="LoRA rank (--finetuning lora).")
@click.option("--freeze-layers", type=int, default=2, show_default=True,
              help="Trainable last layers (--finetuning freeze).")
@click.option("--no-gradient-checkpointing", is_flag=True,
              help="Keep activations instead of recomputing them (faster; more memory: fine for small models).")
@click.option("--threads", type=int, default=None,
              help="CPU threads of the trainer (OMP_NUM_THREADS); default: 1 on a machine of at most 2 cores, "
                   "else torch's default. An exported OMP_NUM_THREADS wins over the default.")
@click.option("--device", type=click.Choice(["auto", "cpu"]), default="auto", show_default=True,
              help="cpu: EnvSim's CPU loop (training/sft_cpu.py) instead of LLaMA-Factory: the last --freeze-layers "
                   "layers train on cached activations of the frozen ones, loss on the answer tokens as "
                   "LLaMA-Factory's; --batch counts samples per step, --max-steps and --template do not apply.")
@click.option("--prompt-grad", type=click.Choice(["full", "none"]), default="full", show_default=True,
              help="--device cpu: none runs the prompt's positions without grad (the answer's carry it): about a "
                   "third of a step's cost, an approximate gradient (training/sft_cpu.py).")
@click.option("--save-at", default=None, metavar="N[,N...]",
              help="--device cpu: also write RUN/checkpoint-N after N samples seen (a learning curve).")
@click.option("--time-check", type=click.IntRange(min=1), default=None, metavar="N",
              help="--device cpu: train the data's first N samples for one epoch with these settings, project the "
                   "whole run's time from them (RUN/time_check.json; training/sft_time_check.py) and stop; no "
                   "checkpoint is written.")
@click.option("--dry-run", is_flag=True,
              help="Write and print the config files and print the command instead of launching.")
def sft_cmd(model: str, data_dir: Path, dataset: str | None, run_dir: Path, gpus: int | None, nnodes: int | None,
            node_rank: int | None, master_addr: str | None, master_port: int | None, template: str,
            learning_rate: float, epochs: float, cutoff_len: int, effective_batch: int, max_steps: int | None,
            no_bf16: bool, finetuning: str, lora_rank: int, freeze_layers: int, no_gradient_checkpointing: bool,
            threads: int | None, dry_run: bool, device: str = "auto", save_at: str | None = None,
            time_check: int | None = None, prompt_grad: str = "full") -> None:
    """Write the LLaMA-Factory YAML (+ ZeRO-3 JSON) and launch SFT (full-parameter by default; on one or several nodes:
    run the same command on every node, e.g. with srun).

    Nothing is written when llamafactory-cli is missing; when it exits non-zero, the config files this
    command created are removed again (kept when RUN/checkpoints has content) and the command exits with
    its code."""
    from envsim.training.launch import format_env
    from envsim.training.serve import cuda_available
    from envsim.training.sft import SFTSettings, find_launcher, launch_command, thread_env, write_sft_files
    from envsim.training.sft_progress import LOG_NAME, ProgressFollower

    if device == "cpu":
        _cpu_loop(model, data_dir, dataset, run_dir, learning_rate=learning_rate, epochs=epochs,
                  batch=effective_batch, freeze_layers=freeze_layers, cutoff=cutoff_len, threads=threads,
                  save_at=save_at, finetuning=finetuning, dry_run=dry_run, precision="fp32" if no_bf16 else "auto",
                  time_check=time_check, prompt_grad=prompt_grad)
        return
    if save_at:
        raise click.UsageError("--save-at needs --device cpu (LLaMA-Factory: set save_steps in the YAML)")
    if time_check or prompt_grad != "full":
        raise click.UsageError("--time-check and --prompt-grad need --device cpu (EnvSim's CPU loop)")
    layout = resolve_nodes(nnodes, node_rank, master_addr, master_port, gpus)
    gpus = layout.gpus_per_node

    info_path = data_dir / "dataset_info.json"
    if not info_path.exists():
        raise click.ClickException(f"{data_dir} has no dataset_info.json (run 'envsim train data' first)")
    names = list(json.loads(info_path.read_text()))
    if dataset is None:
        if len(names) != 1:
            raise click.ClickException(f"choose --dataset among: {', '.join(names)}")
        dataset = names[0]
    elif dataset not in names:
        raise click.ClickException(f"dataset {dataset!r} not in {info_path} ({', '.join(names)})")
    settings = SFTSettings(model=model, data_dir=data_dir.resolve(), dataset=dataset,
                           output_dir=(run_dir / "checkpoints").resolve(), gpus=gpus, nnodes=layout.nnodes,
                           template=template,
                           learning_rate=learning_rate, epochs=epochs, cutoff_len=cutoff_len,
                           effective_batch=effective_batch, bf16=not no_bf16, max_steps=max_steps,
                           finetuning=finetuning, lora_rank=lora_rank, freeze_layers=freeze_layers,
                           gradient_checkpointing=not no_gradient_checkpointing,
                           logging_steps=10 if cuda_available() else 1)
    if not dry_run and find_launcher() is None:
        raise click.ClickException(f"llamafactory-cli not found: install LLaMA-Factory ({TRAIN_INSTALL}; "
                                   "see docs/training.md) or use --dry-run")
    run = RunFiles.snapshot(run_dir, run_dir / "checkpoints")
    config_path, ds_path = write_sft_files(settings, run_dir)
    command, extra_env = launch_command(config_path, gpus, layout)
    extra_env = {**thread_env(threads), **extra_env}
    if dry_run:
        click.echo(f"# {config_path}\n{config_path.read_text()}")
        if ds_path is not None:
            click.echo(f"# {ds_path}\n{ds_path.read_text()}")
        for node in layout.all_nodes() if layout.multi_node else [layout]:
            node_command, node_env = launch_command(config_path, gpus, node)
            if layout.multi_node:
                click.echo(node_header(node))
            click.echo(" ".join(filter(None, [format_env(node_env), shlex.join(node_command)])))
        return
    if layout.multi_node:
        click.echo(f"{node_header(layout)[2:]}: {format_env(extra_env)} {shlex.join(command)}", err=True)
    samples_per_step = settings.per_device_batch * settings.gradient_accumulation * gpus * layout.nnodes
    with ProgressFollower(settings.output_dir / LOG_NAME, samples_per_step, lambda line: click.echo(line, err=True)):
        launch(command, extra_env, "llamafactory-cli", run, [config_path, ds_path])
    from envsim.training.checkpoint_meta import data_prompt_settings, mark_checkpoints

    marked = mark_checkpoints(settings.output_dir, data_prompt_settings(settings.data_dir), trainer="llamafactory",
                              base_model=model)
    click.echo(f"prompt settings of the training data written to {len(marked)} checkpoint folder(s) "
               f"(envsim_training.json, read by 'envsim serve')", err=True)


def parse_save_at(text: str | None) -> tuple[int, ...]:
    """``--save-at 40,80,160`` as sample counts."""
    if not text:
        return ()
    try:
        points = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise click.BadParameter(f"{text!r}: give sample counts separated by commas, e.g. 40,80,160",
                                 param_hint="--save-at") from None
    if any(n < 1 for n in points):
        raise click.BadParameter("sample counts must be at least 1", param_hint="--save-at")
    return points


def _cpu_loop(model: str, data_dir: Path, dataset: str | None, run_dir: Path, *, learning_rate: float, epochs: float,
              batch: int, freeze_layers: int, cutoff: int, threads: int | None, save_at: str | None,
              finetuning: str, dry_run: bool, precision: str = "auto", time_check: int | None = None,
              prompt_grad: str = "full") -> None:
    """``envsim train sft --device cpu``: the CPU loop of ``training.sft_cpu`` (or, with ``time_check``, its
    projected time from that many samples: ``training.sft_time_check``)."""
    from envsim.training.sft_cpu import CPUSFTSettings, dataset_file, train_sft_cpu

    if finetuning != "freeze":
        raise click.UsageError("--device cpu trains the last layers only: use --finetuning freeze")
    try:
        dataset_file(data_dir, dataset)
    except (OSError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    settings = CPUSFTSettings(model=model, data_dir=data_dir.resolve(), dataset=dataset, output_dir=run_dir,
                              learning_rate=learning_rate, epochs=epochs, batch=batch, trainable_layers=freeze_layers,
                              cutoff=cutoff, save_at=parse_save_at(save_at), threads=threads, precision=precision,
                              prompt_grad=prompt_grad)
    try:
        settings.check()
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    if dry_run:
        click.echo(json.dumps(settings.to_json(), indent=2))
        return
    require_cpu_training("the CPU SFT loop")
    if time_check:
        from envsim.training.sft_time_check import FILE_NAME, describe, time_check as measure

        try:
            result = measure(settings, time_check, lambda line: click.echo(line, err=True))
        except (OSError, ValueError) as exc:
            raise click.ClickException(str(exc)) from None
        click.echo(f"{describe(result)}\nwritten: {run_dir / FILE_NAME}")
        return
    try:
        summary = train_sft_cpu(settings, lambda line: click.echo(line, err=True))
    except (OSError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(json.dumps(summary, indent=2))
    click.echo(f"model directory: {run_dir / 'checkpoints'}")
