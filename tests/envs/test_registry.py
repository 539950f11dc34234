"""Registry: discovery, lookups with suggestions, entry-point plugins."""

from __future__ import annotations

from importlib.metadata import EntryPoint

import pytest

from envsim.envs import registry as reg


def test_lookup_by_id_and_module_class():
    cls = reg.get_env("online_store-v1")
    assert cls.env_domain() == "commerce"
    assert reg.get_env("envsim.envs.library.commerce.online_store:OnlineStore") is cls


def test_miss_suggests_close_ids():
    with pytest.raises(reg.UnknownEnvironment, match="did you mean online_store-v1"):
        reg.get_env("online_stor-v1")


def test_entry_point_plugins_are_registered(monkeypatch):
    ep = EntryPoint(name="counter-v1", value="tests.envs.fake_env:Counter", group=reg.ENTRY_POINT_GROUP)
    monkeypatch.setattr(reg, "entry_points", lambda group: [ep] if group == reg.ENTRY_POINT_GROUP else [])
    reg.registry.cache_clear()
    try:
        entry = reg.registry()["counter-v1"]
        assert not entry.builtin and entry.domain == "testing"
        assert reg.get_env("counter-v1").__name__ == "Counter"
    finally:
        reg.registry.cache_clear()


def test_non_environment_targets_are_refused():
    with pytest.raises(TypeError, match="not an Environment subclass"):
        reg.load_class("tests.fixtures.foreign_envs:TicketDesk")


def test_domain_of_agrees_with_the_registry_for_every_builtin():
    entries = reg.registry()
    assert {env_id: reg.domain_of(env_id) for env_id in entries} == {k: e.domain for k, e in entries.items()}
    assert all(reg._builtin_entry(env_id).cls is entry.cls for env_id, entry in entries.items())
    assert reg.domain_of("online_stor-v1") is None and reg.domain_of("tau/retail") is None


def test_domain_of_imports_only_the_module_of_the_id():
    import subprocess
    import sys

    code = ("import sys; from envsim.envs.registry import domain_of; print(domain_of('online_store-v1')); "
            "print(sorted(m for m in sys.modules if m.count('.') == 4 and m.startswith('envsim.envs.library.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0] == "commerce"
    assert out[1] == "['envsim.envs.library.commerce.online_store']"


def test_domain_of_asks_the_whole_registry_when_a_plugin_could_register_the_id(monkeypatch):
    ep = EntryPoint(name="counter-v1", value="tests.envs.fake_env:Counter", group=reg.ENTRY_POINT_GROUP)
    monkeypatch.setattr(reg, "entry_points", lambda group: [ep] if group == reg.ENTRY_POINT_GROUP else [])
    reg.registry.cache_clear()
    monkeypatch.setattr(reg, "_builtin_entry", lambda env_id: pytest.fail("fast path taken with a plugin installed"))
    try:
        assert reg.domain_of("counter-v1") == "testing"
        assert reg.domain_of("online_store-v1") == "commerce"
    finally:
        reg.registry.cache_clear()
