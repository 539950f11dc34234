"""``envsim train ...``: training data and SFT launch for simulators."""

from __future__ import annotations

import json
from pathlib import Path

import click


@click.group("train")
def train() -> None:
    """Build training data, fine-tune (SFT) and reinforce (GRPO) environment simulators."""


@train.command("data")
@click.option("--recipe", default="default", show_default=True,
              help="'default' (≈6.23K: 1K failure, 1K no-change, 2K simple, 2.23K complex), 'smoke' (64, for CPU "
                   "smoke runs) or a recipe JSON file.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Output directory (JSONL + dataset_info.json for LLaMA-Factory).")
@click.option("--rationales", is_flag=True, help="Put an execution-trace rationale before each answer JSON.")
@click.option("--workers", type=int, default=1, show_default=True, help="Processes for rollouts.")
@click.option("--version", default="v1", show_default=True, help="Benchmark version whose held-out envs are excluded.")
def data_cmd(recipe: str, out: Path, rationales: bool, workers: int, version: str) -> None:
    """Write chat-format SFT data from training-split environments only."""
    from tqdm import tqdm

    from envsim.construction.composition import CompositionError
    from envsim.construction.splits import training_envs
    from envsim.envs.registry import list_envs
    from envsim.training.data import build_sft_data, load_recipe

    try:
        spec = load_recipe(recipe)
    except (OSError, ValueError) as exc:
        raise click.ClickException(f"cannot read recipe {recipe}: {exc}") from None
    envs = training_envs([e.id for e in list_envs() if e.builtin], version)
    with tqdm(total=len(envs), desc="rollouts (train)", unit="env") as bar:
        try:
            stats = build_sft_data(spec, out, version=version, workers=workers, rationales=rationales, progress=bar)
        except CompositionError as exc:
            raise click.ClickException(f"{exc}; raise the recipe's rollout episodes/steps") from None
    click.echo(json.dumps(stats, indent=2))


@train.command("sft")
@click.option("--model", required=True, help="Base model directory (or name your LLaMA-Factory can load).")
@click.option("--data", "data_dir", type=click.Path(exists=True, file_okay=False, path_type=Path), required=True,
              help="Output directory of 'envsim train data' (holds dataset_info.json).")
@click.option("--dataset", default=None, help="Dataset name in dataset_info.json (default: its only entry).")
@click.option("--out", "run_dir", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Run directory: config files, checkpoints (output_dir = RUN/checkpoints).")
@click.option("--gpus", type=int, default=1, show_default=True, help="GPUs; >1 adds DeepSpeed ZeRO-3 and torchrun.")
@click.option("--template", default="qwen3_nothink", show_default=True,
              help="LLaMA-Factory chat template; the default answers without a <think> block.")
@click.option("--lr", "learning_rate", type=float, default=2e-5, show_default=True)
@click.option("--epochs", type=float, default=3.0, show_default=True)
@click.option("--cutoff", "cutoff_len", type=int, default=8192, show_default=True)
@click.option("--batch", "effective_batch", type=int, default=32, show_default=True, help="Effective batch size.")
@click.option("--max-steps", type=int, default=None, help="Stop after N optimizer steps (smoke tests).")
@click.option("--no-bf16", is_flag=True, help="Train in fp32 (CPU).")
@click.option("--dry-run", is_flag=True, help="Print the files and the command instead of launching.")
def sft_cmd(model: str, data_dir: Path, dataset: str | None, run_dir: Path, gpus: int, template: str,
            learning_rate: float, epochs: float, cutoff_len: int, effective_batch: int, max_steps: int | None,
            no_bf16: bool, dry_run: bool) -> None:
    """Write the LLaMA-Factory YAML (+ ZeRO-3 JSON) and launch full-parameter SFT."""
    import os
    import subprocess

    from envsim.training.sft import SFTSettings, find_launcher, launch_command, write_sft_files

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
                           output_dir=(run_dir / "checkpoints").resolve(), gpus=gpus, template=template,
                           learning_rate=learning_rate, epochs=epochs, cutoff_len=cutoff_len,
                           effective_batch=effective_batch, bf16=not no_bf16, max_steps=max_steps)
    config_path, ds_path = write_sft_files(settings, run_dir)
    command, extra_env = launch_command(config_path, gpus)
    if dry_run:
        click.echo(f"# {config_path}\n{config_path.read_text()}")
        if ds_path is not None:
            click.echo(f"# {ds_path}\n{ds_path.read_text()}")
        click.echo(" ".join([*(f"{k}={v}" for k, v in extra_env.items()), *command]))
        return
    if find_launcher() is None:
        raise click.ClickException("llamafactory-cli not found: install LLaMA-Factory (see README, "
                                   "'Train your own simulator') or use --dry-run")
    raise SystemExit(subprocess.call(command, env={**os.environ, **extra_env}))


@train.command("rl")
@click.option("--model", required=True, help="Policy to start from: a local model directory (usually the SFT checkpoint).")
@click.option("--records", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True,
              help="Benchmark-format records of training-split envs (the *.records.jsonl of 'envsim train data', "
                   "or 'envsim construct --split train').")
