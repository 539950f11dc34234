"""Issue 21.1 / 24.5: a benchmark file is data. It may name registered environments and the foreign
namespaces EnvSim ships adapters for; ``module:Class`` only of a module the user trusts on the command line."""

from __future__ import annotations

import json
import sys
import textwrap

import pytest
from click.testing import CliRunner

from envsim.cli import main
from envsim.envs import registry as reg
from envsim.envs.sandbox import trust_module

CANARY = "envsim_canary_mod"
LIBRARY = '''
from envsim.envs import Environment, ToolError, tool
from envsim.envs.sampling import Sampler


class Library(Environment):
    """Lending library: books with copies, members with loans."""

    @classmethod
    def sample_state(cls, seed: int) -> dict:
        s = Sampler(seed)
        return {"books": {b: {"copies": s.int(0, 3)} for b in s.ids("B", 20)}, "loans": []}

    @tool(write=True)
    def borrow(self, book_id: str, member: str) -> dict:
        """Lend one copy of a book.

        Args:
            book_id: Book to lend.
            member: Borrowing member.
        """
        if self.books.get(book_id, {}).get("copies", 0) < 1:
            raise ToolError(f"No copy of {book_id} available")
        self.books[book_id]["copies"] -= 1
        self.loans.append({"book_id": book_id, "member": member})
        return {"success": True}
'''


@pytest.fixture
def canary(tmp_path, monkeypatch):
    """An importable module that leaves a marker file when (and only when) it is imported."""
    marker = tmp_path / "imported.marker"
    (tmp_path / f"{CANARY}.py").write_text(f"open({str(marker)!r}, 'w').write('x')\nclass X:\n    def go(self):\n"
                                           "        return 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop(CANARY, None)
    return marker


def _record(env: str, action: dict, small_records: list[dict]) -> dict:
    return {**small_records[0], "id": f"evil-{env}", "env": env, "action": action}


def _eval(args: list[str]):
    return CliRunner().invoke(main, ["eval", "--no-preflight", *args])


@pytest.mark.parametrize("extra", [[], ["--prompt-mode", "full-class"], ["--track", "rollout", "--episodes", "1"]])
def test_benchmark_records_naming_untrusted_modules_are_refused_before_any_import(tmp_path, canary, small_records,
                                                                                  extra):
    secret, stolen = tmp_path / "secret", tmp_path / "stolen"
    secret.write_text("card 4111")
    secret.chmod(0o600)
    bench = tmp_path / "evil.jsonl"
    rows = [_record("urllib.request:URLopener", {"name": "retrieve", "arguments": {
                "url": secret.as_uri(), "filename": str(stolen)}}, small_records),
            _record("this:X", {"name": "go", "arguments": {}}, small_records),
            _record(f"{CANARY}:X", {"name": "go", "arguments": {}}, small_records)]
    for row in rows:
        bench.write_text(json.dumps(small_records[1]) + "\n" + json.dumps(row) + "\n")
        before = set(sys.modules)
        result = _eval(["--model", "oracle", "--benchmark", str(bench), "--run-dir", str(tmp_path / "run"), *extra])
        assert result.exit_code == 1, result.output
        assert f"evil.jsonl:2: environment {row['env']!r} would import module" in result.output
        assert f"--env-module {row['env'].partition(':')[0]}" in result.output
        assert not stolen.exists() and not canary.exists()
        assert {"this", CANARY} & (set(sys.modules) - before) == set()


def test_get_env_refuses_untrusted_targets_without_importing(canary):
    for target in (f"{CANARY}:X", "this:X"):
        with pytest.raises(reg.UntrustedEnvironment, match="not trusted"):
            reg.get_env(target)
    with pytest.raises(reg.UnknownEnvironment, match="no namespace 'nosuchns'"):
        reg.get_env("nosuchns/Thing")
    assert CANARY not in sys.modules and not canary.exists() and "this" not in sys.modules
    assert reg.get_env("envsim.envs.library.commerce.online_store:OnlineStore") is reg.get_env("online_store-v1")


def test_shipped_namespaces_and_trusted_modules_are_accepted(canary):
    assert reg.refusal("bfcl/GorillaFileSystem") is None and reg.refusal("tau/retail") is None
    assert reg.refusal(f"{CANARY}.sub:X") is not None
    trust_module(CANARY)
    assert reg.refusal(f"{CANARY}:X") is None and reg.refusal(f"{CANARY}.sub:X") is None
    assert reg.refusal(f"{CANARY}x:X") is not None  # a prefix of a name is not its package
    with pytest.raises(ValueError, match="module name"):
        trust_module("../evil")


def test_entry_point_group_trusts_a_plugin_module(canary, monkeypatch):
    from importlib.metadata import EntryPoint

    from envsim.envs.sandbox import trust

    ep = EntryPoint(name="canary", value=CANARY, group=trust.TRUSTED_ENTRY_POINT_GROUP)
    monkeypatch.setattr(trust, "entry_points", lambda group: [ep] if group == trust.TRUSTED_ENTRY_POINT_GROUP else [])
    trust._entry_point_modules.cache_clear()
    assert reg.refusal(f"{CANARY}:X") is None


def test_custom_environment_survives_construct_then_eval(tmp_path, monkeypatch):
    """The documented Library (docs/environments.md): construct --env mylib:Library, then eval --env-module mylib scores it (oracle = 100%)."""
    from envsim.envs.sandbox import forget_trusted

    (tmp_path / "mylib.py").write_text(textwrap.dedent(LIBRARY))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    built = CliRunner().invoke(main, ["construct", "--split", "test", "--env", "mylib:Library", "--pool", "20",
                                      "--episodes", "2", "--steps", "10", "--out", "mine.jsonl"])
    assert built.exit_code == 0, built.output
    envs = {json.loads(line)["env"] for line in (tmp_path / "mine.jsonl").read_text().splitlines()}
    assert envs == {"mylib-v1"}
    forget_trusted()  # a new command: nothing trusted until the user says so
    untrusted = _eval(["--model", "oracle", "--benchmark", "mine.jsonl", "--run-dir", "run-untrusted"])
    assert untrusted.exit_code == 3 and "--env-module" in untrusted.output
    result = _eval(["--model", "oracle", "--benchmark", "mine.jsonl", "--env-module", "mylib", "--run-dir", "run"])
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    written = len((tmp_path / "mine.jsonl").read_text().splitlines())  # the user-class explorer may dedup below --pool
    assert 10 <= written <= 20
    assert summary["overall"]["n"] == written and summary["overall"]["fm"] == 1.0 and summary["overall"]["cm"] == 1.0


def test_env_module_typos_stop_construct_and_simulate_before_work(tmp_path):
    for command in (["construct", "--split", "test", "--pool", "3", "--out", str(tmp_path / "o.jsonl")],
                    ["simulate", "--env", "online_store-v1", "--simulator", "null", "--out", str(tmp_path / "s")]):
        result = CliRunner().invoke(main, [*command, "--env-module", "no_such_module_xyz"])
        assert result.exit_code == 2 and "cannot import 'no_such_module_xyz'" in result.output
        assert not (tmp_path / "o.jsonl").exists() and not (tmp_path / "s").exists()
