"""Typed reasons why ``envsim.evaluate`` stopped before the run (nothing was sent or scored).

The command line maps ``InvalidOption`` to a usage error (exit 2) and every other ``EvalStopped`` to
exit 1. A run that finished but scored too few samples is not an exception: see
``EvalSummary.enough_scored``."""

from __future__ import annotations


class EvalStopped(Exception):
    """The evaluation stopped before the run: nothing was sent to the model, no result was written."""


class InvalidOption(EvalStopped, ValueError):
    """An option's value cannot be used; ``option`` names it as the command line spells it."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(f"{option}: {message}")
        self.option = option
        self.message = message


class BenchmarkUnavailable(EvalStopped):
    """The benchmark (shipped name, split or file) cannot be loaded."""


class MissingRequirement(EvalStopped):
    """A tier (or the prompt mode) needs an extra that is not installed; ``missing`` maps tier -> what to install."""

    def __init__(self, message: str, missing: dict[str, str]) -> None:
        super().__init__(message)
        self.missing = missing


class PreflightStopped(EvalStopped):
    """No endpoint answered the preflight request (or the key/URL check failed)."""


class RunDirUnusable(EvalStopped):
    """The run directory is locked by another process or holds a run with other settings."""


class TokenizerMissing(EvalStopped):
    """The tokenizer that counts the run's tokens cannot be loaded."""
