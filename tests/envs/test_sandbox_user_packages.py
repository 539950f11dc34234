"""The third-party packages a sandbox worker may load (issue 53, item 2): those the user's trusted environment
imports (auto), none, or the user's own list (``ENVSIM_SANDBOX_PACKAGES``); an id nobody trusted adds nothing."""

from __future__ import annotations

import pytest

from envsim.envs.sandbox import allowed_packages, forget_trusted, trust_module


@pytest.fixture
def hotel_trusted():
    trust_module("tests.fixtures.hotel.wrapper")
    from envsim.envs.adapters.foreign import wrap_target

    wrap_target("tests.fixtures.hotel.wrapper:HotelEnv")  # imports the module (and loguru with it)
    yield
    forget_trusted()


def test_the_users_environment_names_its_packages(monkeypatch, hotel_trusted):
    monkeypatch.delenv("ENVSIM_SANDBOX_PACKAGES", raising=False)
    allowed = allowed_packages()
    assert {"loguru", "pydantic", "sqlite3"} <= set(allowed)
    assert not {"toml", "os", "subprocess", "envsim", "tests"} & set(allowed)  # not installed / stdlib / own code


def test_the_user_can_refuse_or_name_them(monkeypatch, hotel_trusted):
    monkeypatch.setenv("ENVSIM_SANDBOX_PACKAGES", "none")
    assert allowed_packages() == ("pydantic", "sqlite3")
    monkeypatch.setenv("ENVSIM_SANDBOX_PACKAGES", "yaml, subprocess, no_such_package_x")
    assert allowed_packages() == ("pydantic", "sqlite3", "yaml")


def test_nothing_trusted_adds_nothing(monkeypatch):
    monkeypatch.delenv("ENVSIM_SANDBOX_PACKAGES", raising=False)
    forget_trusted()
    assert allowed_packages() == ("pydantic", "sqlite3")


def test_eval_takes_the_setting_for_one_command_and_refuses_a_bad_one(monkeypatch, hotel_trusted):
    from click.testing import CliRunner

    from envsim.cli import main
    from envsim.envs.sandbox.packages import using_setting

    monkeypatch.delenv("ENVSIM_SANDBOX_PACKAGES", raising=False)
    with using_setting("none"):
        assert allowed_packages() == ("pydantic", "sqlite3")
    assert "loguru" in allowed_packages()  # the setting held for the block only
    refused = CliRunner().invoke(main, ["eval", "--model", "executor", "--sandbox-packages", "loguru, os.path"])
    assert refused.exit_code == 2 and "not a package name: 'os.path'" in refused.output
