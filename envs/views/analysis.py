"""Static read analysis of a tool's code: which parts of the state a call can read.

The analyser walks the tool function's AST (and the helpers the code defines) with abstract values:

* ``Node(paths)``: the state value at one of these full-state paths (``data``/``self`` is the root,
  ``self.x`` is ``("x",)``);
* ``Known(values)``: concrete candidate values (argument values, literals, module constants, values
  read from the state when a state value is used as a key — references followed record to record);
* ``Seq(elem)`` / ``DictV(items)`` / ``TupleV(items)``: containers built by the code;
* ``UNKNOWN``.

The tool is never run: statements are interpreted abstractly, only pure operations on known argument
values are folded (f-strings, arithmetic, ``str`` methods), and the state is only *read* to follow
references (``users[order["user_id"]]``) and to filter scans (``for u in users.values(): if
u["email"] == email``: only matching records are kept, with a filter note for the rest). The result
is a :class:`ReadNeeds`: subtrees needed whole, containers whose key set is needed, membership
answers and filter notes. ``envsim.envs.views.view`` turns it into a :class:`View`.

Layout: ``values`` (abstract values, needs), ``operators`` (pure folding), and the analyser's jobs as
mixins combined here: ``state`` (state access), ``statements``, ``expressions``, ``calls``.
"""

from __future__ import annotations

import ast
from typing import Any, Iterator

from envsim.ast_parse import parse

from envsim.envs.views.calls import CallsMixin
from envsim.envs.views.expressions import ExpressionsMixin
from envsim.envs.views.state import StateAccessMixin
from envsim.envs.views.statements import StatementsMixin
from envsim.envs.views.values import (  # noqa: F401  (re-exported: importers use envsim.envs.views.analysis)
    MAX_CALL_DEPTH, MAX_KNOWN, MAX_STEPS, MAX_WORK, UNKNOWN, DictV, FilterNote, ItemsOf, Known, Node, Path, ReadNeeds,
    Seq, TupleV, Work, _Budget, _Raised, _Return, known, pointer, set_work,
)

#: Longest tool code the analysis parses (characters), checked before parsing: a syntax tree costs up to ~900 bytes
#: per source byte (12 MB of code peaked at 5.9 GB), so 256 KiB stays near 225 MB at worst. The shipped benchmarks'
#: longest ``code`` is 11,275 characters; ``from_envscaler`` bounds a class source the same way.
MAX_TOOL_SOURCE_CHARS = 256 << 10


class ToolCodeUnreadable(ValueError):
    """A tool's code that Python's parser cannot read: a syntax error, or nesting past the parser's limits."""


def parse_tool_source(source: str) -> ast.Module:
    """``ast.parse(source)``; ``ToolCodeUnreadable`` (with the parser's reason) when the code cannot be parsed,
    including nesting the parser refuses (``too many nested parentheses``, its recursion or stack limit), and
    (before any parsing) code longer than ``MAX_TOOL_SOURCE_CHARS``."""
    if not isinstance(source, str):
        raise ToolCodeUnreadable(f"code is a {type(source).__name__}, not text")
    if len(source) > MAX_TOOL_SOURCE_CHARS:
        raise ToolCodeUnreadable(f"{len(source):,} characters, over the {MAX_TOOL_SOURCE_CHARS:,}-character limit "
                                 "(MAX_TOOL_SOURCE_CHARS) on code the analysis parses")
    try:
        return parse(source)  # one at a time (envsim.ast_parse: eval's worker threads)
    except (SyntaxError, ValueError) as exc:
        raise ToolCodeUnreadable(f"{type(exc).__name__}: {str(exc)[:160]}") from None
    except (RecursionError, MemoryError):  # CPython's parser reports too deep nesting so
        raise ToolCodeUnreadable("nested too deeply for Python's parser") from None


