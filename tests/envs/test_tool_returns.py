"""Tool return values become JSON by one rule (issue 53, item 4): what pydantic's ``model_dump(mode="json")``
gives for models, dataclasses, Enums and dates; a value with no JSON form is a labelled failure on the state the
call was given, never a state change answered by an error."""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import uuid

import pydantic
import pytest

from envsim.envs.adapters.codec import to_json_value
from envsim.envs.adapters.foreign import wrap_class
from envsim.envs.returns import ReturnValueError
from envsim.envs.sandbox import execute


class Level(enum.Enum):
    LOW = "low"
    HIGH = 2


class Item(pydantic.BaseModel):
    name: str
    level: Level = Level.LOW
    due: dt.date = dt.date(2026, 1, 2)
    price: float = 1.5


@dataclasses.dataclass
class Card:
    item: Item
    seen: dt.datetime
    tags: tuple[str, ...] = ("a",)


@pytest.mark.parametrize("value", [
    Item(name="x"), Level.HIGH, dt.date(2026, 3, 4), dt.datetime(2026, 3, 4, 5, 6, tzinfo=dt.timezone.utc),
    dt.time(7, 8, 9), uuid.UUID(int=5), Card(Item(name="y"), dt.datetime(2026, 1, 1, 12)),
    [Item(name="z"), {"k": Level.LOW}],
])
def test_the_rule_is_what_pydantic_gives(value):
    assert to_json_value(value, strict=False) == pydantic.TypeAdapter(type(value)).dump_python(value, mode="json")


class Counter:
    """A toolkit-like class whose tools return objects."""

    def __init__(self) -> None:
        self.count = 0

    def bump_model(self) -> Item:
        """Count one and return a model."""
        self.count += 1
        return Item(name=str(self.count))

    def bump_object(self) -> object:
        """Count one and return an object with no JSON form."""
        self.count += 1
        return object()

    def bump_delta(self) -> dt.timedelta:
        """Count one and return a timedelta."""
        self.count += 1
        return dt.timedelta(days=1)


def test_a_returned_model_is_its_json_and_the_change_is_kept():
    env = wrap_class(Counter)
    transition = execute(env, env.sample_state(0), {"name": "bump_model", "arguments": {}})
    assert transition.observation == {"name": "1", "level": "low", "due": "2026-01-02", "price": 1.5}
    assert transition.outcome == "change" and transition.next_state == {"count": 1}


@pytest.mark.parametrize("tool", ["bump_object", "bump_delta"])
def test_a_value_with_no_json_form_is_a_labelled_failure_without_a_change(tool):
    env = wrap_class(Counter)
    transition = execute(env, env.sample_state(0), {"name": tool, "arguments": {}})
    assert transition.outcome == "failure" and transition.delta_size == 0
    assert transition.observation["error"].startswith("ReturnValueError: tool returned a non-JSON value at /")
    with pytest.raises(ReturnValueError):
        to_json_value(object(), strict=False)
