"""Pure operator evaluation on concrete values, and the tables of pure methods and builtins the analysis folds.

Folding is bounded (``MAX_FOLD_SIZE``): an operation that could make a value longer than that (``s * 10**9``,
``s + s`` repeated, ``10**63 ** 63``, ``f"{x:>999999999}"``, ``"%1000000000d" % 1``, ``s.replace("", t)``,
``round(5, -10**7)``) is refused *before* it runs (``FoldTooLarge``, a ``ValueError``: the value is then unknown),
so no fold allocates more than about ``MAX_FOLD_SIZE`` characters; ``fold_size`` measures what a fold made.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from envsim.envs.views.values import MAX_FOLD_SIZE


class FoldTooLarge(ValueError):
    """A fold whose result could pass ``MAX_FOLD_SIZE``: not computed (its value is unknown)."""


#: Bits of an integer a fold may make (about ``MAX_FOLD_SIZE`` decimal digits).
_MAX_FOLD_BITS = MAX_FOLD_SIZE * 3
#: A run of digits in a format string or spec naming a width or precision of ``MAX_FOLD_SIZE`` or more.
_BIG_FIELD = re.compile(r"\d{%d,}" % len(str(MAX_FOLD_SIZE)))


def fold_size(value: Any) -> int:
    """How big a folded value is: characters of a text, elements of a container, decimal digits of an integer
    (about), 1 otherwise."""
    if isinstance(value, (str, bytes, list, tuple, dict, set, frozenset)):
        return len(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value.bit_length() * 3 // 10 + 1
    return 1


def _refuse_wide_format(text: Any) -> None:
    """``FoldTooLarge`` when a format string or spec names a field width or precision of ``MAX_FOLD_SIZE`` or more."""
    if isinstance(text, (str, bytes)) and _BIG_FIELD.search(text if isinstance(text, str) else text.decode("latin-1")):
        raise FoldTooLarge("a format field this wide is not folded")


_PURE_STR_METHODS = {"lower", "upper", "strip", "lstrip", "rstrip", "casefold", "title", "capitalize",
                     "startswith", "endswith", "split", "replace", "join", "format", "isdigit"}
_CASE_FOLDS = {"lower", "upper", "casefold", "strip", "lstrip", "rstrip"}
_PURE_BUILTINS = {"int": int, "float": float, "str": str, "round": round, "abs": abs, "len": len,
                  "bool": bool, "min": min, "max": max, "sorted": sorted, "sum": sum, "tuple": tuple,
                  "list": list, "set": set}
_MUTATORS_NO_READ = {"append", "extend", "add", "insert", "appendleft"}


def _boolop(op: ast.boolop, xs: tuple) -> Any:
    result = xs[0]
    for x in xs[1:]:
        result = (result and x) if isinstance(op, ast.And) else (result or x)
    return result


_BINOPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
           ast.Div: lambda a, b: a / b, ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b,
           ast.Pow: lambda a, b: a ** b if abs(b) < 64 else None}


def _binop(op: ast.operator, a: Any, b: Any) -> Any:
    if isinstance(a, (list, tuple, dict, set)) or isinstance(b, (list, tuple, dict, set)):
        raise TypeError("containers are not folded")
    _check_binop(op, a, b)
    return _BINOPS[type(op)](a, b)


def _check_binop(op: ast.operator, a: Any, b: Any) -> None:
    """``FoldTooLarge`` when ``a <op> b`` could pass ``MAX_FOLD_SIZE`` (checked before it is computed)."""
    text = (str, bytes)
    if isinstance(op, ast.Add) and isinstance(a, text) and isinstance(b, text):
        size = len(a) + len(b)
    elif isinstance(op, ast.Mult) and isinstance(a, text) and isinstance(b, int):
        size = len(a) * max(b, 0)
    elif isinstance(op, ast.Mult) and isinstance(b, text) and isinstance(a, int):
        size = len(b) * max(a, 0)
    elif isinstance(op, ast.Mult) and isinstance(a, int) and isinstance(b, int):
        size = (a.bit_length() + b.bit_length()) * MAX_FOLD_SIZE // _MAX_FOLD_BITS
    elif isinstance(op, ast.Pow) and isinstance(a, int) and isinstance(b, int):
        size = a.bit_length() * max(b, 0) * MAX_FOLD_SIZE // _MAX_FOLD_BITS
    elif isinstance(op, ast.Mod) and isinstance(a, text):
        _refuse_wide_format(a)
        if ("*" if isinstance(a, str) else b"*") in a:  # ``"%*d" % (10**9, 1)``: a width taken from the arguments
            raise FoldTooLarge("a %-format width taken from its arguments is not folded")
        size = len(a) + sum(fold_size(x) for x in (b if isinstance(b, tuple) else (b,)))
    else:
        return
    if size > MAX_FOLD_SIZE:
        raise FoldTooLarge(f"the result could pass {MAX_FOLD_SIZE} (MAX_FOLD_SIZE)")


def check_str_method(base: Any, method: str, args: tuple) -> None:
    """``FoldTooLarge`` when ``base.<method>(*args)`` (a pure ``str`` method) could make a text past
    ``MAX_FOLD_SIZE``: ``replace`` (up to ``len(base) + 1`` insertions), ``join``, ``format`` (and its field
    widths)."""
    if not isinstance(base, str):
        return
    if method == "replace" and len(args) >= 2 and isinstance(args[1], str):
        size = len(base) + (len(base) + 1) * len(args[1])
    elif method == "join" and args and isinstance(args[0], (list, tuple, set, dict, str)):
        size = sum(fold_size(x) for x in args[0]) + len(base) * len(args[0])
    elif method == "format":
        _refuse_wide_format(base)
        size = len(base) + sum(fold_size(x) for x in args)
    else:
        return
    if size > MAX_FOLD_SIZE:
        raise FoldTooLarge(f"the result could pass {MAX_FOLD_SIZE} (MAX_FOLD_SIZE)")


def _round(value: Any, digits: Any = None) -> Any:
    """``round``, refused for a precision whose power of ten would itself be huge (``round(5, -10**7)``)."""
    if isinstance(digits, int) and abs(digits) > 1000:
        raise FoldTooLarge("a rounding precision this large is not folded")
    return round(value) if digits is None else round(value, digits)


_PURE_BUILTINS["round"] = _round


def _format(node: ast.FormattedValue, value: Any) -> str:
    """``value`` as an f-string field formats it (conversion and a constant format spec)."""
    value = {115: str, 114: repr, 97: ascii}.get(node.conversion, lambda x: x)(value)
    spec = node.format_spec
    if spec is None:
        return format(value)
    if not all(isinstance(p, ast.Constant) for p in spec.values):
        raise ValueError("computed format spec")
    text = "".join(str(p.value) for p in spec.values)
    _refuse_wide_format(text)
    return format(value, text)


def _unaryop(op: ast.unaryop, a: Any) -> Any:
    if isinstance(op, ast.Not):
        return not a
    if isinstance(op, ast.USub):
        return -a
    if isinstance(op, ast.UAdd):
        return +a
    return ~a


_CMPOPS = {ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b, ast.Lt: lambda a, b: a < b,
           ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b,
           ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b, ast.Is: lambda a, b: a is b,
           ast.IsNot: lambda a, b: a is not b}


def _cmpop(op: ast.cmpop, a: Any, b: Any) -> Any:
    return _CMPOPS[type(op)](a, b)
