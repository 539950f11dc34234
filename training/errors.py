"""Why ``envsim.train_data`` stopped without writing training data (the command line exits 1)."""

from __future__ import annotations


class TrainDataStopped(Exception):
    """The recipe or tokenizer cannot be used, the pool is too small for the recipe, or samples are over
    the cutoff with ``over_cutoff="refuse"``; nothing usable was written."""
