"""EnvScaler-style environments: class source as a string plus an initial config, run sandboxed.

The source is never executed in this process. Tool names, signatures and docstrings are read
from its syntax tree; type hints and defaults are rebuilt only from an allow-list of names
(``str``, ``int``, ``Optional``, ``List``, ``Literal`` ...) and literals, so the schemas come from
the code without running it. Every call runs in a confined sandbox worker (``envsim.envs.sandbox.runner``):
a warm worker per class source, a fresh forked child and a fresh instance per call.

The syntax tree is built in this process, so the source is bounded first (``MAX_SOURCE_BYTES``:
parsing costs up to ~900 bytes of memory per source byte, measured). A source that cannot be read
(too large, not Python, no such class, a default that fails at definition) is an
``EnvironmentSourceError`` naming the reason.
"""

from __future__ import annotations

import ast
import copy
import typing
from typing import Any, Callable, Sequence

from envsim import ast_parse
from envsim.envs.adapters.foreign import load_save_fixed_point
from envsim.envs.base import Environment, ToolSpec
from envsim.envs.schema import SchemaError
from envsim.envs.sandbox import Limits, run_request
from envsim.envs.shown import SOURCE_ATTRIBUTE
from envsim.records import Action

MAX_SOURCE_BYTES = 256 << 10  # parsed here: ~225 MB of syntax tree at worst (``x = [1,1,...]``-style)


class EnvironmentSourceError(ValueError):
    """An untrusted class source EnvSim cannot wrap: too large, not Python, or failing at definition."""


_SAFE_NAMES: dict[str, Any] = {
    "str": str, "int": int, "float": float, "bool": bool, "list": list, "dict": dict, "tuple": tuple,
    "None": None, "Any": typing.Any, "Optional": typing.Optional, "Union": typing.Union, "List": typing.List,
    "Dict": typing.Dict, "Tuple": typing.Tuple, "Literal": typing.Literal,
}


def _safe_annotation(node: ast.expr | None) -> Any:
    """Rebuild a type hint from syntax using only allow-listed names and literals (else ``Any``)."""
    if node is None:
        return typing.Any
    try:
        return _eval_hint(node)
    except (ValueError, TypeError, KeyError):
        return typing.Any


def _eval_hint(node: ast.expr) -> Any:
    if isinstance(node, ast.Constant):
        if node.value is None:
            return None
        if isinstance(node.value, str):  # forward reference "Optional[str]"
            return _eval_hint(ast_parse.parse(node.value, mode="eval").body)
        raise ValueError("constant hint")
    if isinstance(node, ast.Name):
        return _SAFE_NAMES[node.id]
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "typing":
        return _SAFE_NAMES[node.attr]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return typing.Union[_eval_hint(node.left), _eval_hint(node.right)]
    if isinstance(node, ast.Subscript):
        base = _eval_hint(node.value)
        inner = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if base is typing.Literal:
            return typing.Literal[tuple(ast.literal_eval(e) for e in inner)]
        args = tuple(_eval_hint(e) for e in inner)
        return base[args if len(args) > 1 else args[0]]
    raise ValueError("unsupported hint")


def _stub(fn: ast.FunctionDef) -> Callable[..., Any]:
    """A do-nothing function with the same name, signature, hints and docstring as ``fn``."""
    params = [a for a in fn.args.args][1:]  # drop self
    defaults = fn.args.defaults
    first_default = len(params) - len(defaults)
    annotations: dict[str, Any] = {}
    import inspect

    parameters = []
    for i, arg in enumerate(params):
        default = inspect.Parameter.empty
        if i >= first_default:
            try:
                default = ast.literal_eval(defaults[i - first_default])
            except ValueError:  # not a literal (a name, a call): the schema shows no default
                default = None
            except (TypeError, SyntaxError, MemoryError, RecursionError) as exc:  # e.g. {[]: 1}
                raise EnvironmentSourceError(f"the default of {arg.arg!r} in {fn.name}() fails at definition "
                                             f"({type(exc).__name__}: {exc})") from None
        annotations[arg.arg] = _safe_annotation(arg.annotation)
        parameters.append(inspect.Parameter(arg.arg, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default,
                                            annotation=annotations[arg.arg]))

    def stub(self: Any, **kwargs: Any) -> Any:
        raise RuntimeError("untrusted tools run only in the sandbox")

    stub.__name__ = stub.__qualname__ = fn.name
    stub.__doc__ = ast.get_docstring(fn)
    stub.__annotations__ = annotations
    self_param = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    stub.__signature__ = inspect.Signature([self_param, *parameters])  # type: ignore[attr-defined]
    return stub


def parse_source(source: Any) -> ast.Module:
    """The syntax tree of an untrusted class source, bounded in size; ``EnvironmentSourceError`` otherwise."""
    if not isinstance(source, str):
        raise EnvironmentSourceError(f"env_class_code must be a string, got {type(source).__name__}")
    size = len(source.encode("utf-8", errors="surrogatepass"))
    if size > MAX_SOURCE_BYTES:
        raise EnvironmentSourceError(f"the class source is {size} bytes, over the {MAX_SOURCE_BYTES}-byte limit "
                                     "(it is parsed in this process)")
    from envsim.ast_parse import parse

    try:
        return parse(source)  # one at a time: the executor baseline parses in eval's worker threads
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise EnvironmentSourceError(f"the class source is not valid Python ({type(exc).__name__}: {exc})") from None