@click.option("--out", "run_dir", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Run directory: rl_config.json, and the trained policy under RUN/policy.")
@click.option("--cm-weight", type=float, default=1.0, show_default=True, help="Weight of Config Match in the reward.")
@click.option("--fm-weight", type=float, default=1.0, show_default=True, help="Weight of Feedback Match.")
@click.option("--format-weight", type=float, default=0.2, show_default=True, help="Weight of a parseable answer.")
@click.option("--prompt-mode", type=click.Choice(["mdp", "pomdp", "full-class"]), default="mdp", show_default=True)
@click.option("--lr", "learning_rate", type=float, default=1e-6, show_default=True)
@click.option("--num-generations", type=int, default=8, show_default=True, help="Completions per prompt (GRPO group).")
@click.option("--batch", "per_device_batch", type=int, default=8, show_default=True, help="Completions per device per step.")
@click.option("--grad-accum", "gradient_accumulation", type=int, default=1, show_default=True)
@click.option("--max-completion-length", type=int, default=2048, show_default=True)
@click.option("--temperature", type=float, default=1.0, show_default=True)
@click.option("--beta", type=float, default=0.0, show_default=True, help="KL coefficient (0: no reference model).")
@click.option("--epochs", type=float, default=1.0, show_default=True)
@click.option("--max-steps", type=int, default=None, help="Stop after N optimizer steps (smoke tests).")
@click.option("--gpus", type=int, default=1, show_default=True, help="GPUs; >1 runs accelerate launch with ZeRO-3.")
@click.option("--device", type=click.Choice(["auto", "cuda", "cpu"]), default="auto", show_default=True)
@click.option("--vllm", "vllm_choice", type=click.Choice(["auto", "on", "off"]), default="auto", show_default=True,
              help="Generate with vLLM (colocated); auto: when vLLM is installed and a GPU is used.")
@click.option("--version", default="v1", show_default=True, help="Benchmark version whose held-out envs are refused.")
@click.option("--dry-run", is_flag=True, help="Print the config and the command instead of launching.")
def rl_cmd(model: str, records: Path, run_dir: Path, cm_weight: float, fm_weight: float, format_weight: float,
           prompt_mode: str, learning_rate: float, num_generations: int, per_device_batch: int,
           gradient_accumulation: int, max_completion_length: int, temperature: float, beta: float, epochs: float,
           max_steps: int | None, gpus: int, device: str, vllm_choice: str, version: str, dry_run: bool) -> None:
    """GRPO (TRL) with the envsim scorer as reward: format validity, FM and CM, weighted."""
    import importlib.util
    import os
    import subprocess

    from envsim.construction.splits import LeakError
    from envsim.training.rewards import RewardWeights
    from envsim.training.rl import RLSettings, launch_command, read_records, write_rl_files
    from envsim.training.serve import cuda_available

    try:
        prompts = read_records(records, version)
    except (LeakError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    cpu = device == "cpu" or (device == "auto" and not dry_run and not cuda_available())
    use_vllm = vllm_choice == "on" or (vllm_choice == "auto" and not cpu and importlib.util.find_spec("vllm") is not None)
    if use_vllm and cpu:
        raise click.ClickException("--vllm on needs a GPU")
    settings = RLSettings(model=model, records=records.resolve(), output_dir=(run_dir / "policy").resolve(),
                          weights=RewardWeights(cm=cm_weight, fm=fm_weight, format=format_weight),
                          prompt_mode=prompt_mode, version=version, learning_rate=learning_rate,
                          num_generations=num_generations, per_device_batch=per_device_batch,
                          gradient_accumulation=gradient_accumulation, max_completion_length=max_completion_length,
                          temperature=temperature, beta=beta, epochs=epochs, max_steps=max_steps, bf16=not cpu,
                          use_vllm=use_vllm, gpus=gpus, cpu=cpu)
    try:
        settings.check()
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    config_path, ds_path = write_rl_files(settings, run_dir)
    command = launch_command(config_path, gpus, ds_path)
    if dry_run:
        click.echo(f"# {config_path}\n{config_path.read_text()}")
        click.echo(" ".join(command))
        return
    missing = [m for m in ("trl", "transformers", "datasets") if importlib.util.find_spec(m) is None]
    if missing:
        raise click.ClickException(f"envsim train rl needs the [train] extra (missing: {', '.join(missing)}); "
                                   "or use --dry-run")
    click.echo(f"GRPO on {len(prompts)} prompts; policy -> {settings.output_dir}", err=True)
    code = subprocess.call(command, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    if code != 0:
        raise click.ClickException(f"GRPO run failed (exit {code}); see the output above")


@train.command("tiny-model")
@click.option("--data", "data_dir", type=click.Path(exists=True, file_okay=False, path_type=Path), required=True,
              help="Output directory of 'envsim train data' (its texts train the tokenizer).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True, help="Model directory.")
@click.option("--vocab-size", type=int, default=2000, show_default=True)
@click.option("--hidden-size", type=int, default=64, show_default=True)
@click.option("--layers", type=int, default=2, show_default=True)
def tiny_model_cmd(data_dir: Path, out: Path, vocab_size: int, hidden_size: int, layers: int) -> None:
    """Build a tiny Qwen3 model and a locally trained BPE tokenizer (tests, CPU smoke runs; needs [train])."""
    try:
        from envsim.training.tiny_model import build_tiny_model, texts_from_sft
    except ImportError as exc:  # pragma: no cover - message for installs without the extra
        raise click.ClickException(f"needs the [train] extra: {exc}") from None
    info_path = data_dir / "dataset_info.json"
    if not info_path.exists():
        raise click.ClickException(f"{data_dir} has no dataset_info.json (run 'envsim train data' first)")
    files = [data_dir / entry["file_name"] for entry in json.loads(info_path.read_text()).values()]
    missing = [str(f) for f in files if not f.exists()]
    if missing or not files:
        raise click.ClickException(f"SFT files listed in {info_path} are missing: {', '.join(missing) or 'none listed'}")
    try:
        info = build_tiny_model(out, [t for f in files for t in texts_from_sft(f)], vocab_size=vocab_size,
                                hidden_size=hidden_size, layers=layers)
    except ImportError as exc:
        raise click.ClickException(f"needs the [train] extra (transformers, tokenizers, torch): {exc}") from None
    click.echo(json.dumps({"model_dir": str(out), **info}))
