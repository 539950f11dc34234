"""``code(a_t)`` that is everything the call needs: the tool and, transitively, every name its code uses.

``shown_tool_code(env_class, tool_name)`` renders one module a reader (or the executor baseline) can run:

* **imports** of standard-library and installed modules the shown code uses, as import statements naming just
  those names (``import datetime as _dt``, ``from copy import deepcopy``, ``from pydantic import BaseModel``);
* **classes**: Enums, exception classes and data classes (pydantic models, dataclasses, named tuples) whole,
  with their fields and defaults; the state's class, toolkits and other service classes with the members the
  call reaches (``self.helper(...)``, ``self.toolkit.method(...)``, ``__init__`` when the code builds one);
* **functions**: helpers and decorators (``functools.wraps`` wrappers included) as their source;
* **constants** as the source text of the statement that binds them (never ``repr`` of a value, so sets and
  Enum members read the same whatever ``PYTHONHASHSEED``);
* **how the tool is attached** when it is not defined in a class body (``ShopEnv.add_review =
  _as_tool(ShopToolkit.add_review)`` for ``setattr(ShopEnv, name, _as_tool(...))`` in a loop);
* a last line saying what runs: ``# The call runs Env.tool on an object whose public attributes are the state.``

Names are looked up in the defining module's syntax tree (``envsim.envs.shown.names``). Following is bounded
(``MAX_DEFINITIONS``); a name that cannot be shown (no source, a module of the user's code imported as a
module, a clash of two names, the bound) gives one comment line naming the tool and the name, never an error.
Definitions come in an order that runs: what a definition needs when it is executed (bases, decorators,
defaults, class-body annotations, constant values) comes before it.

EnvSim's runner names (``Environment``, ``ToolError``, ``@tool``) are not shown: the system prompt's rules
define them. Benchmark v1/v2 records keep ``envsim.envs.shown.source.tool_code``; this renderer is for new records
(the user's own environments; any environment class whose source is importable: built-in, τ-bench, own).
"""

from __future__ import annotations

import ast
import builtins
import enum
import functools
import inspect
import sys
from typing import Any, Callable

from envsim import ast_parse
from envsim.envs.shown.refs import Refs, class_level_refs, function_refs, scan
from envsim.envs.shown.render import Piece, render_module
from envsim.envs.shown.source import constant_source, tool_code
from envsim.envs.shown.follow import (ToolSourceNotFound, attribute_classes, delegated_function, owner_class,
                                       running_function)
from envsim.envs.shown.names import (alias_of, always_kept_members, bound_names, class_node, import_text,
                                      imported_module, is_data_class, is_runner_module, is_user_module,
                                      member_statements, module_source, own_members, real_name, statement_text,
                                      top_level_bindings)

__all__ = ["ENTRY_LINE", "MAX_DEFINITIONS", "shown_tool_code"]

#: Definitions (classes, functions, statements) one tool's code may show; past it, a note names what is left.
MAX_DEFINITIONS = 160
#: The last line of a shown module whose call runs on an object holding the state (``.format(cls, tool)``).
ENTRY_LINE = "# The call runs {}.{} on an object whose public attributes are the state."
_BUILTIN_NAMES = frozenset(dir(builtins))
_INIT_MEMBERS = ("__init__", "__post_init__", "__new__")