def _class_node(tree: ast.Module, class_name: str) -> ast.ClassDef:
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            return node
    raise EnvironmentSourceError(f"the source defines no class named {class_name!r}")


class UntrustedEnvironment(Environment):
    """Base of sandboxed adapter classes: every call runs the string source in a child process."""

    _class_name: str = ""
    _loader: str = "attrs"
    _initial_states: Sequence[dict[str, Any]] = ()
    _limits: Limits = Limits()
    _allow_unconfined: bool = False

    @classmethod
    def sample_state(cls, seed: int) -> dict[str, Any]:
        """One of the initial configs given to the adapter (cycled by seed), normalised by load->save."""
        return cls.normalise(cls._initial_states[seed % len(cls._initial_states)])

    @classmethod
    def normalise(cls, state: dict[str, Any]) -> dict[str, Any]:
        """The load->save form of a configuration, computed in the sandbox (what a call's ``next_state``
        looks like: the constructor's defaults and renames are no changes any tool made); raises
        ``StateError`` when a second load->save changes it."""
        return load_save_fixed_point(cls.env_id(), lambda given: cls._sandboxed(given, None)[1], state)

    @classmethod
    def run_call(cls, state: dict[str, Any], action: Any) -> tuple[Any, dict[str, Any]]:
        """Execute the call in the class's confined worker; raises ``SandboxError`` when a limit or rule is hit."""
        return cls._sandboxed(state, Action.from_json(action).to_json())

    @classmethod
    def _sandboxed(cls, state: dict[str, Any], action: dict[str, Any] | None) -> tuple[Any, dict[str, Any]]:
        """``(observation, next_state)`` from the confined worker; ``action`` ``None`` runs load->save only."""
        answer = run_request({
            "source": cls.__dict__[SOURCE_ATTRIBUTE] if SOURCE_ATTRIBUTE in cls.__dict__ else getattr(cls, SOURCE_ATTRIBUTE),
            "class_name": cls._class_name, "load": cls._loader, "tools": list(cls.tool_specs()),
            "state": state, "action": action,
        }, cls._limits, allow_unconfined=cls._allow_unconfined)
        return answer["observation"], answer["next_state"]

    def load_state(self, state: dict[str, Any]) -> None:
        """Keep the state as data: nothing of the untrusted class is instantiated here."""
        self._state = copy.deepcopy(state)

    def get_state(self) -> dict[str, Any]:
        """The state last loaded."""
        return copy.deepcopy(self._state)


def from_envscaler(metadata: dict[str, Any], *, limits: Limits = Limits(), domain: str = "envscaler",
                   write_tools: Sequence[str] | None = None, allow_unconfined: bool = False) -> type[Environment]:
    """Wrap EnvScaler-style metadata: ``{"env_class_name", "env_class_code", "init_config"}``.

    ``init_config`` (a dict, or a list of dicts) gives the initial states. The constructor is
    called as ``Class(config)`` when it takes one argument, else the config keys are set as
    attributes. Tools are the public methods of the class. Calls are refused where a confinement
    layer is unavailable, unless ``allow_unconfined`` (or ``ENVSIM_ALLOW_UNCONFINED_SANDBOX=1``).
    """
    source = metadata["env_class_code"]
    tree = parse_source(source)
    class_name = metadata.get("env_class_name") or _first_class_name(tree)
    node = _class_node(tree, class_name)
    methods = [n for n in node.body if isinstance(n, ast.FunctionDef)]
    init = next((m for m in methods if m.name == "__init__"), None)
    loader = "init" if init is not None and len(init.args.args) == 2 else "attrs"
    tools = [m for m in methods if not m.name.startswith("_")]
    configs = metadata.get("init_config") or [{}]
    if isinstance(configs, dict):
        configs = [configs]
    writes = set(write_tools) if write_tools is not None else {m.name for m in tools}
    try:
        stubs = {m.name: _stub(m) for m in tools}
    except EnvironmentSourceError:
        raise
    except (TypeError, ValueError) as exc:  # e.g. a signature inspect refuses
        raise EnvironmentSourceError(f"a tool signature of {class_name} cannot be read ({type(exc).__name__}: {exc})") from None
    namespace: dict[str, Any] = {
        "__module__": "envsim_untrusted",
        "__doc__": ast.get_docstring(node) or f"EnvScaler environment {class_name}.",
        "name": metadata.get("env_name") or class_name.lower(),
        "domain": metadata.get("domain", domain),
        "_class_name": class_name, "_loader": loader, "_initial_states": tuple(configs), "_limits": limits,
        "_allow_unconfined": allow_unconfined,
        SOURCE_ATTRIBUTE: source,
    }
    cls = type(class_name, (UntrustedEnvironment,), namespace)
    cls._envsim_tool_specs = {  # type: ignore[attr-defined]
        name: ToolSpec(name=name, method=stub, write=name in writes, strict=False) for name, stub in stubs.items()
    }
    try:
        cls.tool_schemas()  # derived now: a signature no schema can describe is the source's error
    except (SchemaError, TypeError, ValueError) as exc:
        raise EnvironmentSourceError(f"the tools of {class_name} have no JSON schema ({type(exc).__name__}: {exc})") from None
    return cls


def _first_class_name(tree: ast.Module) -> str:
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            return node.name
    raise EnvironmentSourceError("the source defines no class")
