"""Which code an environment id may import: the trust boundary between data and code.

A benchmark file, a chained-episode file or a replay log is *data*. The ``env`` it names may be

* a registered id (built-ins, ``envsim.envs`` entry-point plugins): nothing new is imported;
* a namespaced id of a foreign track EnvSim ships an adapter for (``bfcl/GorillaFileSystem``);
  namespaces register themselves in ``envsim.envs.registry.NAMESPACES`` or the ``envsim.namespaces``
  entry-point group, so validation and lookup read the same table;
* ``module:Class`` only when ``module`` is trusted: built-in environment modules, a module the user
  named on the command line (``--env-module mylib``, ``--env mylib:Library``), one passed to
  ``trust_module`` from Python, or one an installed package lists in the ``envsim.environments``
  entry-point group. A trusted module is that user's own code and runs unsandboxed in the EnvSim process.

``env_refusal`` answers from the id's text alone, so refusing imports nothing.
"""

from __future__ import annotations

from functools import lru_cache
from importlib.metadata import entry_points

#: Modules (and their sub-modules) whose ``module:Class`` targets any file may name: EnvSim's own environments.
BUILTIN_TRUSTED = ("envsim.envs.library",)
#: Installed packages list the modules they trust here: ``mylib = "mylib"`` (the value is a module name).
TRUSTED_ENTRY_POINT_GROUP = "envsim.environments"

_trusted: set[str] = set()


def trust_module(module: str) -> None:
    """Trust ``module`` (and its sub-modules): ``module:Class`` ids naming it may be imported and run unsandboxed.

    This is what ``--env-module`` does; call it only for your own code."""
    name = module.strip()
    if not name or not all(part.isidentifier() for part in name.split(".")):
        raise ValueError(f"--env-module expects a module name like 'mylib' or 'pkg.envs', got {module!r}")
    _trusted.add(name)


def trust_target(target: str) -> None:
    """Trust the module of a ``module:Class`` the user typed on the command line (no-op for other ids)."""
    module, sep, _ = target.partition(":")
    if sep and module:
        trust_module(module)


def forget_trusted() -> None:
    """Drop every module trusted in this process (tests)."""
    _trusted.clear()
    _entry_point_modules.cache_clear()


@lru_cache(maxsize=1)
def _entry_point_modules() -> tuple[str, ...]:
    """Module names installed plugins trust (``envsim.environments`` entry points; metadata only, no import)."""
    return tuple(ep.value.partition(":")[0].strip() for ep in entry_points(group=TRUSTED_ENTRY_POINT_GROUP))


def trusted_modules() -> tuple[str, ...]:
    """Every trusted module: built-ins, entry-point plugins, and those trusted in this process, sorted."""
    return tuple(sorted({*BUILTIN_TRUSTED, *_entry_point_modules(), *_trusted}))


def is_trusted_module(module: str) -> bool:
    """Whether ``module`` is a trusted module or lies inside a trusted package."""
    return any(module == name or module.startswith(name + ".") for name in trusted_modules())


def user_trusted_modules() -> tuple[str, ...]:
    """Modules trusted on the command line or from Python (imported to register their environments)."""
    return tuple(sorted(_trusted | set(_entry_point_modules())))


def env_refusal(env_id: str) -> str | None:
    """Why ``env_id`` would import code nobody trusted, or ``None``; decided from the text alone (imports nothing).

    Only ``module:Class`` ids import a module named by the id; plain and namespaced ids resolve through
    tables EnvSim and installed packages fill (an unknown one is merely unknown)."""
    if ":" not in env_id:
        return None
    module = env_id.partition(":")[0]
    if is_trusted_module(module):
        return None
    return (f"environment {env_id!r} would import module {module!r}, which is not trusted: a benchmark file "
            f"is data and cannot load code; if {module!r} is your own code, trust it with --env-module {module}")
