"""Views for any code style, verified on every record (issue 31, items 2 and 7): object-model access is analysed,
every view of a user environment is run alone at construction, widened when it fails (counted, noted, stored on
the record) and rendered by ``eval`` exactly as verified."""

from __future__ import annotations

import functools
import importlib.util
import inspect
import json
import os
import textwrap
from typing import Any, Callable

import pytest
from pydantic import BaseModel

from envsim.construction.labelling import to_record
from envsim.construction.pipeline import build_pool
from envsim.construction.stats import record_stats, view_line
from envsim.envs.adapters.foreign import wrap_class
from envsim.envs.sandbox import execute
from envsim.envs.views.verify import check_view, reproduction_problem, runnable_state, stored_view, view_with
from envsim.evaluation.prompting.prompts import build_messages

SMALL_SHOP = "tests.fixtures.shopdb.small:SmallShopEnv"


class Notebook:
    """Notes keyed by a counter computed from how many there are: a read the analysis cannot answer alone."""

    def __init__(self) -> None:
        self.notes = {f"n{i}": f"note {i}" for i in range(1, 6)}
        self.tags = {"t1": "red"}

    def add_note(self, text: str) -> dict:
        """Add a note.

        Args:
            text: The note.
        """
        note_id = f"n{len(self.notes) + 1}"
        self.notes[note_id] = text
        return {"id": note_id}


class Note(BaseModel):
    text: str


class NoteDB(BaseModel):
    notes: dict[str, Note]
    tags: dict[str, str]


class NoteKit:
    """A toolkit over the object model: new ids come from how many notes there are."""

    def __init__(self, db: NoteDB) -> None:
        self.db = db

    def add_note(self, text: str) -> dict:
        """Add a note.

        Args:
            text: The note.
        """
        note_id = f"n{len(self.db.notes) + 1}"
        self.db.notes[note_id] = Note(text=text)
        return {"id": note_id}

    def add_digest(self, text: str) -> dict:
        """Add a note followed by every note's text.

        Args:
            text: The note.
        """
        note_id = f"n{len(self.db.notes) + 1}"
        self.db.notes[note_id] = Note(text=text + ": " + "; ".join(n.text for n in self.db.notes.values()))
        return {"id": note_id, "text": self.db.notes[note_id].text}


class ModelNotebook:
    """Notes as the dump of ``NoteDB`` (twenty of them, keyed n1..n20)."""

    def __init__(self) -> None:
        self.notes = {f"n{i}": {"text": f"note {i}"} for i in range(1, 21)}
        self.tags = {"t1": "red"}


