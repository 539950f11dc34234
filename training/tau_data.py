"""SFT data from τ-bench's *train* tasks, prompted with state views (``envsim train data --track tau``).

The pool is ``construction.tau_track.training_pool``: every ground-truth call of τ-bench's train tasks
(retail; airline ships none) replayed in order from the initial database, labelled on the records it
touches, plus explorer reads and failures on each of those states (``construction.tau_train_explorer``:
the train tasks replay almost only writes, agents mostly read), with the calls identical to a test task's
call dropped (12 in retail). A whole-database prompt
is 0.45–1.2 M tokens, so samples use ``mdp-view`` (prompt version 3): the view of each call, full-state
paths in the target patch. States are stored once under ``<out>/tau_states`` and referenced by the
``tau_sft.records.jsonl`` records (``benchmark.state_store``), as in the shipped track.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from envsim.evaluation.prompting.prompts import VIEW_PROMPT_VERSION, check_version
from envsim.safe_files import write_json

#: Dataset name: ``tau_sft.records.jsonl`` resolves its states from ``tau_states/`` (``state_store.state_folder``).
TAU_DATASET = "tau_sft"
TAU_PROMPT_MODE = "mdp-view"
STRATA = ("failure", "no_change", "simple", "medium", "difficult", "extreme")


def build_tau_sft_data(out_dir: Path, *, prompt_version: str | None = None, cutoff: int = 8192,
                       over_cutoff: str = "drop", tokenizer: Any = None) -> dict[str, Any]:
    """Write the τ-bench training pool as SFT files into ``out_dir`` (see the module docstring); returns stats.

    ``prompt_version`` must define ``mdp-view`` (3 or later; default 3). Raises ``ValueError`` otherwise."""
    from envsim.benchmark.state_store import resolve
    from envsim.construction.tau_track import training_pool
    from envsim.construction.tau_train_explorer import TrainStateCalls
    from envsim.training.data import write_sft_dataset

    version = check_version(prompt_version or VIEW_PROMPT_VERSION)
    if int(version) < int(VIEW_PROMPT_VERSION):
        raise ValueError(f"the tau track is prompted with state views (mdp-view), which need prompt version "
                         f"{VIEW_PROMPT_VERSION} or later, not {version}")
    folder = out_dir / "tau_states"
    records = [resolve(row, folder) for row in training_pool(folder, extra=TrainStateCalls(seed=0))]
    name, tokens = write_sft_dataset(records, out_dir, TAU_DATASET, TAU_PROMPT_MODE, version=version, cutoff=cutoff,
                                     over_cutoff=over_cutoff, tokenizer=tokenizer)
    dropped = set(tokens["dropped_ids"])
    kept = [r for r in records if r["id"] not in dropped]
    stats = {"name": name, "track": "tau", "samples": len(kept), "environments": len({r["env"] for r in kept}),
             "pool": len(records), "prompt_mode": TAU_PROMPT_MODE, "prompt_version": version, "rationales": False,
             "cutoff": cutoff, "dropped_over_cutoff": len(dropped),
             "source": "τ-bench train tasks (ground-truth calls replayed) plus explorer reads and failures on their "
                       "states (construction.tau_train_explorer); calls identical to a test task's dropped",
             "by_source": {k: sum(r["source"].split(":")[0] == k for r in kept) for k in ("task", "explorer")},
             "by_outcome": {o: sum(r["outcome"] == o for r in kept) for o in ("failure", "no_change", "change")},
             "by_env": {env: sum(r["env"] == env for r in kept) for env in sorted({r["env"] for r in kept})},
             "by_stratum": {s: sum(r["stratum"] == s for r in kept) for s in STRATA}, "tokens": tokens}
    write_json(out_dir / "stats.json", stats)
    return stats
