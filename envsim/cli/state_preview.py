"""A sampled state cut to a length on JSON structure: whole top-level entries, and a line saying what was left out."""

from __future__ import annotations

import json
from typing import Any

PREVIEW_CHARS = 6000


def state_preview(state: Any, limit: int = PREVIEW_CHARS) -> tuple[str, str | None]:
    """``(text, note)``: ``state`` as indented JSON when it fits in ``limit`` characters (``note`` is ``None``);
    otherwise the top-level entries that fit, each whole and in order (a large entry is skipped, later small
    ones still shown), still valid JSON, and a note naming what was left out and how many characters."""
    full = json.dumps(state, indent=2)
    if len(full) <= limit:
        return full, None
    if not isinstance(state, dict):
        return full[:limit], f"… {len(full) - limit:,} more characters (use --full)"
    entries = {key: json.dumps({key: value}, indent=2)[2:-2] for key, value in state.items()}  # '  "key": ...'
    shown: list[str] = []
    used = 4  # "{\n" and "\n}"
    for key, text in entries.items():
        if used + len(text) + 2 <= limit:
            shown.append(key)
            used += len(text) + 2
    text = "{\n" + ",\n".join(entries[key] for key in shown) + "\n}" if shown else "{}"
    left_out = [key for key in entries if key not in shown]
    names = ", ".join(left_out[:8]) + (", …" if len(left_out) > 8 else "")
    note = (f"… {len(left_out)} more {'entry' if len(left_out) == 1 else 'entries'} ({names}), "
            f"{len(full) - len(text):,} more characters (use --full)")
    return text, note