class _Follower:
    """Collects the definitions one tool's code needs, then renders them as one module."""

    def __init__(self, tool: str, tool_names: set[str]) -> None:
        self.tool = tool
        self.tool_names = tool_names
        self.pieces: dict[str, Piece] = {}
        self.shown: dict[str, str] = {}          # module-level name -> piece key
        self.classes: dict[type, str] = {}       # class -> piece key
        self.modules: list[str] = []             # modules in the order they were first reached
        self.notes: dict[str, str] = {}          # name -> why it is not shown
        self.left_out: list[str] = []            # names past the bound
        self.visited: set[tuple[Any, ...]] = set()
        self.results: dict[tuple[str, str], str | None] = {}   # (module, name) -> the name it is shown under
        self.done: set[tuple[str, str]] = set()
        self.instantiated: set[type] = set()
        self.data_classes: set[type] = set()     # shown with their fields; their plain methods where reached
        self.attr_calls: set[str] = set()
        self.namespaces: dict[str, Any] = {}     # name -> module of the user's code shown as a namespace

    # -- bookkeeping ------------------------------------------------------------------------------
    def note(self, name: str, why: str) -> None:
        self.notes.setdefault(name, why)

    def _module(self, name: str) -> None:
        if name not in self.modules:
            self.modules.append(name)

    def _room(self, name: str) -> bool:
        if len(self.pieces) < MAX_DEFINITIONS:
            return True
        if name not in self.left_out:
            self.left_out.append(name)
        return False

    def _claim(self, name: str, key: str) -> bool:
        """Bind ``name`` to the piece ``key`` in the shown module; ``False`` (noted) when another piece has it."""
        held = self.shown.get(name)
        if held is None:
            self.shown[name] = key
            return True
        if held != key:
            self.note(key.split(":", 1)[1], f"the name {name} is taken ({held.split(':', 1)[1]} is shown)")
            return False
        return True

    # -- names ------------------------------------------------------------------------------------
    def use_name(self, module: str, name: str, scope: dict[str, Any]) -> str | None:
        """Show what ``name`` is bound to in ``module``; returns the name it is shown under (``None``: not shown)."""
        mark = (module, name)
        if mark in self.results:  # followed already (or being followed: a cycle of names)
            return self.results[mark] or (name if mark not in self.done and name in self.shown else None)
        self.results[mark] = None
        try:
            self.results[mark] = self._use_name(module, name, scope)
        except Exception as exc:  # noqa: BLE001 - one line naming the name, never a traceback
            self.note(name, f"{type(exc).__name__}: {exc}")
        self.done.add(mark)
        return self.results[mark]

    def _use_name(self, module: str, name: str, scope: dict[str, Any]) -> str | None:
        bindings = top_level_bindings(module).get(name)
        if not bindings:
            if name in _BUILTIN_NAMES or name not in scope:
                return None
            return self._use_value(module, name, scope[name])
        stmt = bindings[-1]
        source = module_source(module)
        assert source is not None
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            value = scope.get(name)
            if inspect.ismodule(value) and is_user_module(value.__name__):
                return self._use_namespace(name, value, module, stmt.lineno)
            return self._use_import(module, name, stmt)
        if not self._room(name):
            return None
        self._module(module)
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            key = f"def:{module}.{name}"
            if not self._claim(name, key):
                return None
            if key not in self.pieces:
                refs = function_refs(stmt)
                self.pieces[key] = Piece(key, "def", module, stmt.lineno, statement_text(source, stmt),
                                          set(refs.at_definition))
                self._follow_refs(refs, module, scope, context=None)
            return name
        if isinstance(stmt, ast.ClassDef):
            value = scope.get(name)
            if not inspect.isclass(value):
                self.note(name, "the class statement's name is bound to something else at run time")
                return None
            return self.use_class(value)
        # assignments (constants), annotated names, compound statements: their source text
        if not self._claim(name, f"stmt:{module}:{bindings[-1].lineno}"):
            return None
        for one in bindings:
            key = f"stmt:{module}:{one.lineno}"
            if key in self.pieces:
                continue
            refs = Refs()
            targets = set(bound_names(one))
            scan([one], refs, set(), set())
            refs.names -= targets if not isinstance(one, ast.AugAssign) else set()
            self.pieces[key] = Piece(key, "def", module, one.lineno, statement_text(source, one), set(refs.names))
            self._follow_refs(refs, module, scope, context=None)
        return name

    def _use_import(self, module: str, name: str, stmt: ast.Import | ast.ImportFrom) -> str | None:
        alias = alias_of(stmt, name)
        if alias is None:
            return None
        target = imported_module(stmt, alias, module)
        if is_runner_module(target) or (isinstance(stmt, ast.Import) and is_runner_module(alias.name)):
            return None  # EnvSim's own names (Environment, ToolError, tool): the prompt's rules define them
        if isinstance(stmt, ast.ImportFrom) and is_user_module(target):
            shown_as = self.use_name(target, alias.name, vars(sys.modules[target]))
            if shown_as is not None and shown_as != name:
                key = f"alias:{name}"
                if self._claim(name, key) and key not in self.pieces:
                    self.pieces[key] = Piece(key, "alias", module, stmt.lineno, f"{name} = {shown_as}", {shown_as})
            return name if shown_as is not None else None
        text = import_text(stmt, alias, module)
        key = f"import:{text}"
        if not self._claim(name, key):
            return None
        self.pieces.setdefault(key, Piece(key, "import", module, stmt.lineno, text))
        return name

    def _use_namespace(self, name: str, value: Any, module: str, line: int) -> str | None:
        """A module of the environment's own code bound to a name (``import pkg.tools as tools``, ``from pkg import
        tools``): shown as a namespace of the names the code reads through it (``tools = types.SimpleNamespace(
        GetOrder=GetOrder)``), each shown as source."""
        key = f"ns:{name}"
        if not self._claim(name, key):
            return None
        if key not in self.pieces:
            self.pieces[key] = Piece(key, "namespace", module, line, text=value.__name__)
            self.namespaces[name] = value
            if self._claim("types", "import:import types"):
                self.pieces.setdefault("import:import types", Piece("import:import types", "import", module, 0,
                                                                     "import types"))
            else:
                self.note(name, "the name types, which its namespace needs, is taken")
        return name

    def _use_through(self, holder: str, attr: str, scope: dict[str, Any]) -> None:
        """``holder.attr`` where ``holder`` is a module of the environment's own code shown as a namespace."""
        value = scope.get(holder)
        piece = self.pieces.get(f"ns:{holder}")
        if piece is None or self.namespaces.get(holder) is not value:
            return
        shown_as = self.use_name(value.__name__, attr, vars(value))
        if shown_as is not None and attr not in piece.members:
            piece.members.append(attr)
            piece.needs.add(shown_as)
            piece.aliases[attr] = shown_as

    def _use_value(self, module: str, name: str, value: Any) -> str | None:
        """A name the module binds without a statement of its own (``globals()[...] = ...``)."""
        if inspect.isclass(value) and is_user_module(value.__module__) and value.__name__ == name:
            return self.use_class(value)
        if inspect.isfunction(value) and is_user_module(value.__module__) and value.__name__ == name \
                and value.__module__ != module:
            return self.use_name(value.__module__, name, value.__globals__)
        if value is None or isinstance(value, (str, int, float, bool, enum.Enum, tuple, list, dict, set, frozenset)):
            text = constant_source(value)
            try:
                ast_parse.parse(text)
            except SyntaxError:
                self.note(name, "its value has no source statement and cannot be written as Python")
                return None
            key = f"value:{module}.{name}"
            if self._claim(name, key) and key not in self.pieces:
                self.pieces[key] = Piece(key, "def", module, 10**9, f"{name} = {text}")
            return name
        self.note(name, f"no statement of module {module} binds it")
        return None

    # -- classes ----------------------------------------------------------------------------------
    def use_class(self, cls: type, whole: bool | None = None) -> str | None:
        """Show ``cls`` (whole for data classes, else with the members asked for); returns its shown name."""
        if cls in self.classes:
            return cls.__name__
        if not is_user_module(cls.__module__):
            return None
        found = class_node(cls)
        if found is None:
            self.note(cls.__name__, "its class statement cannot be read from source")
            return None
        if not self._room(cls.__name__):
            return None
        source, node = found
        self._module(cls.__module__)
        key = f"class:{cls.__module__}.{cls.__qualname__}"
        if not self._claim(cls.__name__, key):
            return None
        scope = vars(sys.modules[cls.__module__])
        data = is_data_class(cls) if whole is None else False
        whole = bool(whole)
        self.classes[cls] = key
        if whole:
            refs = class_level_refs(node)
            self.pieces[key] = Piece(key, "def", cls.__module__, node.lineno, statement_text(source, node),
                                      set(refs.names), cls=cls)
            self._follow_refs(refs, cls.__module__, scope, context=cls)
            for stmt in node.body:
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    self._follow_refs(function_refs(stmt), cls.__module__, scope, context=cls)
        elif data:  # fields, validators, dunders; plain methods (load/dump helpers) only where the call reaches
            kept = always_kept_members(node)
            stmts = [s for s in node.body if set(bound_names(s)) & set(kept)]
            refs = class_level_refs(node, members=stmts)
            self.pieces[key] = Piece(key, "partial", cls.__module__, node.lineno, needs=set(refs.names), cls=cls,
                                      node=node, members=list(kept))
            self.data_classes.add(cls)
            self._follow_refs(refs, cls.__module__, scope, context=cls)
            for stmt in stmts:
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    self._follow_refs(function_refs(stmt), cls.__module__, scope, context=cls)
        else:
            refs = class_level_refs(node, members=[])
            self.pieces[key] = Piece(key, "partial", cls.__module__, node.lineno, needs=set(refs.names), cls=cls,
                                      node=node)
            self._follow_refs(refs, cls.__module__, scope, context=cls)
        return cls.__name__

    def use_member(self, context: type, name: str) -> None:
        """Show ``context``'s member ``name`` (looked up along its MRO) with what it uses (``self`` is a
        ``context``)."""
        for klass in context.__mro__:
            if name not in vars(klass):
                continue
            if not is_user_module(klass.__module__):
                return
            self._use_member_of(klass, name, context)
            return

    def _use_member_of(self, klass: type, name: str, context: type) -> None:
        mark = ("member", klass, name, context)
        if mark in self.visited:
            return
        self.visited.add(mark)
        if self.use_class(klass) is None:
            return
        if context is not klass:
            self.use_class(context)
        piece = self.pieces[self.classes[klass]]
        if piece.kind != "partial":
            return
        stmts = member_statements(piece.node, name) if piece.node is not None else []
        scope = vars(sys.modules[klass.__module__])
        if stmts:
            if name not in piece.members:
                piece.members.append(name)
            for stmt in stmts:
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    refs = function_refs(stmt)
                    piece.needs |= refs.at_definition
                else:
                    refs = Refs()
                    scan([stmt], refs, set(), set())
                    piece.needs |= refs.names
                self._follow_refs(refs, klass.__module__, scope, context=context)
            return
        if klass in self.data_classes:  # a member its library made (an Enum's __new__, a dataclass's __init__)
            return
        self._use_attached(klass, name, vars(klass)[name], context)

    def _use_attached(self, klass: type, name: str, value: Any, context: type) -> None:
        """A member set on the class after its ``class`` statement: shown as ``Class.name = <expression>``."""
        fn = value.__func__ if isinstance(value, (staticmethod, classmethod)) else value
        expression = self._expression(fn, context)
        if expression is None:
            self.note(f"{klass.__name__}.{name}", "it is attached to the class by code that cannot be shown")
            return
        text = f"{klass.__name__}.{name} = {expression}"
        if isinstance(value, (staticmethod, classmethod)):
            text = f"{klass.__name__}.{name} = {type(value).__name__}({expression})"
        key = f"binding:{klass.__module__}.{klass.__qualname__}.{name}"
        names = {n.id for n in ast.walk(ast_parse.parse(text)) if isinstance(n, ast.Name)}
        self.pieces.setdefault(key, Piece(key, "binding", klass.__module__, 10**9, text, names))

    def _expression(self, value: Any, context: type) -> str | None:
        """Python source for a value a class member is built from: a function or class by the name it is
        reachable under (a ``functools.wraps`` wrapper stored as ``Toolkit.method`` is ``Toolkit.method``), a
        function made by a module-level factory as the factory's call, a plain value as its ``repr``."""
        if value is None or isinstance(value, (str, int, float, bool)):
            return repr(value)
        if not callable(value):
            return None
        claimed = (getattr(value, "__module__", "") or "", getattr(value, "__qualname__", "") or "")
        real = real_name(value)
        for module, qualname in dict.fromkeys([claimed, real]):
            if "<locals>" in qualname or not qualname or not is_user_module(module):
                continue
            parts = qualname.split(".")
            holder: Any = sys.modules.get(module)
            for part in parts:
                holder = getattr(holder, part, None)
            if holder is not value:
                continue
            if len(parts) == 1:
                return self.use_name(module, parts[0], vars(sys.modules[module]))
            outer: Any = sys.modules[module]
            for part in parts[:-1]:
                outer = getattr(outer, part)
            if not inspect.isclass(outer) or self.use_class(outer) is None:
                return None
            self.use_member(outer, parts[-1])
            return qualname
        if "<locals>" in real[1]:
            return self._factory_call(value, context)
        return None

    def _factory_call(self, fn: Any, context: type) -> str | None:
        """``factory(arg, ...)`` for a function made inside a module-level factory, its arguments read back from
        the closure (``_as_tool(ShopToolkit.add_review)`` for ``call`` made by ``_as_tool(method)``)."""
        module, qualname = real_name(fn)
        factory_name = qualname.split(".<locals>")[0]
        if "." in factory_name:
            return None
        stmt = next((s for s in top_level_bindings(module).get(factory_name, ())
                     if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
        if stmt is None:
            return None
        cells = _closure(fn)
        arguments = []
        for param in [*stmt.args.posonlyargs, *stmt.args.args]:
            if param.arg not in cells:
                return None
            expression = self._expression(cells[param.arg], context)
            if expression is None:
                return None
            arguments.append(expression)
        if self.use_name(module, factory_name, fn.__globals__) is None:
            return None
        refs = function_refs(stmt)
        self._follow_refs(refs, module, fn.__globals__, context=context)
        # by-name dispatch: getattr(toolkit, name) with name bound in the closure reads like toolkit.<its value>
        named = [(holder, cells[variable]) for holder, _, variable in refs.lookups
                 if variable in cells and isinstance(cells[variable], str)]
        self._follow_lookups(named, fn.__globals__, context)
        # a registry read by the closure's key: REGISTRY[name] shows the entry the call runs (and how it got there)
        keyed = [(holder, cells[variable]) for holder, _, variable in refs.entries
                 if variable in cells and isinstance(cells[variable], str)]
        self._follow_entries(keyed, fn.__globals__, context)
        return f"{factory_name}({', '.join(arguments)})"

    # -- references -------------------------------------------------------------------------------
    def _follow_lookups(self, lookups: list[tuple[tuple[str, ...] | None, str]], scope: dict[str, Any],
                        context: type | None) -> None:
        """``getattr(receiver, "name")``: the member ``name`` of the receiver's class where it is known (``self``,
        ``self.<attr>`` set to a class instance, a class by name); else ``name`` is a method called on some object
        (shown on the classes the code builds, see ``settle``)."""
        attributes = attribute_classes(context) if context is not None else {}
        for holder, name in lookups:
            self.attr_calls.add(name)
            target: Any = None
            if holder == ("self",):
                target = context
            elif holder is not None and len(holder) == 2 and holder[0] == "self":
                target = attributes.get(holder[1])
            elif holder is not None and len(holder) == 1:
                target = scope.get(holder[0])
            if inspect.isclass(target) and is_user_module(target.__module__) and self.use_class(target) is not None:
                self.use_member(target, name)

    def _follow_entries(self, entries: list[tuple[str, str]], scope: dict[str, Any], context: type | None) -> None:
        """``REGISTRY["name"]`` on a module-level dict: the function or class stored under that key, shown as the
        definition it is (a function registered by a decorator brings the decorator that registers it)."""
        for holder, key in entries:
            registry = scope.get(holder)
            if type(registry) is not dict or key not in registry:
                continue
            value = registry[key]
            if inspect.isclass(value):
                self.use_class(value)
            elif callable(value) and context is not None:
                self._expression(value, context)

    def _follow_refs(self, refs: Refs, module: str, scope: dict[str, Any], context: type | None) -> None:
        for name in sorted(refs.names):
            self.use_name(module, name, scope)
        self.attr_calls |= refs.attr_calls
        self._follow_lookups([(holder, name) for holder, name, _ in refs.lookups if name is not None], scope,
                             context)
        self._follow_entries([(holder, key) for holder, key, _ in refs.entries if key is not None], scope, context)
        for name in sorted(refs.called):
            value = scope.get(name)
            if inspect.isclass(value) and value in self.classes:
                self.instantiated.add(value)
                for member in _INIT_MEMBERS:
                    self.use_member(value, member)
        for holder, attr in sorted(refs.dotted):
            value = scope.get(holder)
            if inspect.ismodule(value):
                self._use_through(holder, attr, scope)
            elif inspect.isclass(value) and value in self.classes and attr in own_members(value):
                self.use_member(value, attr)
        for chain in refs.chains:  # module.Class.method(...): the method of the class reached through modules
            value = scope.get(chain[0])
            for i, part in enumerate(chain[1:-1], start=1):
                if not inspect.ismodule(value):
                    break
                value = getattr(value, part, None)
                if inspect.isclass(value) and value in self.classes and chain[i + 1] in own_members(value):
                    self.use_member(value, chain[i + 1])
        if context is None:  # a function whose first parameter is named self, outside any class (a registry's)
            self.attr_calls |= refs.self_attrs
            return
        for attr in sorted(refs.self_attrs):
            self.use_member(context, attr)
        for attr in sorted(refs.super_calls):
            for base in context.__mro__[1:]:
                if attr in vars(base):
                    self.use_member(base, attr) if is_user_module(base.__module__) else None
                    break
        attributes = attribute_classes(context)
        for chain in refs.chains:
            if chain[0] in ("self", "cls"):
                target = delegated_function(chain, scope, attributes)
                holder = owner_class(target) if target is not None else None
                if holder is not None:
                    self.use_member(holder, target.__name__)

    def settle(self) -> None:
        """Members of the service classes the code builds that it calls on their instances (``kit.lookup()``)."""
        changed = True
        while changed:
            changed = False
            for cls in sorted(self.instantiated | self.data_classes, key=lambda c: c.__qualname__):
                piece = self.pieces[self.classes[cls]]
                for name in sorted(self.attr_calls & own_members(cls)):
                    if piece.kind == "partial" and name not in piece.members:
                        self.use_member(cls, name)
                        changed = True

    # -- rendering --------------------------------------------------------------------------------
    def render(self, entry: str | None) -> str:
        """The shown module: imports, then definitions in an order that runs, attachments, notes, the entry."""
        lines = [f"# {self.tool}: cannot show {name}: {why}" for name, why in sorted(self.notes.items())]
        if self.left_out:
            lines.append(f"# {self.tool}: not shown (over {MAX_DEFINITIONS} definitions): "
                         + ", ".join(self.left_out[:20]) + (" ..." if len(self.left_out) > 20 else ""))
        return render_module(list(self.pieces.values()), self.shown, self.modules, lines + ([entry] if entry else []))


def _state_class(env_class: type) -> type:
    """The class whose instance holds the state: the wrapped class of an adapter, else the environment class."""
    foreign = env_class.__dict__.get("_foreign") or getattr(env_class, "_foreign", None)
    return foreign if inspect.isclass(foreign) and foreign is not object else env_class


def _closure(fn: Any) -> dict[str, Any]:
    """A function's closure cells by variable name (empty cells left out)."""
    cells: dict[str, Any] = {}
    for variable, cell in zip(getattr(fn, "__code__", None).co_freevars, getattr(fn, "__closure__", None) or ()):
        try:
            cells[variable] = cell.cell_contents
        except ValueError:  # an empty cell
            continue
    return cells


def _tool_class_of(method: Callable[..., Any]) -> type | None:
    """The τ-bench-style tool class (``invoke(data, ...)``) a generated tool method calls, from its closure."""
    cells = dict(zip(getattr(getattr(method, "__code__", None), "co_freevars", ()),
                     [c.cell_contents for c in getattr(method, "__closure__", None) or ()]))
    invoke = cells.get("invoke")
    holder = owner_class(invoke) if inspect.isfunction(invoke) else None
    return holder


@functools.lru_cache(maxsize=4096)
def shown_tool_code(env_class: type, tool_name: str) -> str:
    """The code shown for ``tool_name`` of ``env_class``: one runnable module holding the tool and everything its
    code uses (imports, constants as source text, decorators, model classes with their fields and defaults,
    Enums, exception classes, helpers), ending with the line that says what runs (``ENTRY_LINE``).

    Works for any environment class whose code is in importable files: built-in environments, τ-bench through
    its adapter (the tool class with its module's imports; it runs as ``invoke(data, **arguments)``), the user's
    own classes wrapped by ``module:Class``. A class given as a source string (EnvScaler) keeps
    ``envsim.envs.shown.source.tool_code``. Raises ``KeyError`` for a tool the class does not have and
    ``ToolSourceNotFound`` (one line naming the tool) when the tool's own code cannot be found."""
    specs = env_class.tool_specs() if hasattr(env_class, "tool_specs") else {}
    spec = specs.get(tool_name)
    if spec is None:
        raise KeyError(f"{env_class.__name__} has no tool {tool_name!r}")
    follower = _Follower(tool_name, set(specs))
    tool_class = _tool_class_of(spec.method) if env_class.__dict__.get("_envsim_tool_sources") else None
    if tool_class is not None:  # τ-bench: the tool class whole, run as invoke(data, **arguments)
        if follower.use_class(tool_class, whole=True) is None:
            raise ToolSourceNotFound(f"no source found for tool {tool_name!r} of {env_class.__name__}")
        follower.settle()
        return follower.render(None)
    state_class = _state_class(env_class)
    start = running_function(spec.method)
    if start is None or not is_user_module(state_class.__module__) or module_source(state_class.__module__) is None:
        return tool_code(env_class, tool_name)  # source given as a string: the class as written
    if class_node(state_class) is None:
        raise ToolSourceNotFound(f"no source found for tool {tool_name!r} of {env_class.__name__}: the class "
                                 f"statement of {state_class.__qualname__} cannot be read")
    try:
        if follower.use_class(state_class, whole=False) is None:
            raise ToolSourceNotFound(f"no source found for tool {tool_name!r} of {env_class.__name__}")
        follower.use_member(state_class, tool_name)
        follower.settle()
        return follower.render(ENTRY_LINE.format(state_class.__name__, tool_name))
    except (ToolSourceNotFound, RecursionError, MemoryError):
        raise
    except Exception as exc:  # noqa: BLE001 - code this renderer does not understand: the followed functions
        reason = " ".join(f"{type(exc).__name__}: {exc}".split())[:200]
        return f"# {tool_name}: cannot show everything the call needs: {reason}\n" + tool_code(env_class, tool_name)
