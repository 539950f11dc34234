"""Bounds on applying a JSON Patch that EnvSim did not write itself: a model's answer
(``evaluation.scoring.scoring.apply_prediction``) or a patch stored in a benchmark file (``benchmark.state_store``:
``state_ref.patch``, a record's ``patch``, a chained episode's step patches).

* **Operations**: at most ``MAX_PATCH_OPS`` per patch.
* **Growth**: values written by ``add`` / ``replace`` / ``test`` come from the patch itself, so their size is
  the patch's own size, already in memory. Only ``copy`` amplifies (copy a subtree into itself 25 times:
  2^25 copies), so the characters every copy of one application adds (canonical JSON) are counted *before*
  the copy is made, and the application stops when

      copied > MAX_GROWTH_CHARS  and  copied > state + MAX_GROWTH_CHARS

  where ``state`` is the canonical-JSON size of the state the patch (or chain of patches) started from:
  the result is at most ``2 x state + MAX_GROWTH_CHARS`` characters plus the patch's own values.
* **Depth**: each value of a patch nests at most ``MAX_DEPTH`` levels (the decoder's bound), but its *path* adds
  levels: 11 ops each adding a 190-deep value at the end of the last one compose a state 2,100 levels deep, which
  every recursive JSON routine then fails on (``RecursionError``). So an op that writes a value (``add``,
  ``replace``, ``copy``, ``move``) is refused when its path's levels plus the value's own nesting pass
  ``MAX_STATE_DEPTH`` (``nesting_problem``), before it is applied.
"""

from __future__ import annotations

from typing import Any, Callable

from envsim.delta import canonical_json, pointer_parts
from envsim.jsonsafe import MAX_DEPTH, too_deep

#: Operations one patch may have (a model's answer; a stored patch of a benchmark file).
MAX_PATCH_OPS = 5_000
#: Characters ``copy`` operations may add beyond the size of the state they start from.
MAX_GROWTH_CHARS = 100_000
#: Deepest nesting of containers a patched state may reach (the root object is level 1): the decoder's bound.
MAX_STATE_DEPTH = MAX_DEPTH

#: Operations that put a value at their ``path``: (op, where the value comes from: ``value`` or ``from``).
_WRITING_OPS = {"add": "value", "replace": "value", "copy": "from", "move": "from"}


class PatchBoundError(ValueError):
    """A patch that would exceed a bound; ``limit`` is the bound in characters."""

    def __init__(self, message: str, limit: int) -> None:
        super().__init__(message)
        self.limit = limit


class CopyBudget:
    """The growth bound of one patch application, or of a chain of patches applied to one starting state.

    ``state_chars`` gives the canonical-JSON size of the starting state; it is called only once the copies
    pass ``MAX_GROWTH_CHARS`` (most patches copy nothing)."""

    def __init__(self, state_chars: Callable[[], int]) -> None:
        self._state_chars = state_chars
        self._known: int | None = None
        self.copied = 0

    @classmethod
    def for_state(cls, state: Any) -> "CopyBudget":
        """A budget whose starting size is ``len(canonical_json(state))``, computed when first needed."""
        return cls(lambda: len(canonical_json(state)))

    def state_chars(self) -> int:
        """Canonical-JSON size of the starting state (computed once)."""
        if self._known is None:
            self._known = self._state_chars()
        return self._known

    def limit(self) -> int:
        """The size the state may reach through copies: ``2 x state + MAX_GROWTH_CHARS`` characters."""
        return 2 * self.state_chars() + MAX_GROWTH_CHARS

    def charge(self, chars: int) -> None:
        """Count a copy of ``chars`` characters; ``PatchBoundError`` when the state would grow past ``limit()``."""
        self.copied += chars
        if self.copied > MAX_GROWTH_CHARS and self.state_chars() + self.copied > self.limit():
            raise PatchBoundError(f"patch grows the state beyond {self.limit()} characters", self.limit())

    def charge_value(self, value: Any) -> None:
        """``charge`` the canonical-JSON size of ``value`` (a ``ValueError`` when it is not JSON)."""
        try:
            chars = len(canonical_json(value))
        except (TypeError, ValueError, RecursionError):
            raise ValueError("copies from an invalid location") from None
        self.charge(chars)


def nesting_problem(op: Any, root: Any) -> str | None:
    """Why applying ``op`` to ``root`` would nest the state deeper than ``MAX_STATE_DEPTH`` (the path's levels plus
    the written value's own nesting), or ``None``. Iterative: never recurses, whatever the depth it meets; an op
    whose ``from`` does not resolve is left to the patch library (it fails there)."""
    if not isinstance(op, dict) or op.get("op") not in _WRITING_OPS or not isinstance(op.get("path"), str):
        return None
    levels = len(pointer_parts(op["path"]))  # containers above the written value: the root and the path's parents
    if _WRITING_OPS[op["op"]] == "value":
        value = op.get("value")
    else:
        value = _resolved(root, op.get("from"))
    if levels > MAX_STATE_DEPTH or too_deep(value, MAX_STATE_DEPTH - levels):
        return (f"nests the state deeper than {MAX_STATE_DEPTH} levels (MAX_STATE_DEPTH: a path of {levels} "
                f"levels holding a value that nests further)")
    return None


def _resolved(root: Any, pointer: Any) -> Any:
    """The value at JSON pointer ``pointer`` in ``root`` (``None`` when it does not resolve), without recursion."""
    if not isinstance(pointer, str):
        return None
    node = root
    for part in pointer_parts(pointer):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node
