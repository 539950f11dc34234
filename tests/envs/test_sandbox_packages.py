"""The sandbox loads an optional package a class imports only when the request asks for it (pydantic, for the
object models of shown code), before the worker confines itself; the class's module is registered under its
name, so pydantic resolves the models' annotations."""

from __future__ import annotations

import pytest

from envsim.envs.sandbox import SandboxError, run_request

SOURCE = '''from __future__ import annotations
from enum import Enum
from typing import Optional
from pydantic import BaseModel, Field


class Status(str, Enum):
    NEW = "new"
    DONE = "done"


class Item(BaseModel):
    name: str
    status: Status = Status.NEW
    tags: list[str] = Field(default_factory=list)
    parent: Optional[Item] = None


class Box:
    def add(self, name: str) -> dict:
        """Add an item."""
        items = {k: Item.model_validate(v) for k, v in self.items.items()}
        items[name] = Item(name=name)
        self.items = {k: v.model_dump(mode="json") for k, v in items.items()}
        return self.items[name]
'''
REQUEST = {"source": SOURCE, "class_name": "Box", "load": "attrs", "tools": ["add"], "state": {"items": {}},
           "action": {"name": "add", "arguments": {"name": "a"}}}


def test_pydantic_is_available_when_asked_for():
    answer = run_request({**REQUEST, "packages": ["pydantic"]})
    assert answer["observation"] == {"name": "a", "status": "new", "tags": [], "parent": None}
    assert answer["next_state"] == {"items": {"a": answer["observation"]}}


def test_pydantic_is_refused_when_not_asked_for():
    with pytest.raises(SandboxError, match="module 'pydantic' is not available in the sandbox"):
        run_request(REQUEST)
