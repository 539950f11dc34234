"""Text from outside (an endpoint's error message, a record's id, a server's log) made safe to show on a terminal or
to write into a Markdown file.

A terminal acts on control characters: ``ESC ] 0 ; ... BEL`` sets the window title, ``ESC [ 2 J`` clears the
screen, a bare ``\\r`` returns to the start of the line so that what follows overwrites what was printed, C1
controls (U+0080-U+009F, e.g. U+009B, the one-byte CSI) do the same as their ESC forms on some terminals, and
the bidirectional overrides (U+202A-U+202E, U+2066-U+2069) reorder what is shown. Each of them is written here
as a visible escape (``\\x1b``, ``\\r``, ``\\x9b``, ``\\u202e``), the way Python's ``repr`` writes it; every
other character is kept. A line feed is kept where the text is a whole block of lines (``keep_newlines``) and
escaped in one value that must stay on its line (a reason, a detail)."""

from __future__ import annotations

import re

#: C0 controls but tab and line feed, DEL, C1 controls, and the bidirectional marks and overrides.
_CONTROLS = "\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_IN_BLOCK = re.compile(f"[{_CONTROLS}]")
_IN_VALUE = re.compile(f"[{_CONTROLS}\n]")
_NAMED = {"\r": "\\r", "\n": "\\n", "\x0b": "\\x0b", "\x0c": "\\x0c"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_controls(text: object, keep_newlines: bool = False) -> str:
    """``text`` (any object: its ``str``) with every control character a terminal or a Markdown viewer acts on
    written as a visible escape; line feeds kept when ``keep_newlines`` (a block of lines), else escaped too."""
    value = text if isinstance(text, str) else str(text)
    pattern = _IN_BLOCK if keep_newlines else _IN_VALUE
    if pattern.search(value) is None:
        return value
    return pattern.sub(_escape, value)


def escape_lines(text: object) -> str:
    """``escape_controls`` of a block of lines (line feeds kept): a console message, a Markdown file."""
    return escape_controls(text, keep_newlines=True)
