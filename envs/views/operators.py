"""Pure operator evaluation on concrete values, and the tables of pure methods and builtins the analysis folds."""

from __future__ import annotations

import ast
from typing import Any


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
    return _BINOPS[type(op)](a, b)


def _format(node: ast.FormattedValue, value: Any) -> str:
    """``value`` as an f-string field formats it (conversion and a constant format spec)."""
    value = {115: str, 114: repr, 97: ascii}.get(node.conversion, lambda x: x)(value)
    spec = node.format_spec
    if spec is None:
        return format(value)
    if not all(isinstance(p, ast.Constant) for p in spec.values):
        raise ValueError("computed format spec")
    return format(value, "".join(str(p.value) for p in spec.values))


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
