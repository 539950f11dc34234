"""Registry-wide checks of every built-in environment (one parametrised test per environment)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from envsim.envs.check import check_environment
from envsim.envs.registry import list_envs

BUILTINS = [e for e in list_envs() if e.builtin]


def _one_per_domain(entries: list) -> set[str]:
    """The first environment of every domain (by id): the fast tier checks these, CI checks all."""
    first: dict[str, str] = {}
    for entry in sorted(entries, key=lambda e: e.id):
        first.setdefault(entry.domain, entry.id)
    return set(first.values())


FAST = _one_per_domain(BUILTINS)
CONFORMANCE_CASES = [pytest.param(e, id=e.id, marks=() if e.id in FAST else pytest.mark.slow) for e in BUILTINS]


def test_library_size_and_domains():
    domains = Counter(e.domain for e in BUILTINS)
    assert len(BUILTINS) >= 150, f"only {len(BUILTINS)} environments"
    assert len(domains) >= 20, f"only {len(domains)} domains: {sorted(domains)}"


@pytest.mark.parametrize("entry", CONFORMANCE_CASES)
def test_environment_conforms(entry):
    """>=6 tools, >=3 writes, a 0-arg tool, a 1-arg read tool, purity, JSON, determinism over 200 seeded calls."""
    report = check_environment(entry.cls, seeds=4, steps=50)
    assert report.transitions == 200
    assert report.ok, "\n".join(report.problems)


def test_every_domain_readme_lists_its_environments():
    import envsim.envs.library as library

    root = Path(library.__path__[0])
    for entry in BUILTINS:
        readme = root / entry.domain / "README.md"
        assert readme.exists(), f"{entry.domain} has no README.md"
        assert f"`{entry.cls.env_name()}`" in readme.read_text(), f"{entry.id} missing from {readme}"


def test_blood_bank_sampled_states_link_units_and_requests():
    """Sampled reserved/issued units belong to an open/fulfilled request of their type; stock counts match."""
    from envsim.envs.registry import get_env

    cls = get_env("blood_bank-v1")
    for seed in range(60):
        state = cls.sample_state(seed)
        units, requests = state["units"], state["requests"]
        for uid, unit in units.items():
            if unit["status"] in ("reserved", "issued"):
                req = requests[unit["request_id"]]
                assert uid in req["units"] and req["status"] == {"reserved": "open", "issued": "fulfilled"}[unit["status"]]
                assert (req["blood_type"], req["component"]) == (unit["blood_type"], unit["component"])
        for rid, req in requests.items():
            assert all(units[u]["request_id"] == rid for u in req["units"])
            if req["status"] == "fulfilled":
                assert len(req["units"]) == req["units_needed"] > 0
        stock = {t: sum(u["status"] == "available" and u["blood_type"] == t for u in units.values())
                 for t in state["available_by_type"]}
        assert stock == state["available_by_type"]
