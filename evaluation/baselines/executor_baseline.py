"""The ``executor`` baseline: answer every sample by running the code the prompt shows on the state it shows.

It reads **only the prompt text** (``evaluation.prompting.shown_prompt``; never the record), builds one Python module
from the shown code, runs the call in the untrusted-code sandbox (``envs.sandbox.runner``, as string classes of
``from_envscaler`` run: the code came from a file) on the shown state or view, and answers the observation
and the patch (``envsim.delta.compute_delta``) it produced. A sample it gets wrong is a *prompt-sufficiency
defect* until shown otherwise (``evaluation.baselines.executor_misses`` names the cause).

How the shown code becomes a module (the conventions a Python reader of the prompt would apply):

* ``mdp`` / ``mdp-view`` tool code: top-level functions whose first parameter is ``self`` (or decorated as
  methods) are methods of one class, everything else (helpers, constants, classes) stays at module level;
  a τ-bench-style tool class (``class X(Tool)`` with a static ``invoke(data, ...)``) is called as
  ``invoke(state, **arguments)``, the state being the dict ``data``;
* module-shaped tool code (``envsim.envs.shown.code``: imports, models, helpers, classes, ending with
  ``# The call runs Class.tool on an object whose public attributes are the state.``) runs as shown; that class,
  made without ``__init__``, gets the state's keys as attributes (code importing pydantic, sqlite3 or a
  third-party package the user's environment imports gets it in the sandbox: ``envs.sandbox.packages``);
  a dict the view's notes say the call counts gets stand-ins up to that number (``executor_stand_ins``); a list
  the notes say is shown in part runs as the list of its shown records, and the patch is mapped back to
  full-state indices (``envs.views.partial_lists``);
* methods-shaped code that also defines ``state_from_json(self, state)`` and ``state_to_json(self)`` (BFCL's
  classes in v2.1: ``envs.adapters.bfcl_shown``) says how the JSON state maps to the object: the tool runs on an
  object set up by the first, and the second gives the next state;
* ``full-class``: the class that defines the called tool is used as it is;
* names the system prompt uses or that any Python reader knows are provided: ``ToolError`` (the prompt's
  rule: ``raise ToolError(msg)`` answers ``{"success": false, "error": msg}``), the ``@tool`` marker, empty
  ``Environment`` / ``Tool`` base classes, the standard-library modules and ``typing`` names. Annotations are
  not evaluated (``from __future__ import annotations``). Any other name must be defined in the shown code;
* arguments are checked against the signature before the code runs, exceptions become
  ``{"success": false, "error": "<Type>: <message>"}`` and changes made before them stay (the sandbox's
  in-process caller, ``envs.sandbox.calling``), as the system prompt says.

``pomdp`` prompts show neither state nor code: the executor refuses them (``POMDP_REFUSAL``).
"""

from __future__ import annotations

import ast
import asyncio
import json
import re
import textwrap
from dataclasses import dataclass, field
from typing import Any

from envsim.envs.adapters.bfcl_shown import DUMP_METHOD, LOAD_METHOD
from envsim.envs.sandbox import Limits
from envsim.evaluation.endpoints.providers import Generation
from envsim.evaluation.prompting.shown_prompt import PromptUnreadable, ShownPrompt, read_prompt

NAME = "executor"
POMDP_REFUSAL = ("the executor baseline cannot run prompt mode pomdp: a pomdp prompt shows neither the state nor "
                 "the code, so there is nothing to execute (use mdp, mdp-view or full-class)")
CLASS_NAME = "EnvsimShownEnvironment"
#: Limits of one executed call (the sandbox's defaults; a test may pass shorter ones).
DEFAULT_LIMITS = Limits()

