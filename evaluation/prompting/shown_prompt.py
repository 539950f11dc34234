"""Read a simulator prompt back into what it shows: the mode, the state (or view), the code, the tool's
schema and the call. The inverse of ``evaluation.prompting.prompts.build_messages``, from the message text alone
(every prompt version: version 1 dumps JSON with spaces, versions 2 and 3 compact; the parser reads both).

Used by the ``executor`` baseline, which must answer from exactly what a model is shown."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from envsim.jsonsafe import JSONLimitError, raw_decode

STATE_HEADER = "\n\nCurrent state:\n"
VIEW_HEADER = "\n\nState view (the part of the state this call can read; paths are full-state paths):\n"
VIEW_NOTES_HEADER = "\nWhat the view leaves out or answers:\n"
CODE_HEADERS = {"\n\nTool code:\n```python\n": "tool", "\n\nEnvironment class source:\n```python\n": "class"}
SCHEMA_HEADER = "\n\nTool schema:\n"
CALL_HEADER = "\n\nCall:\n"
POMDP_MARK = "You cannot see the state or the code."


class PromptUnreadable(ValueError):
    """The messages are not a simulator prompt this reader knows (message: what is missing)."""


@dataclass
class ShownPrompt:
    """What one simulator prompt shows: ``mode`` (``mdp``, ``mdp-view``, ``full-class``, ``pomdp``), the
    environment's name, the state or view (``state``; ``view_notes`` for a view), the code (``code_kind``
    ``tool`` or ``class``), the tool's schema when shown, and the call (``action``)."""

    mode: str
    env: str
    action: dict[str, Any]
    state: Any = None
    view_notes: str = ""
    code: str = ""
    code_kind: str = ""
    schema: dict[str, Any] | None = None


def _user_text(messages: Any) -> str:
    if not isinstance(messages, list):
        raise PromptUnreadable("the messages are not a list")
    texts = [m.get("content") for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    if not texts or not isinstance(texts[-1], str):
        raise PromptUnreadable("no user message with text")
    return texts[-1]


def _json_at(text: str, position: int, what: str) -> tuple[Any, int]:
    try:
        return raw_decode(text, position)
    except (ValueError, JSONLimitError, RecursionError) as exc:
        raise PromptUnreadable(f"the {what} is not readable JSON ({str(exc)[:120]})") from None


def _call(text: str, at: int) -> dict[str, Any]:
    body = text[at + len(CALL_HEADER):]
    name, paren, rest = body.partition("(")
    if not paren or not name.strip():
        raise PromptUnreadable("the call is not written as name({...})")
    arguments, end = _json_at(rest, 0, "call's arguments")
    if rest[end:].strip() != ")":
        raise PromptUnreadable("text follows the call's arguments")
    return {"name": name.strip(), "arguments": arguments}


def read_prompt(messages: Any) -> ShownPrompt:
    """What ``messages`` (system + user, as ``build_messages`` writes them) show; ``PromptUnreadable`` otherwise."""
    text = _user_text(messages)
    if not text.startswith("Environment: "):
        raise PromptUnreadable("the user message does not start with 'Environment: '")
    env = text[len("Environment: "):].split("\n", 1)[0]
    call_at = text.rfind(CALL_HEADER)
    if call_at == -1:
        raise PromptUnreadable("no 'Call:' section")
    action = _call(text, call_at)
    if POMDP_MARK in text[:call_at]:
        return ShownPrompt("pomdp", env, action)
    view_at, state_at = text.find(VIEW_HEADER), text.find(STATE_HEADER)
    if view_at != -1 and (state_at == -1 or view_at < state_at):
        mode, start = "mdp-view", view_at + len(VIEW_HEADER)
    elif state_at != -1:
        mode, start = "mdp", state_at + len(STATE_HEADER)
    else:
        raise PromptUnreadable("neither a 'Current state:' nor a 'State view' section")
    state, end = _json_at(text, start, "state" if mode == "mdp" else "state view")
    notes = ""
    if mode == "mdp-view" and text.startswith(VIEW_NOTES_HEADER, end):
        notes_end = text.find("\n\n", end + len(VIEW_NOTES_HEADER))
        notes = text[end + len(VIEW_NOTES_HEADER): notes_end if notes_end != -1 else call_at]
    code, kind, schema = "", "", None
    for header, header_kind in CODE_HEADERS.items():
        code_at = text.find(header, end, call_at)
        if code_at == -1:
            continue
        code_start = code_at + len(header)
        schema_at = text.rfind(SCHEMA_HEADER, code_start, call_at)
        code_end = schema_at if schema_at != -1 else call_at
        block = text[code_start:code_end]
        if not block.endswith("\n```"):
            raise PromptUnreadable("the code block is not closed with ```")
        code, kind = block[: -len("\n```")] + "\n", header_kind
        if schema_at != -1:
            found, _ = _json_at(text, schema_at + len(SCHEMA_HEADER), "tool schema")
            schema = found if isinstance(found, dict) else None
        break
    if kind == "class":
        mode = "full-class"
    return ShownPrompt(mode, env, action, state, notes, code, kind, schema)
