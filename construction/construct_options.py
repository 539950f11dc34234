"""What ``envsim.construct`` is asked for (``ConstructOptions``) and what it returns (``ConstructSummary``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

Printer = Callable[[str], None]


def _silent(_text: str) -> None:
    """Print nothing."""


@dataclass(frozen=True)
class ConstructOptions:
    """The settings of one construction; fields mirror ``envsim construct``'s options."""

    split: str
    out: Path
    version: str = "v1"
    spec: str = "default"
    pool_size: int | None = None
    seed: int = 0
    episodes: int = 8
    steps: int = 40
    exclude: tuple[Path, ...] = ()
    tier: str = "single"
    scales: str = "4,8,16"
    history: int = 30
    min_tokens: int = 8192
    max_tokens: int = 32768
    lengths: str = "2-8"
    per_length: int = 16
    per_env_cap: int | None = None
    envs: tuple[str, ...] = ()
    track: str | None = None
    workers: int = 1
    policy: str = "explorer"
    replay_log: Path | None = None
    agent_model: str | None = None
    agent_base_url: str | None = None
    fmt: str = "envsim"
    echo_err: Printer = _silent       # warnings (e.g. a failed agent episode)


@dataclass(frozen=True)
class ConstructSummary:
    """The outcome of one construction: what was written where, and its statistics.

    ``written`` counts records (episodes for the chained tier), ``pool`` the candidates they were drawn
    from (``None`` where no pool was sampled); ``stats`` is the ``.stats.json`` dictionary; ``lines`` are
    the console lines ``envsim construct`` prints."""

    kind: str                       # "records", "episodes", or a track name ("bfcl", ...)
    out: Path
    written: int
    pool: int | None
    stats: dict[str, Any]
    stats_json: Path
    stats_md: Path | None
    lines: tuple[str, ...] = field(default=())
    extra_paths: tuple[Path, ...] = field(default=())   # a track's other files (chained episodes, state blobs)

    @property
    def paths(self) -> tuple[Path, ...]:
        """Every file (or folder) written."""
        return tuple(p for p in (self.out, self.stats_json, self.stats_md, *self.extra_paths) if p is not None)

    @property
    def by_stratum(self) -> dict[str, int]:
        """Records per stratum (empty for episodes)."""
        return dict(self.stats.get("by_stratum", {}))
