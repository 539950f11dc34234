"""``envsim.train_data``: write SFT training data from Python, with the same files as ``envsim train data``.

    import envsim
    data = envsim.train_data("sft_data", recipe="smoke")
    print(data.samples, data.sft_file, data.by_stratum)

Only training-split environments are rolled out (never a held-out one); nothing over the cutoff is
truncated. Raises ``TrainDataStopped`` when it stops before writing usable data."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from envsim.training.errors import TrainDataStopped


@dataclass(frozen=True)
class TrainDataSummary:
    """What ``train_data`` wrote into ``out_dir``: ``stats`` is the ``stats.json`` dictionary."""

    out_dir: Path
    stats: dict[str, Any]

    @property
    def name(self) -> str:
        """Dataset name (the entry of ``dataset_info.json``)."""
        return str(self.stats["name"])

    @property
    def samples(self) -> int:
        """Samples written (after dropping those over the cutoff)."""
        return int(self.stats["samples"])

    @property
    def pool(self) -> int:
        """Labelled records the recipe sampled from."""
        return int(self.stats["pool"])

    @property
    def dropped_over_cutoff(self) -> int:
        """Samples left out because their full chat is longer than the cutoff."""
        return int(self.stats["dropped_over_cutoff"])

    @property
    def by_stratum(self) -> dict[str, int]:
        """Samples per stratum."""
        return dict(self.stats["by_stratum"])

    @property
    def sft_file(self) -> Path:
        """The chat-format SFT file (LLaMA-Factory's ShareGPT layout)."""
        return self.out_dir / f"{self.name}.jsonl"

    @property
    def records_file(self) -> Path:
        """The benchmark-format records of the same samples (input of ``envsim train rl``)."""
        return self.out_dir / f"{self.name}.records.jsonl"

    @property
    def dataset_info(self) -> Path:
        """LLaMA-Factory's ``dataset_info.json``."""
        return self.out_dir / "dataset_info.json"

    @property
    def stats_json(self) -> Path:
        """``stats.json``: the figures of ``stats``."""
        return self.out_dir / "stats.json"


def train_data(out: str | Path, *, recipe: str = "default", rationales: bool = False, workers: int = 1,
               version: str = "v1", prompt_version: str | None = None, cutoff: int = 8192,
               over_cutoff: str = "drop", tokenizer: str | Path | None = None,
               track: str | None = None, envs: Sequence[str] = (),
               exclude: Sequence[str | Path] = ()) -> TrainDataSummary:
    """Write chat-format SFT data (JSONL + records + ``dataset_info.json`` + ``stats.json``) into ``out`` from
    training-split environments of benchmark ``version``; keywords mirror ``envsim train data``'s options
    (``tokenizer``: a local model directory whose tokenizer counts tokens; default Qwen's BPE, offline).
    ``track="tau"``: τ-bench's train tasks instead, prompted with state views (``training.tau_data``; the
    recipe does not apply). ``envs``: your own ``module:Class`` environments instead of the registry's
    (``training.own_env_data``: explorer episodes disjoint from the test split's, ``exclude`` = test files whose
    record ids are dropped exactly; large states prompted with views). Progress follows ``ENVSIM_PROGRESS``."""
    from envsim.construction.composition import CompositionError
    from envsim.construction.splits import training_envs
    from envsim.envs.registry import list_envs
    from envsim.progress import progress as tqdm
    from envsim.tokens import TokenizerUnavailable, get_tokenizer
    from envsim.training.data import OverCutoffError, build_sft_data, load_recipe, recipe_envs

    if over_cutoff not in ("drop", "refuse"):
        raise TrainDataStopped(f"over_cutoff must be 'drop' or 'refuse', not {over_cutoff!r}")
    if track is not None:
        return _track_data(track, Path(out), prompt_version=prompt_version, cutoff=cutoff, over_cutoff=over_cutoff,
                           tokenizer=tokenizer)
    try:
        spec = load_recipe(recipe)
    except (OSError, ValueError) as exc:
        raise TrainDataStopped(f"cannot read recipe {recipe}: {exc}") from None
    try:
        counter = get_tokenizer(str(tokenizer) if tokenizer is not None else None)
    except TokenizerUnavailable as exc:
        raise TrainDataStopped(str(exc)) from None
    out_dir = Path(out)
    if envs:
        return _own_env_data(list(envs), spec, out_dir, exclude=[Path(p) for p in exclude],
                             prompt_version=prompt_version, cutoff=cutoff, over_cutoff=over_cutoff, tokenizer=counter,
                             workers=workers)
    try:
        envs = recipe_envs(spec, training_envs([e.id for e in list_envs() if e.builtin], version))
    except ValueError as exc:
        raise TrainDataStopped(str(exc)) from None
    with tqdm(total=len(envs), desc="rollouts (train)", unit="env") as bar:
        try:
            stats = build_sft_data(spec, out_dir, version=version, workers=workers, rationales=rationales,
                                   progress=bar, prompt_version=prompt_version, cutoff=cutoff,
                                   over_cutoff=over_cutoff, tokenizer=counter)
        except CompositionError as exc:
            raise TrainDataStopped(f"{exc}; raise the recipe's rollout episodes/steps") from None
        except OverCutoffError as exc:
            raise TrainDataStopped(str(exc)) from None
    return TrainDataSummary(out_dir=out_dir, stats=stats)


def _own_env_data(env_ids: list[str], recipe: dict[str, Any], out_dir: Path, *, exclude: list[Path],
                  prompt_version: str | None, cutoff: int, over_cutoff: str, tokenizer: Any,
                  workers: int) -> TrainDataSummary:
    """``train_data`` of the user's own environments (``training.own_env_data``)."""
    from envsim.construction.composition import CompositionError
    from envsim.envs.registry import UnknownEnvironment
    from envsim.training.data import OverCutoffError
    from envsim.training.own_env_data import build_own_env_data

    try:
        stats = build_own_env_data(env_ids, recipe, out_dir, exclude=exclude, prompt_version=prompt_version,
                                   cutoff=cutoff, over_cutoff=over_cutoff, tokenizer=tokenizer, workers=workers)
    except (CompositionError, OverCutoffError, UnknownEnvironment, ImportError, AttributeError, TypeError,
            ValueError, OSError) as exc:
        raise TrainDataStopped(f"{type(exc).__name__}: {exc}" if not isinstance(exc, ValueError) else str(exc)) \
            from None
    return TrainDataSummary(out_dir=out_dir, stats=stats)


TRAIN_TRACKS = ("tau",)


def _track_data(track: str, out_dir: Path, *, prompt_version: str | None, cutoff: int, over_cutoff: str,
                tokenizer: str | Path | None) -> TrainDataSummary:
    """``train_data`` of a foreign track (``tau``): its own training pool, never a test task's call."""
    from envsim.envs.adapters.tau import TauBenchNotFound
    from envsim.tokens import TokenizerUnavailable, get_tokenizer
    from envsim.training.data import OverCutoffError
    from envsim.training.tau_data import build_tau_sft_data

    if track not in TRAIN_TRACKS:
        raise TrainDataStopped(f"unknown track {track!r}; known: {', '.join(TRAIN_TRACKS)}")
    try:
        counter = get_tokenizer(str(tokenizer) if tokenizer is not None else None)
        stats = build_tau_sft_data(out_dir, prompt_version=prompt_version, cutoff=cutoff, over_cutoff=over_cutoff,
                                   tokenizer=counter)
    except (TokenizerUnavailable, TauBenchNotFound, OverCutoffError, ValueError) as exc:
        raise TrainDataStopped(str(exc)) from None
    return TrainDataSummary(out_dir=out_dir, stats=stats)
