"""``--env-module MODULE``: the user trusts their own environment module for one command (see ``envsim.envs.sandbox.trust``)."""

from __future__ import annotations

import importlib
from typing import Any, Callable

import click


def _trust_modules(ctx: click.Context, param: click.Parameter, modules: tuple[str, ...]) -> tuple[str, ...]:
    """Trust and import every named module now, so a typo stops the command before any work."""
    from envsim.envs.sandbox import trust_module

    for module in modules:
        try:
            trust_module(module)
            importlib.import_module(module)
        except ValueError as exc:
            raise click.BadParameter(str(exc), ctx=ctx, param=param) from None
        except Exception as exc:  # noqa: BLE001 - the user's module fails in its own ways
            raise click.BadParameter(f"cannot import {module!r} ({type(exc).__name__}: {exc}); it must be "
                                     "importable (installed, or on PYTHONPATH)", ctx=ctx, param=param) from None
    return modules


def env_module_option(command: Callable[..., Any]) -> Callable[..., Any]:
    """Add ``--env-module`` (repeatable) to a click command; the value is consumed here, not passed on."""
    return click.option(
        "--env-module", "env_modules", multiple=True, expose_value=False, is_eager=True, callback=_trust_modules,
        help="Trust MODULE (your own code: it runs unsandboxed in this process): records may then name its "
             "environments by id or as MODULE:Class. Benchmark files never import code by themselves. Repeatable.",
    )(command)


def trust_command_line_env(env_id: str) -> None:
    """An ``--env MODULE:Class`` typed on the command line trusts MODULE (the user named it, not a file)."""
    from envsim.envs.sandbox import trust_target

    trust_target(env_id)
