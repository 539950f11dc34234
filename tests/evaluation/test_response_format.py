"""``--response-format json-schema``: the answer's schema fits every shipped answer, the field reaches the endpoint
(preflight included), a refusing endpoint stops the run before any sample, and the setting is part of the run.
``json-schema-path-first`` admits the same answers and asks for each operation's keys in path-first targets' order."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import envsim
from envsim.benchmark import file_digest
from envsim.cli import main
from envsim.evaluation.prompting.answer_schema import answer_schema, response_format
from envsim.evaluation.baselines.fake_server import FakeOpenAIServer
from envsim.evaluation.prompting.prompts import PROMPT_MODES, PROMPT_VERSIONS, target_answer
from envsim.evaluation.running.runner import EvalConfig
from envsim.training.patch_form import order_keys

BENCHMARK_DIR = Path(__file__).resolve().parents[2] / "benchmark"
SHIPPED = ("v1/test.jsonl", "v2/test.jsonl", "v2/extreme.jsonl", "v2/bfcl.jsonl")
JSON_TYPES = {"object": dict, "array": list, "string": str}


def _problems(value: Any, schema: dict[str, Any], where: str = "") -> list[str]:
    """Where ``value`` breaks ``schema`` (the keywords ``answer_schema`` uses: anyOf, type, enum, properties,
    required, additionalProperties, items; ``{}`` accepts any value)."""
    if "anyOf" in schema:
        branches = [_problems(value, branch, where) for branch in schema["anyOf"]]
        return [] if any(not b for b in branches) else [f"{where}: matches no anyOf branch ({branches[0][0]})"]
    expected = JSON_TYPES.get(schema.get("type", ""))
    if expected is not None and not isinstance(value, expected):
        return [f"{where or '/'}: not an {schema['type']}"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{where}: {value!r} not in the enum"]
    found: list[str] = []
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        found += [f"{where}/{key}: missing" for key in schema.get("required", []) if key not in value]
        if schema.get("additionalProperties") is False:
            found += [f"{where}/{key}: not allowed" for key in value if key not in properties]
        for key, sub in properties.items():
            if key in value:
                found += _problems(value[key], sub, f"{where}/{key}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            found += _problems(item, schema["items"], f"{where}/{i}")
    return found


def _shipped_records(name: str) -> list[dict[str, Any]]:
    with (BENCHMARK_DIR / name).open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


@pytest.mark.parametrize("name", SHIPPED)
def test_the_schema_accepts_every_shipped_target_answer(name):
    records = _shipped_records(name)
    assert records
    schemas = {(mode, version): answer_schema(mode, version) for mode in PROMPT_MODES for version in PROMPT_VERSIONS}
    for record in records:
        for (mode, version), schema in schemas.items():
            answer = json.loads(target_answer(record, version))
            assert _problems(answer, schema) == [], (record["id"], mode, version)


def _branch_order(op: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    """The property order of the one ``anyOf`` branch of a patch-operation schema that ``op`` matches."""
    (branch,) = [b for b in schema["anyOf"] if not _problems(op, b)]
    return list(branch["properties"])


@pytest.mark.parametrize("kind, order", [("json-schema", "op-first"), ("json-schema-path-first", "path-first")])
def test_each_schema_asks_for_the_key_order_of_its_targets(kind, order):
    """A grammar decoder writes properties in the schema's order: it must be the order the SFT targets are written
    in (construction writes op first; ``path-first`` targets their pointers first), and admit the same answers."""
    schema = response_format(kind, "mdp-view", "3")["json_schema"]["schema"]
    operation = schema["properties"]["patch"]["items"]
    seen = set()
    for record in _shipped_records("v1/test.jsonl"):
        patch = order_keys(record["patch"], order)
        answer = {"observation": record["observation"], "patch": patch}
        assert _problems(answer, schema) == [], record["id"]
        for op in patch:
            assert list(op) == _branch_order(op, operation), (record["id"], op)
            seen.add(op["op"])
    assert seen >= {"add", "replace", "remove"}
    first = {tuple(_branch_order(op, operation))[0] for op in ({"op": "add", "path": "/a", "value": 1},
                                                             {"op": "remove", "path": "/a"},
                                                             {"op": "move", "from": "/a", "path": "/b"})}
    assert first == ({"op"} if order == "op-first" else {"path"})


@pytest.mark.parametrize("answer, problem", [
    ({"observation": {}}, "/patch: missing"),
    ({"observation": 1, "patch": [], "next_state": {}}, "/next_state: not allowed"),
    ({"observation": 1, "patch": [{"op": "delete", "path": "/a"}]}, "/patch/0: matches no anyOf branch"),
    ({"observation": 1, "patch": [{"op": "remove"}]}, "/patch/0: matches no anyOf branch"),
    ({"observation": 1, "patch": [{"op": "add", "path": "/a"}]}, "/patch/0: matches no anyOf branch"),
    ({"observation": 1, "patch": [{"op": "move", "path": "/a"}]}, "/patch/0: matches no anyOf branch"),
    ({"observation": 1, "patch": [{"op": "remove", "path": "/a", "value": 1}]}, "/patch/0: matches no anyOf branch"),
    ({"observation": 1, "patch": {"op": "remove", "path": "/a"}}, "/patch: not an array"),
])
def test_the_schema_refuses_other_answers(answer, problem):
    assert any(found.startswith(problem) for found in _problems(answer, answer_schema("mdp", "2")))


def test_response_format_fields():
    assert response_format("free", "mdp", "1") is None
    field = response_format("json-schema", "mdp-view", "3")
    assert field == {"type": "json_schema", "json_schema": {"name": "simulator_answer", "strict": False,
                                                            "schema": answer_schema("mdp-view", "3")}}
    path_first = response_format("json-schema-path-first", "mdp-view", "3")
    assert path_first["json_schema"]["schema"] == answer_schema("mdp-view", "3", "path-first") != field["json_schema"][
        "schema"]
    with pytest.raises(ValueError, match="unknown response format"):
        response_format("json", "mdp", "1")
    with pytest.raises(ValueError, match="unknown key order"):
        answer_schema("mdp", "1", "value-first")
    with pytest.raises(ValueError, match="unknown prompt mode"):
        answer_schema("chat", "1")


def _eval(*args: str) -> Any:
    return CliRunner().invoke(main, ["eval", "--no-progress", *args], catch_exceptions=False)


def test_json_schema_requests_carry_the_field_and_score_as_free_ones(tmp_path, small_benchmark, small_records):
    with FakeOpenAIServer(small_records) as server:
        result = _eval("--model", "oracle", "--base-url", server.base_url, "--benchmark", str(small_benchmark),
                       "--limit", "4", "--response-format", "json-schema", "--run-dir", str(tmp_path / "run"))
    assert result.exit_code == 0, result.output
    assert len(server.response_formats) == 5          # the preflight's probe, then every sample
    assert all(field == response_format("json-schema", "mdp", "1") for field in server.response_formats)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["response_format"] == "json-schema" and summary["overall"]["cm"] == 1.0
    assert json.loads((tmp_path / "run" / "config.json").read_text())["response_format"] == "json-schema"


def test_free_is_the_default_and_sends_no_response_format(tmp_path, small_benchmark, small_records):
    with FakeOpenAIServer(small_records) as server:
        summary = envsim.evaluate("oracle", base_url=server.base_url, benchmark=str(small_benchmark), limit=2,
                                  run_dir=tmp_path / "run")
    assert server.response_formats == [None, None, None]
    assert summary.scored == 2 and json.loads((tmp_path / "run" / "summary.json").read_text())["response_format"] \
        == "free"


def test_a_refusing_endpoint_fails_the_preflight_naming_the_option(tmp_path, small_benchmark, small_records):
    with FakeOpenAIServer(small_records) as server:
        result = _eval("--model", "no-schema", "--base-url", server.base_url, "--benchmark", str(small_benchmark),
                       "--limit", "2", "--response-format", "json-schema", "--run-dir", str(tmp_path / "run"))
    assert result.exit_code == 1
    assert "--response-format json-schema" in result.output and "HTTP 400" in result.output
    assert "--response-format free" in result.output
    assert len(server.response_formats) == 1 and not (tmp_path / "run").exists()  # the probe only


def test_extra_and_response_format_cannot_both_set_the_field(tmp_path):
    result = _eval("--model", "null", "--limit", "1", "--extra", '{"response_format": {"type": "json_object"}}',
                   "--response-format", "json-schema", "--run-dir", str(tmp_path / "run"))
    assert result.exit_code == 2 and "--extra already sets response_format" in result.output


def test_a_free_run_is_not_resumed_with_json_schema(tmp_path):
    base = ["--model", "null", "--limit", "2", "--run-dir", str(tmp_path / "run")]
    assert _eval(*base).exit_code == 0
    changed = _eval(*base, "--response-format", "json-schema")
    assert changed.exit_code == 1 and "other settings (response_format)" in changed.output
    assert _eval(*base, "--response-format", "json-schema", "--overwrite").exit_code == 0


def test_json_schema_runs_get_their_own_default_run_dir(tmp_path):
    for kind in ("free", "json-schema", "json-schema-path-first"):
        assert _eval("--model", "null", "--limit", "2", "--runs-root", str(tmp_path), "--response-format", kind
                     ).exit_code == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null-v1-test-mdp-json-schema-n2",
                                                          "null-v1-test-mdp-json-schema-path-first-n2",
                                                          "null-v1-test-mdp-n2"]


def test_path_first_requests_carry_the_path_first_schema_and_the_report_says_so(tmp_path, small_benchmark,
                                                                                small_records):
    with FakeOpenAIServer(small_records) as server:
        result = _eval("--model", "oracle", "--base-url", server.base_url, "--benchmark", str(small_benchmark),
                       "--limit", "2", "--response-format", "json-schema-path-first", "--run-dir",
                       str(tmp_path / "run"))
    assert result.exit_code == 0, result.output
    assert server.response_formats == [response_format("json-schema-path-first", "mdp", "1")] * 3
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["response_format"] == "json-schema-path-first" and summary["overall"]["cm"] == 1.0
    assert "answers under the JSON Schema (operations' path before op)" in (tmp_path / "run" / "report.md").read_text()


def test_a_run_dir_written_before_the_setting_resumes_as_free(tmp_path):
    run_dir = tmp_path / "old"
    run_dir.mkdir()
    old = EvalConfig(model="null", benchmark_sha256=file_digest("v1", "test"), prompt_version="1", limit=2)
    payload = {k: v for k, v in asdict(old).items() if k != "response_format"}  # written before the setting
    (run_dir / "config.json").write_text(json.dumps({**payload, "config_hash": old.digest()}))
    assert _eval("--model", "null", "--limit", "2", "--run-dir", str(run_dir)).exit_code == 0
    refused = _eval("--model", "null", "--limit", "2", "--run-dir", str(run_dir), "--response-format", "json-schema")
    assert refused.exit_code == 1 and "other settings (response_format)" in refused.output


def test_simulate_sends_the_field_and_stops_at_a_refusing_endpoint(tmp_path):
    runner = CliRunner()
    common = ["simulate", "--env", "online_store-v1", "--episodes", "1", "--steps", "2", "--no-progress",
              "--response-format", "json-schema"]
    with FakeOpenAIServer([]) as server:
        good = runner.invoke(main, [*common, "--simulator", "oracle-remote", "--base-url", server.base_url,
                                    "--out", str(tmp_path / "ok")])
        assert good.exit_code == 0, good.output
        assert server.response_formats and all(field == response_format("json-schema", "mdp", "2")
                                               for field in server.response_formats)
        bad = runner.invoke(main, [*common, "--simulator", "no-schema", "--base-url", server.base_url,
                                   "--out", str(tmp_path / "bad")])
    assert bad.exit_code == 1 and "--response-format json-schema" in bad.output and not (tmp_path / "bad").exists()
