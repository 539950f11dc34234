"""Which third-party packages a sandbox worker imports before it confines itself.

Shown code runs in a worker that cannot import anything once confined (``worker._RefuseImports``). Besides the
standard-library modules every worker holds (``worker.PREIMPORTED``) and the ones the code may ask for
(``worker.REQUESTABLE``: ``pydantic``; ``sqlite3``, in-memory databases only), a worker imports the third-party
packages **the user's own environment already imports** when the shown code imports them too: the packages the
modules of the trusted environment (``--env-module``, ``--env module:Class``, ``trust_module``) import at their
top level or inside their functions (a logger such as ``loguru``, a YAML or TOML reader), where installed.
Code from a benchmark file alone names nothing new: an id nobody trusted adds no package.

The user decides with ``envsim eval --sandbox-packages`` or ``ENVSIM_SANDBOX_PACKAGES``: ``auto`` (default: the
rule above), ``none`` (no third-party package beyond ``pydantic``), or a comma-separated list (exactly those, where
installed). The packages a run allowed are written to its ``config.json`` (``sandbox_packages``).
"""

from __future__ import annotations

import ast
import contextlib
import functools
import importlib.util
import os
import sys
from typing import Iterator

from envsim import ast_parse
from envsim.envs.sandbox.trust import user_trusted_modules
from envsim.envs.sandbox.worker import FORBIDDEN_MODULES, REQUESTABLE

#: The user's setting: ``auto`` (default), ``none`` or a comma-separated list of packages.
SETTING = "ENVSIM_SANDBOX_PACKAGES"
_GIVEN: list[str] = []   # a setting given for one command (``using_setting``), over the environment variable


def setting_problem(setting: str) -> str | None:
    """Why ``setting`` is not ``auto``, ``none`` or a comma-separated list of package names (``None``: it is)."""
    if setting.strip().lower() in ("auto", "none"):
        return None
    bad = [name.strip() for name in setting.split(",") if not name.strip().isidentifier()]
    return f"not a package name: {bad[0]!r} (give auto, none or names separated by commas)" if bad else None


@contextlib.contextmanager
def using_setting(setting: str | None) -> Iterator[None]:
    """Use ``setting`` (``auto``, ``none`` or a list) instead of ``ENVSIM_SANDBOX_PACKAGES`` while the block runs."""
    if setting is None:
        yield
        return
    _GIVEN.append(setting)
    try:
        yield
    finally:
        _GIVEN.pop()


def allowed_packages() -> tuple[str, ...]:
    """The packages shown code may have a worker import before confinement (``REQUESTABLE`` plus the user's)."""
    setting = (_GIVEN[-1] if _GIVEN else os.environ.get(SETTING) or "auto").strip()
    if setting.lower() == "auto":
        extra = user_environment_packages(user_trusted_modules(), len(sys.modules))
    elif setting.lower() == "none":
        extra = ()
    else:
        extra = tuple(name.strip() for name in setting.split(",") if _importable(name.strip()))
    return tuple(sorted(set(REQUESTABLE) | set(extra)))


@functools.lru_cache(maxsize=64)
def user_environment_packages(trusted: tuple[str, ...], loaded: int = 0) -> tuple[str, ...]:
    """Third-party packages (installed, not the standard library, not EnvSim, not forbidden in a worker) that the
    loaded modules of the user's trusted environment packages import (``loaded``: how many modules are loaded,
    so a module imported later is read)."""
    tops = {name.split(".")[0] for name in trusted}
    found: set[str] = set()
    for name, module in list(sys.modules.items()):
        if name.split(".")[0] not in tops or not str(getattr(module, "__file__", "") or "").endswith(".py"):
            continue
        found |= _imported_tops(module.__file__)
    return tuple(sorted(p for p in found - tops if _third_party(p)))


def _imported_tops(path: str) -> set[str]:
    try:
        with open(path, encoding="utf-8") as handle:
            tree = ast_parse.parse(handle.read())
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return set()
    tops: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            tops |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            tops.add(node.module.split(".")[0])
    return tops


def _third_party(name: str) -> bool:
    if name in sys.stdlib_module_names or name == "envsim" or name in FORBIDDEN_MODULES:
        return False
    return _importable(name)


def _importable(name: str) -> bool:
    if not name.isidentifier() or name in FORBIDDEN_MODULES or name == "envsim":
        return False
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False
