"""``ast.parse`` one at a time in this process.

CPython 3.11's AST builder keeps its recursion depth in state shared between threads: two parses at once (eval
builds views and runs the executor baseline in worker threads) now and then fail with ``SystemError: AST
constructor recursion depth mismatch``. Every parse of code that eval's threads make goes through ``parse``.
"""

from __future__ import annotations

import ast
import threading
from typing import Any

_LOCK = threading.Lock()


def parse(source: str, **kwargs: Any) -> ast.Module:
    """``ast.parse(source, **kwargs)`` under the process-wide lock."""
    with _LOCK:
        return ast.parse(source, **kwargs)