PRELUDE = '''from __future__ import annotations
import abc, base64, bisect, calendar, collections, copy, dataclasses, datetime, decimal, enum, fractions
import functools, hashlib, heapq, itertools, json, math, operator, random, re, statistics, string, textwrap
import time, uuid, inspect as _envsim_inspect
from collections import Counter, OrderedDict, defaultdict, deque
from dataclasses import dataclass, field
from typing import (Any, Callable, Dict, FrozenSet, Iterable, Iterator, List, Literal, Mapping, Optional,
                    Sequence, Set, Tuple, Type, Union)


class ToolError(Exception):
    """The system prompt's rule: raise ToolError(msg) answers {"success": false, "error": msg}."""


def tool(fn=None, *, write=False):
    """The @tool marker: no behaviour."""
    return fn if fn is not None else (lambda method: method)


class Environment:
    """Base of environment classes: no behaviour a tool uses."""


class Tool:
    """Base of tau-bench-style tool classes: no behaviour a tool uses."""


def _envsim_catch_tool_error(method):
    @functools.wraps(method)
    def call(*args, **kwargs):
        try:
            return method(*args, **kwargs)
        except ToolError as exc:
            return {"success": False, "error": str(exc)}
    return call


def _envsim_invoke_method(tool_class, name):
    invoke = tool_class.invoke
    signature = _envsim_inspect.signature(invoke)
    first, *params = list(signature.parameters.values())

    def call(self, **kwargs):
        data = {k: v for k, v in vars(self).items() if not k.startswith("_")}
        try:
            return invoke(data, **kwargs)
        finally:
            for key in [k for k in vars(self) if not k.startswith("_")]:
                if key not in data:
                    delattr(self, key)
            for key, value in data.items():
                setattr(self, key, value)

    call.__name__ = call.__qualname__ = name
    call.__signature__ = signature.replace(parameters=[
        _envsim_inspect.Parameter("self", _envsim_inspect.Parameter.POSITIONAL_OR_KEYWORD), *params])
    call.__annotations__ = {k: v for k, v in getattr(invoke, "__annotations__", {}).items() if k != first.name}
    return call
'''

#: Appended to a methods-shaped module whose code defines ``state_from_json(self, state)`` and
#: ``state_to_json(self)`` (BFCL's mapping, ``envs.adapters.bfcl_shown``): the object holding the state's keys
#: sets up the object the tool runs on, and takes the state it gives back after the call.
_STATE_MAPPED = '''
def _envsim_state_mapped(method):
    @functools.wraps(method)
    def call(self, **kwargs):
        state = {key: value for key, value in vars(self).items() if not key.startswith("_")}
        mapped = type(self).__new__(type(self))
        mapped.state_from_json(state)
        try:
            return method(mapped, **kwargs)
        except ToolError as exc:
            return {"success": False, "error": str(exc)}
        finally:
            next_state = mapped.state_to_json()
            for key in [key for key in vars(self) if not key.startswith("_")]:
                delattr(self, key)
            for key, value in next_state.items():
                setattr(self, key, value)
    return call
'''

_METHOD_DECORATORS = {"staticmethod", "classmethod", "property", "tool", "cached_property"}


class CodeNotShown(ValueError):
    """The shown code defines no function or class for the called tool (message: what was looked for)."""


@dataclass
class ShownModule:
    """The module built from a prompt's code: its source, the class holding the tool, and how it was found."""

    source: str
    class_name: str
    shape: str                       # "methods", "class", "invoke" or "module"
    called_attributes: set[str] = field(default_factory=set)   # names used as self.NAME(...) in the code
    packages: list[str] = field(default_factory=list)          # optional packages the code imports (pydantic)


#: The last line of a module-shaped tool code (``envsim.envs.shown.code.ENTRY_LINE``): which class's method runs.
ENTRY_PATTERN = re.compile(r"^# The call runs (\w+)\.(\w+) on an object whose public attributes are the state\.$",
                           re.MULTILINE)
#: Appended to a module-shaped code: the tool raising the prompt's ToolError answers {"success": false, ...};
#: an exception class of the code's own that happens to be called ToolError is an ordinary exception.
_MODULE_ENTRY = '''

def _envsim_catch_prompt_tool_error(method, tool_error=_envsim_prompt_tool_error):
    @functools.wraps(method)
    def call(*args, **kwargs):
        try:
            return method(*args, **kwargs)
        except tool_error as exc:
            return {{"success": False, "error": str(exc)}}
    return call


{cls}.{tool} = _envsim_catch_prompt_tool_error(getattr({cls}, {tool!r}))
'''


def _imported_packages(tree: ast.Module) -> list[str]:
    """Packages the code imports that a worker may load before it confines itself (``sqlite3``, ``pydantic`` and
    the third-party packages the user's own environment imports: ``envsim.envs.sandbox.allowed_packages``)."""
    from envsim.envs.sandbox import allowed_packages

    tops = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    tops |= {(n.module or "").split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and not n.level}
    return sorted(tops & set(allowed_packages()))


def _decorator_name(node: ast.expr) -> str:
    target = node.func if isinstance(node, ast.Call) else node
    if isinstance(target, ast.Attribute):
        return target.attr
    return target.id if isinstance(target, ast.Name) else ""


