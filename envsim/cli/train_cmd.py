"""``envsim train ...``: training data, and SFT (LLaMA-Factory) and GRPO launches for simulators."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

import click

from envsim.progress import progress_option


def node_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--nnodes/--node-rank/--master-addr/--master-port``: explicit flags win over $MASTER_* and Slurm's variables."""
    options = [
        click.option("--nnodes", type=int, default=None, help="Nodes (default: $SLURM_NNODES, else 1)."),
        click.option("--node-rank", type=int, default=None,
                     help="This node's rank, 0 on the rendezvous node (default: $SLURM_NODEID, else 0)."),
        click.option("--master-addr", default=None,
                     help="Host of node 0 (default: $MASTER_ADDR, else the first host of $SLURM_JOB_NODELIST)."),
        click.option("--master-port", type=int, default=None,
                     help="Rendezvous port (default: $MASTER_PORT, else 29500)."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def resolve_nodes(nnodes: int | None, node_rank: int | None, master_addr: str | None, master_port: int | None,
                  gpus: int | None) -> Any:
    """The ``NodeLayout`` of this process, or a usage error."""
    from envsim.training.launch import LayoutError, resolve_layout

    try:
        return resolve_layout(nnodes=nnodes, node_rank=node_rank, master_addr=master_addr, master_port=master_port,
                              gpus=gpus)
    except LayoutError as exc:
        raise click.UsageError(str(exc)) from None


def node_header(layout: Any) -> str:
    """``# node R of N ...`` line above each node's command in a dry run."""
    return (f"# node {layout.node_rank} of {layout.nnodes} ({layout.gpus_per_node} GPUs per node, "
            f"{layout.world_size} processes, rendezvous {layout.master_addr}:{layout.master_port})")


class LaunchFailed(click.ClickException):
    """The launched trainer exited non-zero; the command exits with the trainer's code."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass(frozen=True)
class RunFiles:
    """A run directory as it was before a command wrote its config files into it.

    A failed launch takes back only what this command created: on several nodes every node writes the
    same files into a shared directory, and files of an earlier run stay. (Two nodes that both find a
    file missing may both take it back; their launches fail together anyway.)"""

    run_dir: Path
    outputs: Path                   # where the trainer writes: RUN/checkpoints, RUN/policy
    before: frozenset[str]          # names in run_dir before this command
    new_dirs: tuple[Path, ...]      # run_dir and its parents that did not exist, innermost first

    @classmethod
    def snapshot(cls, run_dir: Path, outputs: Path) -> "RunFiles":
        """Take the snapshot; call it before writing anything."""
        new_dirs = tuple(d for d in (run_dir, *run_dir.parents) if not d.exists())
        before = frozenset(p.name for p in run_dir.iterdir()) if run_dir.is_dir() else frozenset()
        return cls(run_dir, outputs, before, new_dirs)

    def take_back(self, written: Iterable[Path | None]) -> str:
        """Remove the files of ``written`` this command created, then the directories it created once empty;
        keep everything when the trainer already wrote outputs (the files document how they were made).
        Returns what was done, for the error message."""
        written = [p for p in written if p is not None]
        created = [p for p in written if p.name not in self.before]
        if self.outputs.is_dir() and any(self.outputs.iterdir()):
            return (f"kept {_joined(written)}: {self.outputs} has content, and "
                    f"{'it documents' if len(written) == 1 else 'they document'} how it was made")
        for path in created:
            path.unlink(missing_ok=True)
        empty_dirs = ([self.outputs] if self.outputs.name not in self.before else []) + list(self.new_dirs)
        for directory in empty_dirs:
            try:
                directory.rmdir()
            except OSError:         # not empty (or gone): stop at the first directory that stays
                if directory in self.new_dirs:
                    break
        kept = [p for p in written if p not in created]
        notes = [f"removed {_joined(created)} written by this command (use --dry-run to see "
                 f"{'it' if len(created) == 1 else 'them'})"] if created else []
        notes += [f"kept {_joined(kept)} (there before this command)"] if kept else []
        return "; ".join(notes)


def _joined(paths: list[Path]) -> str:
    return ", ".join(str(p) for p in paths)


def launch(command: list[str], env: dict[str, str], label: str, run: RunFiles,
           written: Iterable[Path | None]) -> None:
    """Run the trainer; on a non-zero exit take back this command's config files (``RunFiles.take_back``)
    and raise ``LaunchFailed`` with the trainer's exit code (128 + N when killed by signal N)."""
    try:
        code = subprocess.call(command, env={**os.environ, **env})
    except OSError as exc:
        click.echo(f"cannot start {command[0]}: {exc}", err=True)
        code = 127
    if code == 0:
        return
    what = f"was killed by signal {-code}" if code < 0 else f"exited with {code}"
    raise LaunchFailed(f"{label} {what} (see the output above); {run.take_back(written)}",
                       128 - code if code < 0 else code)


def missing_train_extras(multi_gpu: bool) -> list[str]:
    """Modules of the [train] extra that ``envsim train rl`` needs and cannot import."""
    import importlib.util

    needed = ["trl", "transformers", "datasets"] + (["accelerate"] if multi_gpu else [])
    return [m for m in needed if importlib.util.find_spec(m) is None]


@click.group("train")
def train() -> None:
    """Build training data, fine-tune (SFT) and reinforce (GRPO) environment simulators."""


@train.command("data")
@progress_option
@click.option("--recipe", default="default", show_default=True,
              help="'default' (≈6.23K: 1K failure, 1K no-change, 2K simple, 2.23K complex), 'smoke' (64, for CPU "
                   "smoke runs) or a recipe JSON file.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Output directory (JSONL + dataset_info.json for LLaMA-Factory).")
@click.option("--rationales", is_flag=True, help="Put an execution-trace rationale before each answer JSON.")
@click.option("--workers", type=int, default=1, show_default=True, help="Processes for rollouts.")
@click.option("--version", default="v1", show_default=True, help="Benchmark version whose held-out envs are excluded.")
@click.option("--prompt-version", type=click.Choice(["1", "2"]), default=None,
              help="Prompt version of the samples (default: the recipe's, else 2, compact JSON). Evaluate the "
                   "trained model with the same 'envsim eval --prompt-version'.")
@click.option("--cutoff", type=int, default=8192, show_default=True,
              help="SFT cutoff in tokens (the 'envsim train sft --cutoff'); full chats are counted, framing included.")
@click.option("--over-cutoff", type=click.Choice(["drop", "refuse"]), default="drop", show_default=True,
              help="Samples over the cutoff: drop them (counted in stats.json) or refuse to write the data.")
@click.option("--tokenizer", "tokenizer_dir", type=click.Path(exists=True, file_okay=False), default=None,
              help="Local model directory whose tokenizer counts tokens (default: Qwen's BPE, offline).")
def data_cmd(recipe: str, out: Path, rationales: bool, workers: int, version: str, prompt_version: str | None,
             cutoff: int, over_cutoff: str, tokenizer_dir: str | None) -> None:
    """Write chat-format SFT data from training-split environments only; nothing over the cutoff is truncated."""
    from envsim.progress import progress as tqdm

    from envsim.construction.composition import CompositionError
    from envsim.construction.splits import training_envs
    from envsim.envs.registry import list_envs
    from envsim.tokens import TokenizerUnavailable, get_tokenizer
    from envsim.training.data import OverCutoffError, build_sft_data, load_recipe

    try:
        spec = load_recipe(recipe)
    except (OSError, ValueError) as exc:
        raise click.ClickException(f"cannot read recipe {recipe}: {exc}") from None
    try:
        tokenizer = get_tokenizer(tokenizer_dir)
    except TokenizerUnavailable as exc:
        raise click.ClickException(str(exc)) from None
    envs = training_envs([e.id for e in list_envs() if e.builtin], version)
    with tqdm(total=len(envs), desc="rollouts (train)", unit="env") as bar:
        try:
            stats = build_sft_data(spec, out, version=version, workers=workers, rationales=rationales, progress=bar,
                                   prompt_version=prompt_version, cutoff=cutoff, over_cutoff=over_cutoff,
                                   tokenizer=tokenizer)
        except CompositionError as exc:
            raise click.ClickException(f"{exc}; raise the recipe's rollout episodes/steps") from None
        except OverCutoffError as exc:
            raise click.ClickException(str(exc)) from None
    click.echo(json.dumps(stats, indent=2))


@train.command("sft")
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
@click.option("--no-bf16", is_flag=True, help="Train in fp32 (CPU).")
@click.option("--dry-run", is_flag=True,
              help="Write and print the config files and print the command instead of launching.")
def sft_cmd(model: str, data_dir: Path, dataset: str | None, run_dir: Path, gpus: int | None, nnodes: int | None,
            node_rank: int | None, master_addr: str | None, master_port: int | None, template: str,
            learning_rate: float, epochs: float, cutoff_len: int, effective_batch: int, max_steps: int | None,
            no_bf16: bool, dry_run: bool) -> None:
    """Write the LLaMA-Factory YAML (+ ZeRO-3 JSON) and launch full-parameter SFT (on one or several nodes:
    run the same command on every node, e.g. with srun).

    Nothing is written when llamafactory-cli is missing; when it exits non-zero, the config files this
    command created are removed again (kept when RUN/checkpoints has content) and the command exits with
    its code."""
    from envsim.training.launch import format_env
    from envsim.training.sft import SFTSettings, find_launcher, launch_command, write_sft_files

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
                           effective_batch=effective_batch, bf16=not no_bf16, max_steps=max_steps)
    if not dry_run and find_launcher() is None:
        raise click.ClickException("llamafactory-cli not found: install LLaMA-Factory (see README, "
                                   "'Train your own simulator') or use --dry-run")
    run = RunFiles.snapshot(run_dir, run_dir / "checkpoints")
    config_path, ds_path = write_sft_files(settings, run_dir)
    command, extra_env = launch_command(config_path, gpus, layout)
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
    launch(command, extra_env, "llamafactory-cli", run, [config_path, ds_path])


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
@click.option("--prompt-mode", type=click.Choice(["mdp", "pomdp", "full-class"]), default="mdp", show_default=True,
              help="What the prompt shows of the environment (as 'envsim eval --prompt-mode').")
@click.option("--prompt-version", type=click.Choice(["1", "2"]), default="2", show_default=True,
              help="Prompt version of the RL prompts (use the one the SFT data was written with).")
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
@click.option("--version", default="v1", show_default=True, help="Benchmark version whose held-out envs are refused.")
@click.option("--dry-run", is_flag=True, help="Write and print the config and print the command instead of launching.")
def rl_cmd(model: str, records: Path, run_dir: Path, cm_weight: float, fm_weight: float, format_weight: float,
           prompt_mode: str, prompt_version: str, learning_rate: float, num_generations: int,
           per_device_batch: int, gradient_accumulation: int, max_completion_length: int, temperature: float, beta: float, epochs: float,
           max_steps: int | None, gpus: int | None, nnodes: int | None, node_rank: int | None, master_addr: str | None,
           master_port: int | None, device: str, vllm_choice: str, version: str, dry_run: bool) -> None:
    """GRPO (TRL) with the envsim scorer as reward: format validity, FM and CM, weighted.

    Nothing is written when the [train] extra is missing; when the run exits non-zero, the config files
    this command created are removed again (kept when RUN/policy has content)."""
    import importlib.util

    from envsim.construction.splits import LeakError
    from envsim.training.rewards import RewardWeights
    from envsim.training.launch import format_env
    from envsim.training.rl import RLSettings, launch_command, read_records, write_accelerate_config, write_rl_files
    from envsim.training.serve import cuda_available

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
                          weights=RewardWeights(cm=cm_weight, fm=fm_weight, format=format_weight),
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
        raise click.ClickException(f"envsim train rl needs the [train] extra (missing: {', '.join(missing)}); "
                                   "or use --dry-run")
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
