"""Typed reasons why ``envsim.construct`` stopped without writing its output.

The command line maps ``InvalidConstructOption`` to a usage error (exit 2), ``ConstructInterrupted`` (Ctrl-C) to
exit 130 and every other ``ConstructStopped`` to exit 1."""

from __future__ import annotations


class ConstructStopped(Exception):
    """Construction stopped before writing the output file (unknown environment, too small a pool, ...)."""


class InvalidConstructOption(ConstructStopped, ValueError):
    """An option's value cannot be used; ``option`` names it as the command line spells it."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(f"{option}: {message}" if option else message)
        self.option = option
        self.message = message


class ToolCodeMissing(ConstructStopped):
    """A tool ran but its source (``code(a_t)``) cannot be found: no record may show code that is not the tool's."""


class ConstructInterrupted(ConstructStopped):
    """Construction stopped by Ctrl-C; the message says what was kept and how to resume."""
