"""Render the definitions ``envsim.envs.shown.code`` collected as one module: merged imports, then definitions in
an order whose statements run (what one needs when it is executed comes first), partial classes with just the
members the call reaches, namespaces for modules of one's own code, then notes and the line naming what runs."""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass, field
from typing import Any

from envsim.envs.shown.names import bound_names, module_source, start_line


@dataclass
class Piece:
    """One top-level definition of the shown module."""

    key: str
    kind: str                       # "import", "def", "partial", "alias", "namespace", "binding"
    module: str
    line: int
    text: str = ""
    needs: set[str] = field(default_factory=set)   # names it needs when it is executed
    cls: type | None = None         # partial classes: the class
    node: ast.ClassDef | None = None
    members: list[str] = field(default_factory=list)
    aliases: dict[str, str] = field(default_factory=dict)   # namespaces: attribute -> the name it is shown as


def piece_text(piece: Piece, shown: dict[str, str]) -> str:
    """The source text of one piece (a partial class: its header, docstring and the members asked for)."""
    if piece.kind == "namespace":
        name = next(n for n, key in shown.items() if key == piece.key)
        names = ", ".join(f"{attr}={piece.aliases[attr]}" for attr in piece.members)
        return f"{name} = types.SimpleNamespace({names})  # module {piece.text}: the names the code uses"
    if piece.kind != "partial":
        return textwrap.dedent(piece.text).rstrip()
    source = module_source(piece.module)
    node = piece.node
    assert source is not None and node is not None
    start = start_line(node)
    header_end = start_line(node.body[0]) if node.body else node.end_lineno
    header = "\n".join(source.lines[start:header_end])
    first = node.body[0] if node.body else None
    has_doc = (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
               and isinstance(first.value.value, str))
    members = [s for s in node.body if set(bound_names(s)) & set(piece.members)]
    body = ([first] if has_doc else []) + members
    parts = [header.rstrip()] if header.strip() else []
    chunks = ["\n".join(source.lines[start_line(s):s.end_lineno]) for s in body]
    if not chunks:
        indent = " " * (node.col_offset + 4)
        chunks = [f"{indent}pass"]
    text = "\n".join(parts) + "\n" + "\n\n".join(chunks)
    return textwrap.dedent(text).rstrip()


def merge_imports(texts: list[str]) -> list[str]:
    """``from m import a`` and ``from m import b`` as one ``from m import a, b`` (names in first-seen order)."""
    merged: dict[str, list[str]] = {}
    lines: list[str] = []
    for text in texts:
        if text.startswith("from "):
            module, _, names = text[len("from "):].partition(" import ")
            if module not in merged:
                merged[module] = []
                lines.append(f"from {module} import ")
            merged[module].append(names)
        else:
            lines.append(text)
    return [line + ", ".join(merged[line[len("from "):-len(" import ")]]) if line.startswith("from ") and
            line.endswith(" import ") else line for line in lines]


def ordered(pieces: list[Piece], shown: dict[str, str], modules: list[str]) -> list[Piece]:
    """Pieces in an order whose definitions run: what one needs at definition time first; otherwise modules
    reached last (the deepest dependencies) first, then source order; attachments after definitions."""
    rank = {m: len(modules) - i for i, m in enumerate(modules)}
    group = {"def": 0, "partial": 0, "alias": 0, "namespace": 0, "binding": 1}
    by_key = {p.key: p for p in pieces}

    def sort_key(p: Piece) -> tuple[Any, ...]:
        return (group[p.kind], rank.get(p.module, 0), p.line, p.key)

    needs = {p.key: {shown[n] for n in p.needs if shown.get(n) in by_key and shown[n] != p.key} for p in pieces}
    done: list[Piece] = []
    placed: set[str] = set()
    remaining = sorted(pieces, key=sort_key)
    while remaining:
        ready = next((p for p in remaining if needs[p.key] <= placed), remaining[0])  # a cycle: source order
        done.append(ready)
        placed.add(ready.key)
        remaining.remove(ready)
    return done


def render_module(pieces: list[Piece], shown: dict[str, str], modules: list[str], tail: list[str]) -> str:
    """The shown module: imports (merged per module), definitions in an order that runs, then the ``tail`` lines
    (notes of what cannot be shown, the line naming what runs)."""
    imports = sorted((p for p in pieces if p.kind == "import"), key=lambda p: (not p.text.startswith("import "),
                                                                               p.text))
    rest = ordered([p for p in pieces if p.kind != "import"], shown, modules)
    blocks = ["\n".join(merge_imports([p.text for p in imports]))] if imports else []
    blocks += [piece_text(p, shown) for p in rest]
    if tail:
        blocks.append("\n".join(tail))
    return "\n\n".join(b for b in blocks if b) + "\n"
