"""Views of a wrapper that looks each tool up by name (issue 53, items 2-3): the analysis follows the toolkit's own
method, and every top-level dict is present in the view (the wrapper hands all of them to the toolkit), so the
views verify as analysed instead of being widened to whole records."""

from __future__ import annotations

from envsim.construction.labelling import to_record
from envsim.construction.rollout import seeded_rollouts
from envsim.envs.registry import get_env
from envsim.envs.sandbox import trust_target
from envsim.envs.views.verify import stored_view

LEDGER = "tests.fixtures.ledger.wrapper:LedgerEnv"


def test_by_name_wrapper_views_verify_without_widening():
    trust_target(LEDGER)
    cls = get_env(LEDGER)
    records = [to_record(t, cls, "test") for t in seeded_rollouts(cls, seed=1, episodes=1, steps=16)]
    narrow = [r for r in records if r["view"]["verified"] and r["view"]["widening"] is None]
    assert len(narrow) >= 0.9 * len(records), [r["view"] for r in records]
    for record in narrow:
        view = stored_view(record).state
        assert set(view) == set(record["state"])  # every top-level collection present, maybe empty
    assert any(len(stored_view(r).state["accounts"]) < len(r["state"]["accounts"]) for r in narrow)
