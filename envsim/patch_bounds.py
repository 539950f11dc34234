"""Bounds on applying a JSON Patch that EnvSim did not write itself: a model's answer
(``evaluation.scoring.apply_prediction``) or a patch stored in a benchmark file (``benchmark.state_store``:
``state_ref.patch``, a record's ``patch``, a chained episode's step patches).

* **Operations**: at most ``MAX_PATCH_OPS`` per patch.
* **Growth**: values written by ``add`` / ``replace`` / ``test`` come from the patch itself, so their size is
  the patch's own size, already in memory. Only ``copy`` amplifies (copy a subtree into itself 25 times:
  2^25 copies), so the characters every copy of one application adds (canonical JSON) are counted *before*
  the copy is made, and the application stops when

      copied > MAX_GROWTH_CHARS  and  copied > state + MAX_GROWTH_CHARS

  where ``state`` is the canonical-JSON size of the state the patch (or chain of patches) started from:
  the result is at most ``2 x state + MAX_GROWTH_CHARS`` characters plus the patch's own values.
"""

from __future__ import annotations

from typing import Any, Callable

from envsim.delta import canonical_json

#: Operations one patch may have (a model's answer; a stored patch of a benchmark file).
MAX_PATCH_OPS = 5_000
#: Characters ``copy`` operations may add beyond the size of the state they start from.
MAX_GROWTH_CHARS = 100_000


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
