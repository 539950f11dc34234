"""The one versioned prompt builder, shared by evaluation and training data.

Modes:
* ``mdp`` (default): the full current state, the tool's code ``code(a_t)`` and the action;
* ``pomdp``: the action history only: no state, no code (the ablation);
* ``full-class``: the whole class source instead of the tool's code (as the original benchmark).

Versions (``version=``; the same information in each, answers in the same format):
* ``"1"``: the published prompts (``PROMPT_VERSION``, the default; v1 runs keep it, byte for byte);
* ``"2"``: compact JSON (no spaces after ``,`` and ``:``) in the state, schemas, calls, history and
  the SFT target, and a shorter system prompt with the same rules; about 16% fewer tokens in
  ``mdp`` (``benchmarks/prompt_tokens.py``). Training data and benchmark v2 use it.
* ``"3"``: version 2 plus the ``mdp-view`` mode (only there): the state is replaced by a *view*
  (``envsim.envs.views``: the part of the state the call can read, with full-state paths, and notes on
  what it leaves out); the system prompt adds the view rules. Other modes read as in version 2.
* ``"4"``: version 3 with a system prompt that says how the code's objects map to the JSON state (the object
  the call runs on, named by the last line of module-shaped code; model fields as keys; Enum members as their
  values; new records with every field, defaults included). User messages read as in version 3. The default
  of ``mdp-view`` on benchmark files (your own environments, whose code ``envsim.envs.shown.code`` renders);
  the shipped ``v1`` / ``v2`` keep versions 1 to 3.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal, Sequence

PROMPT_VERSION = "1"
LATEST_PROMPT_VERSION = "2"
#: The first prompt version that defines ``mdp-view``.
VIEW_PROMPT_VERSION = "3"
#: The first prompt version whose system prompt maps the code's objects to the JSON state.
OBJECT_PROMPT_VERSION = "4"
PROMPT_VERSIONS: tuple[str, ...] = ("1", "2", "3", "4")
PromptMode = Literal["mdp", "pomdp", "full-class", "mdp-view"]
PROMPT_MODES: tuple[str, ...] = ("mdp", "pomdp", "full-class", "mdp-view")

SYSTEM_PROMPT = """You are an environment simulator. Given the current state of a tool environment, the \
Python code of a tool and a call of that tool, predict exactly what the call returns (the observation) \
and how it changes the state.

Execution rules of the environment:
- The state is the object's public attributes, shown as JSON; `self.<name>` in the code is state["<name>"].
- `raise ToolError(msg)` makes the observation {"success": false, "error": msg}; any other exception \
makes it {"success": false, "error": "<ExceptionType>: <message>"}; changes made before the raise stay.
- An unknown tool, a missing or unexpected argument, or an argument of the wrong type is rejected before \
the code runs, with an error observation and no change.
- Observations and states are JSON: tuples become lists, dictionary order does not matter.

Answer with one JSON object and nothing else:
{"observation": <the JSON value the tool returns>, "patch": [<RFC 6902 JSON Patch operations that turn \
the current state into the next state>]}
Use an empty patch when nothing changes. Paths are JSON pointers from the state root, e.g. \
"/orders/O-1001/status"; append to a list with "/items/-"."""

# Version 2: the rules of SYSTEM_PROMPT, worded shorter, examples in compact JSON.
SYSTEM_PROMPT_V2 = """You simulate a tool environment. Given its current state, the Python code of a tool and a call \
of that tool, predict exactly what the call returns (the observation) and how it changes the state.
Rules:
- The state is the object's public attributes as JSON; `self.<name>` in the code is state["<name>"].
- `raise ToolError(msg)` gives the observation {"success":false,"error":msg}; any other exception gives \
{"success":false,"error":"<ExceptionType>: <message>"}; changes made before the raise stay.
- An unknown tool, or a missing, unexpected or wrongly typed argument, is rejected before the code runs: \
error observation, no change.
- Observations and states are JSON: tuples become lists; dictionary order does not matter.
Answer with one JSON object and nothing else:
{"observation":<the JSON value the tool returns>,"patch":[<RFC 6902 JSON Patch operations turning the \
current state into the next state>]}
Empty patch when nothing changes. Paths are JSON pointers from the state root, e.g. "/orders/O-1001/status"; \
append to a list with "/items/-"."""

# Version 3 (mdp-view): the version 2 rules plus how to read a view.
SYSTEM_PROMPT_V3_VIEW = SYSTEM_PROMPT_V2 + """
You see a view, not the whole state: the part of the state this call can read, at the same paths as in the \
full state. Notes under it say what the view leaves out (records not shown, what their keys look like), \
which keys do not exist, and which records of a scan match its condition. Parts not shown exist unchanged; \
write the patch with the view's paths (they are full-state paths)."""

