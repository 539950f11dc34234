"""What a training launch may take back when the trainer fails: the run directory as it was before."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable


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
