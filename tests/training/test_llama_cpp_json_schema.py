"""OpenAI's json_schema response format reaches llama-cpp-python in the form it reads (json_object + schema)."""

from __future__ import annotations

import asyncio
import json

from envsim.evaluation.prompting.answer_schema import answer_schema, response_format
from envsim.evaluation.endpoints.preflight import EndpointCheck, refused_format
import pytest

from envsim.training.llama_cpp_server import ANY_VALUE, JsonSchemaFormat, explicit_any, translated_body


def test_the_json_schema_form_becomes_json_object_with_the_schema():
    body = {"model": "m", "messages": [], "response_format": response_format("json-schema", "mdp-view", "3")}
    out = json.loads(translated_body(json.dumps(body).encode()))
    assert out["response_format"] == {"type": "json_object", "schema": explicit_any(answer_schema("mdp-view", "3"))}
    assert out["messages"] == [] and out["model"] == "m"


def test_empty_schemas_are_spelled_out_where_they_are_schemas_only():
    schema = answer_schema("mdp-view", "3")
    out = explicit_any(schema)
    assert out["properties"]["observation"] == ANY_VALUE
    values = [op["properties"]["value"] for op in out["properties"]["patch"]["items"]["anyOf"]
              if "value" in op["properties"]]
    assert values == [ANY_VALUE]
    assert schema["properties"]["observation"] == {}                     # the caller's schema is not changed
    data = {"type": "object", "properties": {"x": {"enum": [{}], "const": {}, "default": {}}}, "items": {}}
    assert explicit_any(data) == {"type": "object", "properties": {"x": {"enum": [{}], "const": {}, "default": {}}},
                                  "items": ANY_VALUE}


def test_llama_cpp_grammar_of_the_answer_schema_admits_any_patch_value():
    """Against llama-cpp-python's own schema-to-grammar converter: ``{}`` became the rule ``object`` (a patch value
    could only be an object); the spelled-out schema gives every JSON type."""
    grammar = pytest.importorskip("llama_cpp.llama_grammar", reason="needs the [cpu-serve] extra")

    def rules(schema):
        converter = grammar.SchemaConverter(prop_order={}, allow_fetch=False, dotall=False, raw_pattern=False)
        converter.visit(converter.resolve_refs(schema, "answer"), "")
        return dict(line.split(" ::= ", 1) for line in converter.format_grammar().splitlines() if " ::= " in line)

    before, after = rules(answer_schema("mdp-view", "3")), rules(explicit_any(answer_schema("mdp-view", "3")))
    assert before["patch-item-0-value"] == "object"                      # the converter's reading of {}
    assert set(after["patch-item-0-value"].split(" | ")) >= {"array", "string", "number", "boolean", "null"}
    assert set(after["observation"].split(" | ")) >= {"array", "string", "number", "boolean", "null"}


@pytest.mark.parametrize("kind, first", [("json-schema", "op"), ("json-schema-path-first", "path")])
def test_llama_cpp_grammar_writes_an_operations_keys_in_the_schemas_order(kind, first):
    """llama-cpp-python's converter (what the server decodes under) keeps the schema's property order, so a
    path-first simulator served with ``json-schema-path-first`` is asked for ``path`` before ``op``."""
    grammar = pytest.importorskip("llama_cpp.llama_grammar", reason="needs the [cpu-serve] extra")
    schema = explicit_any(response_format(kind, "mdp-view", "3")["json_schema"]["schema"])
    converter = grammar.SchemaConverter(prop_order={}, allow_fetch=False, dotall=False, raw_pattern=False)
    converter.visit(converter.resolve_refs(schema, "answer"), "")
    rules = dict(line.split(" ::= ", 1) for line in converter.format_grammar().splitlines() if " ::= " in line)
    shapes = {name: rule for name, rule in rules.items() if name.startswith("patch-item-") and name.count("-") == 2}
    assert len(shapes) == 3                                              # add/replace/test, remove, move/copy
    for name, rule in shapes.items():
        keys = [part.removeprefix(f"{name}-").removesuffix("-kv") for part in rule.split() if part.endswith("-kv")]
        assert keys[0] == first and "op" in keys, (name, rule)


def test_other_bodies_pass_unchanged():
    for raw in (b"not json", b"[1, 2]", json.dumps({"response_format": {"type": "json_object"}}).encode(),
                json.dumps({"messages": []}).encode()):
        assert translated_body(raw) == raw


def run_middleware(path: str, chunks: list[bytes]) -> tuple[bytes, dict]:
    """What the wrapped app receives for a request whose body arrives in ``chunks``."""
    seen: dict = {}

    async def app(scope, receive, send):
        message = await receive()
        seen["body"], seen["headers"] = message["body"], dict(scope["headers"])

    messages = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1} for i, c in enumerate(chunks)]

    async def receive():
        return messages.pop(0)

    async def send(message):
        pass

    scope = {"type": "http", "method": "POST", "path": path, "headers": [(b"content-length", b"999")]}
    asyncio.run(JsonSchemaFormat(app)(scope, receive, send))
    return seen["body"], seen["headers"]


def test_the_middleware_rewrites_chat_requests_arriving_in_pieces():
    raw = json.dumps({"response_format": response_format("json-schema", "mdp", "2")}).encode()
    body, headers = run_middleware("/v1/chat/completions", [raw[:10], raw[10:]])
    assert json.loads(body)["response_format"]["type"] == "json_object"
    assert headers[b"content-length"] == str(len(body)).encode()
    body, headers = run_middleware("/v1/completions", [raw])
    assert body == raw and headers[b"content-length"] == str(len(raw)).encode()  # the length it really has


def test_a_server_error_naming_response_format_counts_as_a_refusal():
    assert refused_format(EndpointCheck("u", False, "HTTP 500: 'response_format', 'type' ...", status=500))
    assert not refused_format(EndpointCheck("u", False, "HTTP 500: out of memory", status=500))
    assert refused_format(EndpointCheck("u", False, "HTTP 422", status=422))