# Version 4: how the code's objects map to the JSON state, instead of only `self.<name>` is state["<name>"].
_STATE_RULE_V2 = '- The state is the object\'s public attributes as JSON; `self.<name>` in the code is state["<name>"].\n'
_STATE_RULES_V4 = """- The state is the public attributes, as JSON, of the object the call runs on (tool code shown as a \
module ends with a line naming its class and method); `self.<name>` of that object is state["<name>"].
- Objects the code builds from the state are that JSON: an object's field or attribute is a key of its JSON object \
(`self.db.tickets["T1"].status` is state["tickets"]["T1"]["status"] when `self.db` is built from the state); \
Enum members appear as their values; model and dataclass instances as objects of their fields, a new one with \
every field (defaults included).
"""
assert _STATE_RULE_V2 in SYSTEM_PROMPT_V2
SYSTEM_PROMPT_V4 = SYSTEM_PROMPT_V2.replace(_STATE_RULE_V2, _STATE_RULES_V4)
SYSTEM_PROMPT_V4_VIEW = SYSTEM_PROMPT_V3_VIEW.replace(_STATE_RULE_V2, _STATE_RULES_V4)

_SYSTEM_PROMPTS = {"1": SYSTEM_PROMPT, "2": SYSTEM_PROMPT_V2, "3": SYSTEM_PROMPT_V2, "4": SYSTEM_PROMPT_V4}


def check_version(version: str) -> str:
    """``version`` as a string if it is a known prompt version, else a ``ValueError`` naming the known ones."""
    version = str(version)
    if version not in PROMPT_VERSIONS:
        raise ValueError(f"unknown prompt version {version!r}; choose from {', '.join(PROMPT_VERSIONS)}")
    return version


def default_prompt_version(benchmark: str | None, mode: str | None = None) -> str:
    """The prompt version a benchmark is evaluated with: ``"1"`` for ``v1`` and any other name or
    file (published numbers stay reproducible), the latest for shipped ``v2`` and later; ``mdp-view``
    exists from version 3 on: shipped benchmarks (``v1``, ``v2``, their point releases ``v1.1``, ``v2.1``) get
    ``"3"``, benchmark files (your own environments) ``"4"``, whose system prompt says how the code's objects map
    to the JSON state."""
    name = str(benchmark or "")
    release = re.fullmatch(r"v(\d+)(?:\.\d+)?", name)  # v2, and its point releases (v2.1)
    if mode == "mdp-view":
        return VIEW_PROMPT_VERSION if not name or release else OBJECT_PROMPT_VERSION
    if release and int(release.group(1)) >= 2:
        return LATEST_PROMPT_VERSION
    return PROMPT_VERSION


def system_prompt(version: str = PROMPT_VERSION, mode: str = "mdp") -> str:
    """The system prompt of a prompt version (and mode: ``mdp-view`` adds the view rules)."""
    version = check_version(version)
    if mode == "mdp-view" and int(version) >= int(OBJECT_PROMPT_VERSION):
        return SYSTEM_PROMPT_V4_VIEW
    if mode == "mdp-view" and int(version) >= int(VIEW_PROMPT_VERSION):
        return SYSTEM_PROMPT_V3_VIEW
    return _SYSTEM_PROMPTS[version]


def _dump(value: Any, version: str = PROMPT_VERSION) -> str:
    if version == "1":
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def action_text(action: dict[str, Any], version: str = PROMPT_VERSION) -> str:
    """An action as the prompt shows it: ``tool_name({...arguments...})``."""
    return f"{action['name']}({_dump(action.get('arguments', {}), version)})"


