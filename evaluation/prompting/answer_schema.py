"""Structured answers: the JSON Schema of the simulator's answer and the ``response_format`` request field that
asks an endpoint to decode under it (``envsim eval --response-format json-schema``).

Every prompt mode and version (``evaluation/prompting/prompts.py``) asks for the same answer, ``{"observation": <any JSON>,
"patch": [RFC 6902 operations]}``; the schema is built per mode and version so that a prompt asking for another
answer gets its own schema here. It stays small (``{}`` for any JSON value, no ``$ref``; one ``anyOf`` for the
three shapes of a patch operation) so that llama.cpp's json-schema-to-grammar and vLLM's guided decoding accept it.

Grammar-based decoders write an object's properties in the schema's order. ``json-schema`` lists an operation's
``op`` first, as RFC 6902 does; ``json-schema-path-first`` lists ``path`` (and ``from``) before ``op``: the form
of a simulator trained on path-first targets (``patch_key_order`` of a training recipe, ``training/patch_form.py``).
Both admit the same patches.
"""

from __future__ import annotations

from typing import Any

from envsim.evaluation.prompting.prompts import PROMPT_MODES, check_version

#: ``--response-format`` values: ``free`` (no ``response_format`` field, the default), ``json-schema`` and
#: ``json-schema-path-first``.
RESPONSE_FORMATS: tuple[str, ...] = ("free", "json-schema", "json-schema-path-first")
#: The operation key order each structured response format asks for.
_KEY_ORDER = {"json-schema": "op-first", "json-schema-path-first": "path-first"}
PATCH_OPS: tuple[str, ...] = ("add", "remove", "replace", "move", "copy", "test")
#: An operation's keys in ``path-first`` order (the schema's and the SFT targets', ``training/patch_form.py``).
PATH_FIRST_KEYS: tuple[str, ...] = ("path", "from", "op", "value")
SCHEMA_NAME = "simulator_answer"

def _operation(ops: list[str], fields: list[str], key_order: str) -> dict[str, Any]:
    """One shape of RFC 6902 operation: ``op`` among ``ops`` and exactly ``fields`` beside it, all required; ``op``
    listed first (``op-first``) or after the pointers (``path-first``: ``path``, ``from``, ``op``, ``value``)."""
    any_value: dict[str, Any] = {}
    kinds = {"op": {"type": "string", "enum": ops}, "path": {"type": "string"}, "from": {"type": "string"},
             "value": any_value}
    if key_order == "op-first":
        order = ["op", *fields]
    else:
        order = [k for k in PATH_FIRST_KEYS if k == "op" or k in fields]
    return {"type": "object", "properties": {k: kinds[k] for k in order}, "required": order,
            "additionalProperties": False}


def patch_operation(key_order: str = "op-first") -> dict[str, Any]:
    """An RFC 6902 operation, by shape: add/replace/test carry a value, remove only a path, move/copy a from.
    (A schema that only lists the fields lets a decoder write ``add`` without ``value``: seen zero-shot.)"""
    return {"anyOf": [_operation(["add", "replace", "test"], ["path", "value"], key_order),
                      _operation(["remove"], ["path"], key_order),
                      _operation(["move", "copy"], ["from", "path"], key_order)]}


def answer_schema(prompt_mode: str, prompt_version: str, key_order: str = "op-first") -> dict[str, Any]:
    """The JSON Schema of the answer the prompts of ``prompt_mode`` / ``prompt_version`` ask for, each patch
    operation's keys in ``key_order`` (``op-first`` or ``path-first``; a ``ValueError`` for an unknown mode,
    version or order)."""
    if prompt_mode not in PROMPT_MODES:
        raise ValueError(f"unknown prompt mode {prompt_mode!r}; choose from {', '.join(PROMPT_MODES)}")
    check_version(prompt_version)
    if key_order not in _KEY_ORDER.values():
        raise ValueError(f"unknown key order {key_order!r}; choose from {', '.join(_KEY_ORDER.values())}")
    return {
        "type": "object",
        "properties": {"observation": {}, "patch": {"type": "array", "items": patch_operation(key_order)}},
        "required": ["observation", "patch"],
        "additionalProperties": False,
    }


def response_format(kind: str, prompt_mode: str, prompt_version: str) -> dict[str, Any] | None:
    """The chat-completions ``response_format`` field of ``--response-format kind``: ``None`` for ``free``, OpenAI's
    ``{"type": "json_schema", "json_schema": {...}}`` with ``answer_schema`` for ``json-schema`` (operations' keys
    ``op`` first) and ``json-schema-path-first`` (``path`` first).

    ``strict`` is false: OpenAI's strict mode forbids open schemas such as ``{}`` (any observation), which the
    answer needs; llama.cpp and vLLM decode under the schema either way. ``ValueError`` for an unknown kind."""
    if kind == "free":
        return None
    if kind not in _KEY_ORDER:
        raise ValueError(f"unknown response format {kind!r}; choose from {', '.join(RESPONSE_FORMATS)}")
    schema = answer_schema(prompt_mode, prompt_version, _KEY_ORDER[kind])
    return {"type": "json_schema", "json_schema": {"name": SCHEMA_NAME, "strict": False, "schema": schema}}


def request_fields(extra: dict[str, Any], kind: str, prompt_mode: str, prompt_version: str) -> dict[str, Any]:
    """The extra fields of every request: ``extra`` (``--extra``) plus the ``response_format`` of ``kind``."""
    field = response_format(kind, prompt_mode, prompt_version)
    return extra if field is None else {**extra, "response_format": field}
