"""Tool return values as JSON: the one rule every tool's return value goes through.

A tool may return what its toolkit returns. Its observation is that value as JSON, by the rule pydantic's
``model_dump(mode="json")`` applies:

* a pydantic model: ``model.model_dump(mode="json")`` (its fields by their serialisers: dates as ISO text,
  Enums as their values, ``Decimal`` fields as text, nested models as objects);
* a dataclass instance: an object of its fields, each converted by this rule;
* an Enum member: its ``value``, converted by this rule;
* ``datetime``, ``date``, ``time``: ISO 8601 text (``isoformat()``; a UTC offset of zero written ``Z``, as pydantic
  writes it); a ``UUID``: its text;
* dicts, lists, tuples and sets as the state codec writes them (tuples as lists, sets as sorted lists), and
  numbers of other types (``Decimal``, ``Fraction``, numpy and mpmath scalars) returned bare as floats, as before.

Anything else (a ``timedelta``, an arbitrary object) has no JSON form: ``ReturnValueError`` names the path and
the type, and the call is labelled a failure with the state it was given (``calling.call_in_process``): never
a state change with an error for an answer. An object's ``str``/``repr`` is never called.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import enum
import uuid
from typing import Any

#: The error observation of a call whose return value has no JSON form starts with this name.
RETURN_ERROR = "ReturnValueError"


class ReturnValueError(TypeError):
    """A tool's return value with no JSON form by the documented rule (the message names the path and type)."""


def _is_pydantic_model(value: Any) -> bool:
    return any(f"{k.__module__}.{k.__qualname__}" == "pydantic.main.BaseModel" for k in type(value).__mro__)


def _iso(value: _dt.date | _dt.time) -> str:
    text = value.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def json_form(value: Any, path: str = "") -> tuple[bool, Any]:
    """``(True, plain value)`` for an object the rule converts (its parts may still need converting), else
    ``(False, None)``. Raises ``ReturnValueError`` when a model's own serialiser fails."""
    if isinstance(value, enum.Enum):
        return True, value.value
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return True, _iso(value)
    if isinstance(value, uuid.UUID):
        return True, str(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return True, {field.name: getattr(value, field.name) for field in dataclasses.fields(value)}
    if _is_pydantic_model(value):
        try:
            return True, value.model_dump(mode="json")
        except Exception as exc:  # noqa: BLE001 - the model's serialiser: a labelled failure, never a crash
            reason = " ".join(str(exc).split())[:200]
            raise ReturnValueError(f"tool returned a {type(value).__name__} at {path or '/'} that pydantic cannot "
                                   f"write as JSON: {reason}") from None
    return False, None