def build_messages(record: dict[str, Any], mode: str = "mdp", *, class_source: str | None = None,
                   history: Sequence[dict[str, Any]] = (), version: str = PROMPT_VERSION,
                   examples: Sequence[tuple[str, str]] = ()) -> list[dict[str, str]]:
    """Chat messages (system, user) asking to simulate ``record['action']``.

    ``record`` needs ``state``, ``action``, ``code`` and ``tools`` (benchmark record fields);
    ``full-class`` needs ``class_source``; ``pomdp`` uses ``history`` (earlier ``action`` /
    ``observation`` pairs of the episode) instead of state and code. ``version`` picks the prompt
    version (``"1"`` by default, see the module docstring). ``examples``: logged calls of the same tool as
    ``(call text, answer text)`` pairs, listed before the call (``logged_calls``; none: the prompt as before).
    """
    if mode not in PROMPT_MODES:
        raise ValueError(f"unknown prompt mode {mode!r}; choose from {', '.join(PROMPT_MODES)}")
    version = check_version(version)
    if mode == "mdp-view" and int(version) < int(VIEW_PROMPT_VERSION):
        raise ValueError(f"prompt mode 'mdp-view' needs prompt version {VIEW_PROMPT_VERSION} or later "
                         f"(asked for {version})")
    tool_schema = next((t for t in record.get("tools", []) if t.get("function", {}).get("name")
                        == record["action"]["name"]), None)
    parts = [f"Environment: {record.get('env', 'unknown')}"]
    if mode == "pomdp":
        parts.append("You cannot see the state or the code. Tools of this environment:\n"
                     + _dump([t.get("function", t) for t in record.get("tools", [])], version))
        if history:
            lines = [f"{i + 1}. {action_text(h['action'], version)} -> {_dump(h['observation'], version)}"
                     for i, h in enumerate(history)]
            parts.append("Earlier calls in this episode:\n" + "\n".join(lines))
        parts.append("Predict the observation; for the patch, use paths you infer from the tools and history.")
    else:
        if mode == "mdp-view":
            parts.append("State view (the part of the state this call can read; paths are full-state paths):\n"
                         + record_view(record, tool_schema).render())
        else:
            parts.append("Current state:\n" + _dump(record["state"], version))
        if mode == "full-class":
            if not class_source:
                raise ValueError("full-class mode needs the class source")
            parts.append("Environment class source:\n```python\n" + class_source.rstrip() + "\n```")
        else:
            parts.append("Tool code:\n```python\n" + record["code"].rstrip() + "\n```")
            if tool_schema is not None:
                parts.append("Tool schema:\n" + _dump(tool_schema.get("function", tool_schema), version))
    if examples:
        from envsim.evaluation.prompting.logged_calls import examples_part

        parts.append(examples_part(examples))
    parts.append("Call:\n" + action_text(record["action"], version))
    return [{"role": "system", "content": system_prompt(version, mode)},
            {"role": "user", "content": "\n\n".join(parts)}]


def view_problem(record: dict[str, Any]) -> str | None:
    """Why ``record`` cannot be prompted in ``mdp-view`` mode (its ``code`` cannot be parsed, so no view can be
    derived from it: a bad record, named at its line before a run), or ``None``."""
    from envsim.envs.views.analysis import ToolCodeUnreadable, parse_tool_source

    code = record.get("code")
    if not isinstance(code, str) or not code:
        return None  # no code: the view is the whole state
    try:
        parse_tool_source(code)
    except ToolCodeUnreadable as exc:
        return f"field 'code' cannot be analysed for --prompt-mode mdp-view ({exc}): no state view can be built"
    return None


def record_view(record: dict[str, Any], tool_schema: dict[str, Any] | None = None) -> Any:
    """The state view (``envsim.envs.views.View``) of a record's call: from its state, action, code and schema,
    widened as construction's verification stored on the record (``view``), so it is the verified view."""
    from envsim.envs.views import compute_view
    from envsim.envs.views.verify import record_rows, record_widening

    action = record["action"]
    return compute_view(record["state"], action["name"], action.get("arguments") or {}, record.get("code") or "",
                        tool_schema, widening=record_widening(record), rows=record_rows(record))


def target_answer(record: dict[str, Any], version: str = PROMPT_VERSION) -> str:
    """The exact answer JSON a perfect simulator gives for ``record`` (the SFT target); compact in version 2."""
    answer = {"observation": record["observation"], "patch": record["patch"]}
    if check_version(version) == "1":
        return json.dumps(answer, ensure_ascii=False)
    return json.dumps(answer, ensure_ascii=False, separators=(",", ":"))