def _is_method(node: ast.stmt) -> bool:
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    if any(_decorator_name(d) in _METHOD_DECORATORS for d in node.decorator_list):
        return True
    first = (node.args.posonlyargs + node.args.args)[:1]
    return bool(first) and first[0].arg in ("self", "cls")


def _segment(lines: list[str], node: ast.stmt) -> str:
    start = min([d.lineno for d in getattr(node, "decorator_list", [])] + [node.lineno]) - 1
    return "\n".join(lines[start:node.end_lineno])


def _self_calls(tree: ast.AST) -> set[str]:
    return {n.func.attr for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
            and isinstance(n.func.value, ast.Name) and n.func.value.id == "self"}


def _defines(node: ast.ClassDef, name: str) -> bool:
    return any(isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == name for item in node.body)


def _invoke_class(classes: list[ast.ClassDef], lines: list[str], tool_name: str) -> ast.ClassDef | None:
    """The τ-bench-style tool class of ``tool_name``: the one whose source names it, else the only one."""
    tools = [c for c in classes if _defines(c, "invoke")]
    named = [c for c in tools if json.dumps(tool_name) in _segment(lines, c)]
    if len(named) == 1:
        return named[0]
    return tools[0] if len(tools) == 1 else None


def build_module(code: str, tool_name: str) -> ShownModule:
    """The module source that runs ``tool_name`` from the shown ``code``; ``CodeNotShown`` when the code does not
    define it, ``SyntaxError`` when it is not Python."""
    from envsim.envs.adapters.untrusted import parse_source

    tree = parse_source(code)
    lines = code.splitlines()
    body = tree.body
    calls = _self_calls(tree)
    entry = ENTRY_PATTERN.search(code)
    if entry is not None and entry[2] == tool_name:
        source = (f"{PRELUDE}\n_envsim_prompt_tool_error = ToolError\n\n\n{code}\n"
                  + _MODULE_ENTRY.format(cls=entry[1], tool=tool_name))
        return ShownModule(source, entry[1], "module", calls, _imported_packages(tree))
    methods = [n for n in body if _is_method(n)]
    method_ids = {id(n) for n in methods}  # a set: a list membership test per statement made this quadratic
    classes = [n for n in body if isinstance(n, ast.ClassDef)]
    rest = "\n\n".join(_segment(lines, n) for n in body if id(n) not in method_ids)
    if any(m.name == tool_name for m in methods):
        members = "\n\n".join(textwrap.indent(_segment(lines, m), "    ") for m in methods)
        wrap = "_envsim_catch_tool_error"
        if {LOAD_METHOD, DUMP_METHOD} <= {m.name for m in methods}:  # the code says how the state maps to it
            rest, wrap = f"{rest}\n\n{_STATE_MAPPED}", "_envsim_state_mapped"
        source = (f"{PRELUDE}\n\n{rest}\n\n\nclass {CLASS_NAME}(Environment):\n{members}\n\n\n"
                  f"{CLASS_NAME}.{tool_name} = {wrap}({CLASS_NAME}.__dict__[{tool_name!r}])\n")
        return ShownModule(source, CLASS_NAME, "methods", calls)
    holder = next((c for c in classes if _defines(c, tool_name)), None)
    if holder is not None:
        prefix = "\n\n".join(_segment(lines, n) for n in body)
        source = (f"{PRELUDE}\n\n{prefix}\n\n\n{holder.name}.{tool_name} = "
                  f"_envsim_catch_tool_error(getattr({holder.name}, {tool_name!r}))\n")
        return ShownModule(source, holder.name, "class", calls)
    invoker = _invoke_class(classes, lines, tool_name)
    if invoker is not None:
        prefix = "\n\n".join(_segment(lines, n) for n in body)
        source = (f"{PRELUDE}\n\n{prefix}\n\n\nclass {CLASS_NAME}(Environment):\n    pass\n\n\n"
                  f"{CLASS_NAME}.{tool_name} = _envsim_catch_tool_error(_envsim_invoke_method({invoker.name}, "
                  f"{tool_name!r}))\n")
        return ShownModule(source, CLASS_NAME, "invoke", calls)
    raise CodeNotShown(f"the shown code defines no method, class method or tool class for the called tool "
                       f"{tool_name!r}")


