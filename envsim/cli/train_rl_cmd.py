"""``envsim train rl``: GRPO (TRL) with the envsim scorer as reward; ``--generator`` picks the CPU loop
(``training.grpo_cpu``: completions from llama.cpp or torch, only the last layers train)."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import click

from envsim.cli.launch_options import (TRAIN_INSTALL, RunFiles, launch, missing_train_extras, node_header,
                                       node_options, require_cpu_training, resolve_nodes)
from envsim.evaluation.prompting.answer_schema import RESPONSE_FORMATS
from envsim.training.rewards import RewardWeights


@click.command("rl")
@click.option("--model", required=True, help="Policy to start from: a local model directory (usually the SFT checkpoint).")
@click.option("--records", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True,
              help="Benchmark-format records of training-split envs (the *.records.jsonl of 'envsim train data', "
                   "or 'envsim construct --split train').")
@click.option("--out", "run_dir", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Run directory: rl_config.json, and the trained policy under RUN/policy.")
@click.option("--cm-weight", type=float, default=1.0, show_default=True, help="Weight of Config Match in the reward.")
@click.option("--fm-weight", type=float, default=1.0, show_default=True, help="Weight of Feedback Match.")
@click.option("--format-weight", type=float, default=0.2, show_default=True, help="Weight of a parseable answer.")
@click.option("--partial-weight", type=float, default=1.0, show_default=True,
              help="Weight of partial credit: mean of the patch-op F1 against the true patch and the observation's "
                   "leaf F1 (training/partial_credit.py); gives groups variance on state-changing calls. 0: off.")
@click.option("--prompt-mode", type=click.Choice(["mdp", "pomdp", "full-class", "mdp-view"]), default="mdp", show_default=True,
              help="What the prompt shows of the environment (as 'envsim eval --prompt-mode').")
@click.option("--prompt-version", type=click.Choice(["1", "2", "3"]), default="2", show_default=True,
              help="Prompt version of the RL prompts (use the one the SFT data was written with; mdp-view needs 3).")
@click.option("--lr", "learning_rate", type=float, default=1e-6, show_default=True, help="Learning rate.")
@click.option("--num-generations", type=int, default=8, show_default=True, help="Completions per prompt (GRPO group).")
@click.option("--batch", "per_device_batch", type=int, default=8, show_default=True, help="Completions per device per step.")
@click.option("--grad-accum", "gradient_accumulation", type=int, default=1, show_default=True,
              help="Gradient accumulation steps.")
@click.option("--max-completion-length", type=int, default=2048, show_default=True,
              help="Most tokens generated per completion.")
@click.option("--temperature", type=float, default=1.0, show_default=True, help="Sampling temperature of completions.")
@click.option("--beta", type=float, default=0.0, show_default=True, help="KL coefficient (0: no reference model).")
@click.option("--epochs", type=float, default=1.0, show_default=True, help="Passes over the prompts.")
@click.option("--max-steps", type=int, default=None, help="Stop after N optimizer steps (smoke tests).")
@click.option("--gpus", type=int, default=None,
              help="GPUs per node (default: $SLURM_GPUS_ON_NODE, else 1); more than one GPU in all runs "
                   "accelerate launch with ZeRO-3.")
@node_options
@click.option("--device", type=click.Choice(["auto", "cuda", "cpu"]), default="auto", show_default=True,
              help="Where to train; auto: CUDA when available, else CPU (fp32, no vLLM).")
@click.option("--vllm", "vllm_choice", type=click.Choice(["auto", "on", "off"]), default="auto", show_default=True,
              help="Generate with vLLM (colocated); auto: when vLLM is installed and a GPU is used.")
@click.option("--generator", type=click.Choice(["auto", "llama.cpp", "torch"]), default=None,
              help="CPU GRPO loop instead of TRL (needs --device cpu): completions from llama.cpp serving the policy "
                   "(restarted every --sync-every steps) or torch generate; auto: llama.cpp when installed.")
@click.option("--freeze-layers", type=int, default=4, show_default=True,
              help="With --generator: only the last N layers (+ final norm) train.")
@click.option("--sync-every", type=int, default=5, show_default=True,
              help="With --generator llama.cpp: restart the server on the current policy every N steps.")
@click.option("--threads", type=int, default=None,
              help="With --generator: torch threads (default 1 on at most 2 cores, else half the cores).")
@click.option("--response-format", type=click.Choice(list(RESPONSE_FORMATS)), default="free",
              show_default=True, help="With --generator llama.cpp: json-schema asks the server to decode under the "
              "answer schema (json-schema-path-first: operations' path before op, for path-first SFT data).")
@click.option("--behaviour-logprobs/--no-behaviour-logprobs", default=True, show_default=True,
              help="With --generator llama.cpp: on stale steps ask the server for log-probs and weight each token by "
                   "min(1, pi/pi_behaviour) (costly in llama-cpp-python); off: weight 1.")
@click.option("--overlap/--no-overlap", default=True, show_default=True,
              help="With --generator llama.cpp: generate the next step's completions while this step trains.")
@click.option("--version", default="v1", show_default=True, help="Benchmark version whose held-out envs are refused.")
@click.option("--dry-run", is_flag=True, help="Write and print the config and print the command instead of launching.")
def rl_cmd(model: str, records: Path, run_dir: Path, cm_weight: float, fm_weight: float, format_weight: float, partial_weight: float,
           prompt_mode: str, prompt_version: str, learning_rate: float, num_generations: int,
           per_device_batch: int, gradient_accumulation: int, max_completion_length: int, temperature: float, beta: float, epochs: float,
           max_steps: int | None, gpus: int | None, nnodes: int | None, node_rank: int | None, master_addr: str | None,
           master_port: int | None, device: str, vllm_choice: str, version: str, dry_run: bool,
           generator: str | None = None, freeze_layers: int = 4, sync_every: int = 5, threads: int | None = None,
           response_format: str = "free", behaviour_logprobs: bool = True, overlap: bool = True) -> None:
    """GRPO (TRL) with the envsim scorer as reward: format validity, FM and CM, weighted.

    Nothing is written when the [train] extra is missing; when the run exits non-zero, the config files
    this command created are removed again (kept when RUN/policy has content)."""
    import importlib.util

    from envsim.construction.splits import LeakError
    from envsim.training.launch import format_env
    from envsim.training.rl import RLSettings, launch_command, read_records, write_accelerate_config, write_rl_files
    from envsim.training.serve import cuda_available

    if generator is not None:
        if device == "cuda":
            raise click.ClickException("--generator runs the CPU GRPO loop: use --device cpu "
                                       "(or leave --generator out)")
        _cpu_loop(model, records, run_dir, RewardWeights(cm=cm_weight, fm=fm_weight, format=format_weight, partial=partial_weight),
                  prompt_mode=prompt_mode, prompt_version=prompt_version, version=version, learning_rate=learning_rate,
                  num_generations=num_generations, batch=per_device_batch, max_completion_length=max_completion_length,
                  temperature=temperature, epochs=epochs, max_steps=max_steps, freeze_layers=freeze_layers,
                  sync_every=sync_every, generator=generator, threads=threads, response_format=response_format,
                  behaviour_logprobs=behaviour_logprobs, overlap=overlap, dry_run=dry_run)
        return
    if device == "cpu" and gpus is None:     # Slurm's GPU count is no process count for a CPU run
        gpus = 1
    layout = resolve_nodes(nnodes, node_rank, master_addr, master_port, gpus)
    gpus = layout.gpus_per_node

    try:
        prompts = read_records(records, version)
    except (LeakError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    cpu = device == "cpu" or (device == "auto" and not dry_run and not cuda_available())
    use_vllm = vllm_choice == "on" or (vllm_choice == "auto" and not cpu and importlib.util.find_spec("vllm") is not None)
    if use_vllm and cpu:
        raise click.ClickException("--vllm on needs a GPU")
    settings = RLSettings(model=model, records=records.resolve(), output_dir=(run_dir / "policy").resolve(),
                          weights=RewardWeights(cm=cm_weight, fm=fm_weight, format=format_weight, partial=partial_weight),
                          prompt_mode=prompt_mode, prompt_version=prompt_version, version=version,
                          learning_rate=learning_rate, num_generations=num_generations, per_device_batch=per_device_batch,
                          gradient_accumulation=gradient_accumulation, max_completion_length=max_completion_length,
                          temperature=temperature, beta=beta, epochs=epochs, max_steps=max_steps, bf16=not cpu,
                          use_vllm=use_vllm, gpus=gpus, nnodes=layout.nnodes, cpu=cpu)
    try:
        settings.check()
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    missing = [] if dry_run else missing_train_extras(gpus * layout.nnodes > 1)
    if missing:
        raise click.ClickException(f"envsim train rl needs the [train] extra (missing: {', '.join(missing)}): "
                                   f"{TRAIN_INSTALL}; or use --dry-run")
    run = RunFiles.snapshot(run_dir, run_dir / "policy")
    config_path, ds_path = write_rl_files(settings, run_dir)
    extra_env = {"PYTHONUNBUFFERED": "1"}

    def accelerate_file(node: Any) -> Path | None:
        return write_accelerate_config(node, ds_path, run_dir) if node.multi_node and ds_path else None

    if dry_run:
        click.echo(f"# {config_path}\n{config_path.read_text()}")
        if not layout.multi_node:
            click.echo(" ".join(launch_command(config_path, gpus, ds_path)))
            return
        if ds_path is not None:
            click.echo(f"# {ds_path}\n{ds_path.read_text()}")
        for node in layout.all_nodes():
            node_file = accelerate_file(node)
            node_cmd = launch_command(config_path, gpus, ds_path, node_file)
            click.echo(f"{node_header(node)}\n# {node_file}\n{node_file.read_text() if node_file else ''}"
                       f"{format_env(extra_env)} {shlex.join(node_cmd)}")
        return
    node_file = accelerate_file(layout)
    command = launch_command(config_path, gpus, ds_path, node_file)
    click.echo(f"GRPO on {len(prompts)} prompts; policy -> {settings.output_dir}", err=True)
    if layout.multi_node:
        click.echo(f"{node_header(layout)[2:]}: {shlex.join(command)}", err=True)
    launch(command, extra_env, "GRPO run", run, [config_path, ds_path, node_file])


def _cpu_loop(model: str, records: Path, run_dir: Path, weights: Any, *, epochs: float, max_steps: int | None,
              dry_run: bool, **options: Any) -> None:
    """``--generator``: the CPU GRPO loop of ``training.grpo_cpu``, in this process (steps: ``--max-steps``, else
    ``--epochs`` passes over the prompts)."""
    import json
    import math

    from envsim.construction.splits import LeakError
    from envsim.training.grpo_cpu import CPUGRPOSettings, train_grpo_cpu
    from envsim.training.rl import read_records

    try:
        prompts = read_records(records, options["version"])
    except (LeakError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    per_step = max(options["batch"] // max(options["num_generations"], 1), 1)
    steps = max_steps if max_steps is not None else max(1, math.ceil(epochs * len(prompts) / per_step))
    settings = CPUGRPOSettings(model=model, records=records.resolve(), output_dir=run_dir.resolve(), weights=weights,
                               max_steps=steps, **options)
    try:
        settings.check()
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    if dry_run:
        click.echo(json.dumps(settings.to_json(), indent=2))
        return
    require_cpu_training("the CPU GRPO loop")
    click.echo(f"CPU GRPO on {len(prompts)} prompts, {steps} steps; policy -> {settings.output_dir / 'policy'}",
               err=True)
    try:
        summary = train_grpo_cpu(settings, echo=lambda line: click.echo(line, err=True))
    except (RuntimeError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(json.dumps(summary))