class ReadAnalyzer(StateAccessMixin, StatementsMixin, ExpressionsMixin, CallsMixin):
    """Abstract interpreter of one tool call over one state (read only)."""

    def __init__(self, state: Any, source: str, root_names: tuple[str, ...] = ("self", "data")) -> None:
        self.state = state
        self.needs = ReadNeeds()
        self.root_names = root_names
        self.module = parse_tool_source(source)
        self.functions: dict[str, ast.FunctionDef] = {}
        self.constants: dict[str, Any] = {}
        self._constant_values: dict[str, Any] = {}  # name -> its Known (``known`` of a constant, made once)
        self._collect(self.module.body)
        self.steps = 0
        self.work = Work()
        self.depth = 0
        self._loop_vars: set[str] = set()
        self._pairs: dict[str, str] = {}  # value variable -> key variable of a ``for k, v in d.items()``
        self.written: dict[Path, list] = {}  # state path -> abstract values the call may have written there
        self._derefs: set = set()
        self.handles = self._model_handles()
        self.needs.whole_records = bool(self.handles)

    # -- set-up -------------------------------------------------------------------------------------
    def _collect(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions.setdefault(stmt.name, stmt)
            elif isinstance(stmt, ast.ClassDef):
                self._collect(stmt.body)
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                try:
                    self.constants[stmt.targets[0].id] = ast.literal_eval(stmt.value)
                except (ValueError, SyntaxError, TypeError):
                    pass

    def _model_handles(self) -> set[str]:
        """Attributes of ``self`` that stand for the whole state as an object model: ``db`` in ``self.db.orders``
        when ``orders`` is a top-level key of the state and ``db`` is not (the wrapper rebuilds ``self.db`` from
        the dump)."""
        if not isinstance(self.state, dict):
            return set()
        found: set[str] = set()
        for fn in self.functions.values():
            for sub in ast.walk(fn):
                inner = sub.value if isinstance(sub, ast.Attribute) else None
                if (isinstance(inner, ast.Attribute) and isinstance(inner.value, ast.Name)
                        and inner.value.id in self.root_names and inner.attr not in self.state
                        and inner.attr not in self.functions and sub.attr in self.state):
                    found.add(inner.attr)
        return found

    def entry(self, tool_name: str) -> ast.FunctionDef | None:
        """The function the call runs: the tool's own name, ``invoke`` (τ-bench), or the first one."""
        for name in (tool_name, "invoke"):
            if name in self.functions:
                return self.functions[name]
        return next(iter(self.functions.values()), None)

    def analyse(self, tool_name: str, arguments: dict[str, Any]) -> ReadNeeds:
        """Analyse the call ``tool_name(**arguments)`` and return what it can read."""
        func = self.entry(tool_name)
        if func is None:
            self.needs.widened.append("no function in the tool code: whole state")
            self.needs.full.add(())
            return self.needs
        params = [a.arg for a in func.args.args]
        env: dict[str, Any] = {}
        defaults = dict(zip(params[len(params) - len(func.args.defaults):], func.args.defaults))
        for i, name in enumerate(params):
            if i == 0 and name in self.root_names:
                env[name] = Node(frozenset({()}))
            elif name in arguments:
                env[name] = known(arguments[name])
            elif name in defaults:
                env[name] = self._literal(defaults[name])
            else:
                env[name] = UNKNOWN
        for arg, default in zip(func.args.kwonlyargs, func.args.kw_defaults):
            env[arg.arg] = known(arguments[arg.arg]) if arg.arg in arguments else (
                self._literal(default) if default is not None else UNKNOWN)
        self.work = Work()  # the work and time budget, started now (charged through ``charge`` too: values.py)
        previous = set_work(self.work)
        try:
            self._run_body(func.body, env)
            self.use(env.get("<return>"))  # the observation is the returned value, read whole
        except (_Return, _Raised):
            pass
        except _Budget as spent:
            self.needs.widened.append(spent.reason or f"analysis budget ({MAX_STEPS} steps) spent: whole state")
            self._spent()
        except (RecursionError, MemoryError):  # code that parses but nests past the interpreter's recursion (or
            # a fold the bounds let through that still cannot be held): analysed no further
            self.needs.widened.append("code nested too deeply to analyse: whole state")
            self._spent()
        finally:
            set_work(previous)
        return self.needs

    def _spent(self) -> None:
        """The analysis stopped part-way: whatever it gathered is dropped (it may be large) and the view is the
        whole state (never less than the call can read)."""
        widened = self.needs.widened
        self.needs = ReadNeeds(whole_records=self.needs.whole_records)
        self.needs.widened = widened
        self.needs.full.add(())
        self.written.clear()

    def _literal(self, node: ast.AST) -> Any:
        try:
            return known(ast.literal_eval(node))
        except (ValueError, SyntaxError, TypeError):
            return UNKNOWN


def analyse_reads(state: Any, tool_name: str, arguments: dict[str, Any], tool_source: str) -> ReadNeeds:
    """What the call ``tool_name(**arguments)`` can read from ``state``, by static analysis of ``tool_source``."""
    return ReadAnalyzer(state, tool_source).analyse(tool_name, arguments)


def iter_paths(needs: ReadNeeds) -> Iterator[Path]:
    """Every path the needs name (full subtrees, key sets, membership containers)."""
    yield from needs.full
    yield from needs.keys
    yield from (p for p, _ in needs.absent)
