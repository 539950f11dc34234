"""Reading the state: resolving paths, marking used values, subscripts and iteration."""

from __future__ import annotations

import ast
import itertools
from typing import Any

from envsim.envs.views.partial_lists import is_record_list
from envsim.envs.views.values import UNKNOWN, DictV, ItemsOf, Known, Node, Path, Seq, TupleV, _union, known


class StateAccessMixin:
    """Reading the state for :class:`~envsim.envs.views.analysis.ReadAnalyzer`."""

    # -- state access -------------------------------------------------------------------------------
    def at(self, path: Path) -> Any:
        """The state value at ``path`` (``KeyError``/``IndexError``/``TypeError`` when absent); one unit of work."""
        self.work.charge(1)
        value = self.state
        for key in path:
            value = value[key]
        return value

    def _state_position(self, parent: Path) -> Any:
        """A sort key putting keys (or list indices) of the container at ``parent`` in the state's own order, so
        a view lists matched records the same way in every process (never in set order)."""
        try:
            container = self.at(parent)
        except (KeyError, IndexError, TypeError):
            container = None
        self.work.charge(len(container) if isinstance(container, dict) else 1)
        position = {key: i for i, key in enumerate(container)} if isinstance(container, dict) else {}
        return lambda key: (position.get(key, len(position)), str(type(key)), str(key))

    def use(self, value: Any) -> None:
        """``value`` is read whole: its state nodes are needed as full subtrees."""
        if isinstance(value, Node):
            self.work.charge(len(value.paths))
            self.needs.full.update(value.paths)
        elif isinstance(value, Seq):
            self.use(value.elem)
        elif isinstance(value, (DictV, TupleV)):
            for item in value.items:
                self.use(item[1] if isinstance(value, DictV) else item)
        elif isinstance(value, ItemsOf):
            self.use(value.node)

    def deref(self, value: Any) -> Any:
        """``value`` as concrete candidates: state nodes are read (and needed) to follow references."""
        if isinstance(value, Known):
            return value
        if isinstance(value, Node):
            self.use(value)
            out = []
            for p in value.paths:
                try:
                    out.append(self.at(p))
                except (KeyError, IndexError, TypeError):
                    pass
                for written in self.written.get(p, ()):  # values the call may have written there before
                    if p in self._derefs:  # a write that refers back to itself: not followed
                        return UNKNOWN
                    self._derefs.add(p)
                    try:
                        later = self.deref(written)
                    finally:
                        self._derefs.discard(p)
                    if not isinstance(later, Known):
                        return UNKNOWN
                    out.extend(later.values)
            return known(*out)
        return UNKNOWN

    def write(self, target: Any, key: Any, value: Any) -> None:
        """``target[key] = value`` on the state: later reads of that path may see ``value`` too (writes add
        candidates, never remove them: branches are not told apart)."""
        if not (isinstance(target, Node) and isinstance(key, Known)):
            return
        self.work.charge(len(target.paths) * len(key.values))
        for p in target.paths:
            for k in key.values:
                if isinstance(k, (str, int, bool)):
                    self.written.setdefault(p + (k,), []).append(value)

    def _write_target(self, target: ast.expr, value: Any, env: dict[str, Any]) -> None:
        """Record a write through a subscript (``x[k] = v``) or a state attribute (``self.x = v``)."""
        if isinstance(target, ast.Subscript):
            self.write(self.eval(target.value, env), self._index_value(target.slice, env), value)
        elif (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
              and target.value.id in self.root_names):
            self.write(self.eval(target.value, env), Known((target.attr,)), value)
        elif isinstance(target, ast.Attribute):  # ``order.status = ...`` on a record of the dumped model
            base = self.eval(target.value, env)
            if isinstance(base, Node):
                self.needs.reach.update(base.paths)
                self.write(base, Known((target.attr,)), value)

    def _reached_key(self, path: Path, value: Any) -> None:
        """A key the code looks up is present in the view even when its value is not read (``products =
        data["products"]`` on a path that returns early): a dict as a container (maybe empty), a scalar whole."""
        if isinstance(value, dict):
            self.needs.reach.add(path)
        elif not isinstance(value, list):
            self.needs.full.add(path)

    def children(self, node: Node, whole_lists: bool = False) -> Node:
        """All children of the containers at ``node`` (their key sets are needed). A top-level list of records that
        object-model code scans is shown in part (``partial_lists``) unless ``whole_lists`` (its length is read)."""
        out = set()
        for p in node.paths:
            try:
                container = self.at(p)
            except (KeyError, IndexError, TypeError):
                continue
            self.needs.keys.add(p)
            self.work.charge(len(container) if isinstance(container, (dict, list)) else 1)
            if isinstance(container, dict):
                out.update(p + (k,) for k in container)
            elif isinstance(container, list):
                if (not whole_lists and self.needs.whole_records and len(p) == 1 and p not in self.needs.full
                        and is_record_list(container)):
                    self.needs.lists.add(p)  # a scan: the records it keeps are shown, the list in part
                else:
                    self.needs.full.add(p)  # lists are shown whole
                out.update(p + (i,) for i in range(len(container)))
        return Node(frozenset(out))

    def size(self, node: Node) -> Any:
        """``len(node)`` of state dicts, as known numbers, when the code reaches the state through an object model
        (``len(self.db.reviews)``): the call then reads how many entries there are, not their keys or records, and
        the view shows the dict (maybe empty) with how many entries it leaves out. ``None`` (the caller reads the
        key set instead) for code over plain dicts (built-in views stay as they are), lists (shown whole), paths
        that are not dicts and dicts the call may have added a key to."""
        if not self.needs.whole_records or not node.paths:
            return None
        counts = []
        for p in node.paths:
            try:
                container = self.at(p)
            except (KeyError, IndexError, TypeError):
                return None
            self.work.charge(len(self.written))
            if not isinstance(container, dict) or any(
                    len(w) == len(p) + 1 and w[:len(p)] == p and w[-1] not in container for w in self.written):
                return None
            counts.append(len(container))
        self.needs.sizes.update(node.paths)
        self.needs.reach.update(node.paths)
        return known(*counts)

    def subscript(self, base: Any, key: Any, *, default: Any = None, membership: bool = False) -> Any:
        """``base[key]`` (``base.get(key, default)`` when ``default`` is given)."""
        if isinstance(key, Node):
            key = self.deref(key)
        if isinstance(base, Node):
            if not isinstance(key, Known):
                return self.children(base)
            out = set()
            for p in base.paths:
                try:
                    container = self.at(p)
                except (KeyError, IndexError, TypeError):
                    continue
                for k in key.values:
                    if isinstance(container, dict):
                        if isinstance(k, (str, int, float, bool)) and k in container:
                            out.add(p + (k,))
                            self._reached_key(p + (k,), container[k])
                        elif isinstance(k, (str, int, float, bool)) or k is None:
                            self.needs.absent.add((p, k))
                    elif isinstance(container, list):
                        self.needs.full.add(p)
                        if isinstance(k, int) and -len(container) <= k < len(container):
                            out.add(p + (k % len(container),))
                    elif isinstance(container, str):
                        self.needs.full.add(p)
            result: Any = Node(frozenset(out))
            if default is not None:
                result = _union(result, default) if out else default
            return result
        if isinstance(base, DictV) and isinstance(key, Known):
            items = dict((k, v) for k, v in base.items)
            vals = [items[k] for k in key.values if isinstance(k, (str, int)) and k in items]
            result = None
            for v in vals:
                result = _union(result, v)
            return result if result is not None else (default or UNKNOWN)
        if isinstance(base, Seq):
            return base.elem
        if isinstance(base, TupleV):
            if isinstance(key, Known) and all(isinstance(k, int) for k in key.values):
                result = None
                for k in key.values:
                    if -len(base.items) <= k < len(base.items):
                        result = _union(result, base.items[k])
                return result if result is not None else UNKNOWN
            result = None
            for item in base.items:
                result = _union(result, item)
            return result or UNKNOWN
        if isinstance(base, Known) and isinstance(key, Known):
            out_vals = []
            for b, k in itertools.product(base.values, key.values):
                try:
                    if isinstance(k, slice):
                        out_vals.append(b[k])
                    elif isinstance(b, dict):
                        if k in b:
                            out_vals.append(b[k])
                        elif default is not None and isinstance(default, Known):
                            out_vals.extend(default.values)
                    else:
                        out_vals.append(b[k])
                except (KeyError, IndexError, TypeError):
                    continue
            return known(*out_vals)
        if isinstance(base, Known) and not isinstance(key, Known):
            elems = []
            for b in base.values:
                self.work.charge(len(b) if isinstance(b, (dict, list, tuple)) else 1)
                if isinstance(b, dict):
                    elems.extend(b.values())
                elif isinstance(b, (list, tuple)):
                    elems.extend(b)
                else:
                    return UNKNOWN
            return known(*elems)
        return UNKNOWN

    def iterate(self, value: Any) -> Any:
        """The abstract element of iterating over ``value``."""
        if isinstance(value, Node):
            return self.children(value)
        if isinstance(value, ItemsOf):
            kids = self.children(value.node)
            return TupleV((known(*(p[-1] for p in kids.paths)), kids))
        if isinstance(value, Seq):
            return value.elem
        if isinstance(value, Known):
            elems = []
            for v in value.values:
                self.work.charge(len(v) if isinstance(v, (dict, list, tuple, set, str)) else 1)
                if isinstance(v, dict):
                    elems.extend(v.keys())
                elif isinstance(v, (list, tuple, set, str)):
                    elems.extend(v)
                else:
                    return UNKNOWN
            return known(*elems)
        if isinstance(value, DictV):
            return known(*(k for k, _ in value.items))
        if isinstance(value, TupleV):
            result = None
            for item in value.items:
                result = _union(result, item)
            return result or UNKNOWN
        return UNKNOWN