def _note_tool(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def call(self: ModelNotebook, **kwargs: Any) -> Any:
        kit = NoteKit(NoteDB(notes=self.notes, tags=self.tags))
        try:
            return method(kit, **kwargs)
        finally:
            dump = kit.db.model_dump(mode="json")
            self.notes, self.tags = dump["notes"], dump["tags"]
    return call


ModelNotebook.add_note = _note_tool(NoteKit.add_note)  # type: ignore[attr-defined]
ModelNotebook.add_digest = _note_tool(NoteKit.add_digest)  # type: ignore[attr-defined]


def test_an_object_model_view_counts_a_collection_without_showing_its_records() -> None:
    cls = wrap_class(ModelNotebook)
    state = cls.sample_state(0)
    record = to_record(execute(cls, state, {"name": "add_note", "arguments": {"text": "hi"}}), cls, "test")
    assert record["observation"] == {"id": "n21"}
    assert record["view"] == {"widening": None, "verified": True}  # no widening: len() reads only the size
    view = stored_view(record)
    assert view.state["notes"] == {} and view.sizes == {("notes",): 20}
    assert "/notes: 20 of 20 records not shown" in view.render()
    assert reproduction_problem(cls, record, view.state) is not None  # alone it would count none and answer n1
    standing_in = runnable_state(view, record["state"])["notes"]  # run with stand-ins: as many, none of them real
    assert len(standing_in) == 20 and not set(standing_in) & set(state["notes"])
    assert reproduction_problem(cls, record, runnable_state(view, record["state"])) is None


def test_stand_ins_do_not_hide_a_read_of_the_records_they_stand_for() -> None:
    cls = wrap_class(ModelNotebook)
    record = to_record(execute(cls, cls.sample_state(0), {"name": "add_digest", "arguments": {"text": "hi"}}),
                       cls, "test")
    assert record["view"] == {"widening": None, "verified": True}  # the analysis sees the scan of every note
    assert len(stored_view(record).state["notes"]) == 20
    # code that claims to count the notes only (a read the analysis missed): the narrow view runs with stand-ins,
    # which give another digest, so verification widens it rather than pass a view that lacks the notes
    counting = inspect.getsource(NoteKit.add_note).replace("add_note", "add_digest")
    lying = dict(record, code=textwrap.dedent(counting))
    assert view_with(lying, None).state["notes"] == {}
    check = check_view(cls, lying)
    assert check.widening is not None and check.verified and "observation differs" in check.problem


@pytest.fixture(scope="module")
def shop_records() -> list[dict[str, Any]]:
    from envsim.envs.sandbox import trust_module

    trust_module("tests.fixtures.shopdb")
    return build_pool([SMALL_SHOP], seed=0, episodes=2, steps=15, split="test")


def test_every_object_model_view_is_verified_and_runs_alone(shop_records) -> None:
    from envsim.envs.registry import get_env
    from envsim.envs.sandbox import trust_module

    trust_module("tests.fixtures.shopdb")
    cls = get_env(SMALL_SHOP)
    assert len(shop_records) >= 20 and {r["outcome"] for r in shop_records} >= {"failure", "no_change"}
    for record in shop_records:
        assert record["view"]["verified"], record["id"]
        view = stored_view(record)
        assert reproduction_problem(cls, record, runnable_state(view, record["state"])) is None, record["id"]
        assert set(view.state) == set(record["state"])  # the model is rebuilt from every top-level collection
        assert '/ has no key "db"' not in view.render()
        for collection, records in view.state.items():  # records shown are shown whole
            assert all(records[k] == record["state"][collection][k] for k in records)
        for path, key in view.absent:  # no view claims that something present is missing
            container = record["state"]
            for part in path:
                container = container[part]
            assert key not in container


def test_object_model_views_are_small_next_to_the_state(shop_records) -> None:
    reads = [r for r in shop_records if r["tool"] in ("get_order_details", "get_user_details", "cancel_pending_order")]
    assert reads
    for record in reads:
        assert len(stored_view(record).render()) < len(json.dumps(record["state"])) / 4


def test_a_view_missing_a_read_is_widened_counted_noted_and_rendered_as_verified() -> None:
    cls = wrap_class(Notebook)
    state = cls.sample_state(0)
    record = to_record(execute(cls, state, {"name": "add_note", "arguments": {"text": "hi"}}), cls, "test")
    assert record["observation"] == {"id": "n6"}
    # the analysed view holds no note (the call reads only how many there are): run alone it would answer n1
    assert reproduction_problem(cls, record, view_with(record, None).state) is not None
    assert record["view"] == {"widening": "collections", "verified": True}
    prompt = build_messages(record, "mdp-view", version="3")[1]["content"]
    assert "verification widened this view to whole top-level collections" in prompt
    shown = json.loads(prompt.split("paths are full-state paths):\n", 1)[1].split("\n", 1)[0])
    assert shown["notes"] == state["notes"] and shown.get("tags") in (None, {})  # only the touched collection whole
    stats = record_stats([record])
    assert stats["views"]["by_tool"] == {"add_note": {"checked": 1, "collections": 1}}
    assert "1 of 1 verified" in view_line(stats["views"]) and "add_note collections 1" in view_line(stats["views"])


def test_builtin_records_keep_their_field_set() -> None:
    from envsim.envs.registry import get_env

    cls = get_env("online_store-v1")
    state = cls.sample_state(0)
    tool = next(iter(cls.tool_specs()))
    record = to_record(execute(cls, state, {"name": tool, "arguments": {}}), cls, "test")
    assert "view" not in record


@pytest.mark.skipif(importlib.util.find_spec("tau_bench") is None and not os.environ.get("ENVSIM_TAU_BENCH"),
                    reason="τ-bench not available")
def test_the_two_shipped_tau_views_that_missed_products_run_alone() -> None:
    from envsim.benchmark import load
    from envsim.delta import canonical_json
    from envsim.envs.views.oracle import view_oracle_answer

    wanted = {"b06c5026088d68b66475", "995a7772dd7ac2dda837"}
    records = [r for r in load("v2", "tau") if r["id"] in wanted]
    assert {r["id"] for r in records} == wanted
    for record in records:
        answer = view_oracle_answer(record)  # the τ tool run on the view alone
        assert canonical_json(answer["observation"]) == canonical_json(record["observation"]), record["id"]
        assert answer["patch"] == record["patch"] == []
        assert "products" in stored_view(record).state


def _pool_figures(target: str, episodes: int, steps: int) -> tuple[list[dict[str, Any]], list[int]]:
    from envsim.envs.sandbox import trust_target
    from envsim.tokens import chat_tokens, get_tokenizer

    trust_target(target)
    records = build_pool([target], seed=0, episodes=episodes, steps=steps, split="test")
    counter = get_tokenizer()
    tokens = sorted(chat_tokens(build_messages(r, "mdp-view", version="3"), counter) for r in records)
    return records, tokens


@pytest.mark.slow
@pytest.mark.parametrize("target", ["tests.fixtures.shopdb.wrapper:ShopEnv", "tests.fixtures.tau_generic:TauRetail"])
def test_full_size_user_environments_true_code_verified_views_small_prompts(target: str) -> None:
    """The full-size shop (1.2 MB dump) and τ-bench retail through the generic path: every record's code holds
    ``def <tool>``, every view is verified (widened ones counted), p95 of mdp-view prompts ≤ 6,000 Qwen tokens."""
    if "tau_generic" in target and importlib.util.find_spec("tau_bench") is None \
            and not os.environ.get("ENVSIM_TAU_BENCH"):
        pytest.skip("τ-bench not available")
    records, tokens = _pool_figures(target, episodes=2, steps=15)
    assert len(records) >= 20
    assert all(f"def {r['tool']}(" in r["code"] for r in records)
    assert all(r["view"]["verified"] for r in records)
    stats = record_stats(records)["views"]
    assert stats["checked"] == stats["verified"] == len(records)
    assert tokens[int(0.95 * (len(tokens) - 1))] <= 6000, tokens[-5:]