@dataclass
class Execution:
    """What running a prompt's code gave: ``status`` ``ran`` (with ``observation``, ``next_state``, ``patch``)
    or why it did not run: ``pomdp``, ``unreadable`` (the prompt), ``code_not_shown``, ``not_python``,
    ``sandbox`` (a limit or rule of the sandbox, or the module failed to load: ``detail``)."""

    status: str
    detail: str = ""
    observation: Any = None
    next_state: Any = None
    patch: list[dict[str, Any]] | None = None
    shown: ShownPrompt | None = None
    module: ShownModule | None = None

    def answer(self) -> dict[str, Any]:
        """The answer JSON a model would give, plus what the executor did (``executor``)."""
        return {"observation": self.observation, "patch": self.patch,
                "executor": {"status": self.status, "mode": self.shown.mode if self.shown else None,
                             "shape": self.module.shape if self.module else None}}


def run_shown(shown: ShownPrompt, state: Any = None, limits: Limits | None = None) -> Execution:
    """Run the call of ``shown`` with its code on its state (or on ``state`` when given: the miss analysis
    re-runs the same code on the record's true state). A dict the view's notes say the call counts gets stand-ins
    up to its number of entries (``evaluation.baselines.executor_stand_ins``). Never raises."""
    from envsim.delta import compute_delta
    from envsim.envs.sandbox import SandboxError, run_request
    from envsim.envs.views.partial_lists import compact, full_patch, lists_in_notes
    from envsim.evaluation.baselines import executor_stand_ins as stand_ins

    if shown.mode == "pomdp":
        return Execution("pomdp", POMDP_REFUSAL, shown=shown)
    counts = stand_ins.short_counts(shown.view_notes, shown.state) if state is None else {}
    lists = lists_in_notes(shown.view_notes, shown.state) if state is None else {}
    state = shown.state if state is None else state
    if not isinstance(state, dict):
        return Execution("unreadable", "the shown state is not a JSON object", shown=shown)
    state, mapping = compact(state, lists)  # a list shown in part runs as its shown records (``partial_lists``)
    try:
        module = build_module(shown.code, shown.action["name"])
    except CodeNotShown as exc:
        return Execution("code_not_shown", str(exc), shown=shown)
    except (SyntaxError, ValueError) as exc:
        return Execution("not_python", f"the shown code cannot be read as Python: {str(exc)[:200]}", shown=shown)
    request = {"source": module.source, "class_name": module.class_name, "load": "attrs",
               "tools": [shown.action["name"]], "state": state, "action": shown.action}
    if module.packages:
        request["packages"] = module.packages
    try:
        if counts:
            records = stand_ins.templates(state, counts)
            if len(records) < len(counts):
                records = stand_ins.templates(state, counts, run_request(request, limits or DEFAULT_LIMITS)
                                              ["next_state"])
            state = request["state"] = stand_ins.with_stand_ins(state, counts, records)
        answer = run_request(request, limits or DEFAULT_LIMITS)
    except SandboxError as exc:
        return Execution("sandbox", str(exc), shown=shown, module=module)
    try:
        delta = compute_delta(state, answer["next_state"])
    except ValueError as exc:
        return Execution("sandbox", f"the next state cannot be diffed: {exc}", shown=shown, module=module)
    return Execution("ran", observation=answer["observation"], next_state=answer["next_state"],
                     patch=full_patch(delta.patch, mapping), shown=shown, module=module)


def execute_prompt(messages: list[dict[str, str]], limits: Limits | None = None) -> Execution:
    """Read ``messages`` and run what they show (``run_shown``); never raises."""
    try:
        shown = read_prompt(messages)
    except PromptUnreadable as exc:
        return Execution("unreadable", f"the prompt cannot be read: {exc}")
    return run_shown(shown, limits=limits)


class ExecutorProvider:
    """Baseline: runs the prompt's code on the prompt's state in the sandbox (reads the messages, never the record)."""

    name = NAME

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits  # None: DEFAULT_LIMITS, read at each call

    async def generate(self, messages: list[dict[str, str]], record: dict[str, Any]) -> Generation:
        """The executed answer; a prompt it cannot run is a scored failure whose reason starts with ``executor:``."""
        del record  # the executor answers from the prompt alone
        execution = await asyncio.to_thread(execute_prompt, messages, self.limits)
        if execution.status != "ran":
            return Generation("", problem=f"executor: {execution.status}: {execution.detail}")
        return Generation(json.dumps(execution.answer(), ensure_ascii=False))

    def should_retry(self, exc: BaseException) -> bool:
        """Its errors are not transient."""
        return False
